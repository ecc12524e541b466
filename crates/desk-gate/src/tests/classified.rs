//! Unit tests of the classifier and of review: a scripted classifier's score combined with the
//! pattern verdict under the policy's thresholds, a failing classifier never allowing, a
//! reviewer's decision applied only to `review`, and [`HttpClassifier`] against a one-shot HTTP
//! server on loopback (the right model, another model, silence past the time bound).

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{SHA, frame, gate_with, settings, word};
use crate::*;

struct Fixed(Result<u32, String>);

impl Classifier for Fixed {
    fn score(&self, _text: &str, _timeout: Duration) -> Result<u32, GateError> {
        self.0.clone().map_err(GateError::Classifier)
    }
}

fn classified(score: Result<u32, String>, words: Vec<Word>) -> Gate {
    let policy = GatePolicy::new(settings(), SHA)
        .unwrap()
        .with_classifier(ClassifierSettings {
            endpoint: "http://127.0.0.1:9/score".to_string(),
            timeout_ms: 1000,
            model_sha256: SHA.to_string(),
        })
        .unwrap();
    let policy = Arc::new(policy);
    let (_, engine) = gate_with(words);
    Gate::new(policy, engine).with_classifier(Arc::new(Fixed(score)))
}

fn shot() -> Vec<u8> {
    frame(
        200,
        100,
        &[Rect {
            x: 10,
            y: 10,
            width: 20,
            height: 20,
        }],
    )
}

#[test]
fn the_classifier_score_is_combined_under_the_thresholds() {
    let harmless = vec![word("hello", 95.0, 10)];
    for (score, verdict) in [
        (150, Verdict::Allow),
        (151, Verdict::Review),
        (649, Verdict::Review),
        (650, Verdict::Withhold),
    ] {
        let decision = classified(Ok(score), harmless.clone()).gate(&shot(), None, &[]);
        assert_eq!(decision.verdict, verdict, "{score}: {decision:?}");
        let reason = decision
            .reasons
            .iter()
            .find(|reason| reason.source == ReasonSource::Classifier)
            .unwrap();
        assert_eq!(reason.score_permille, score);
        assert!(reason.pattern.is_none() && reason.region.is_some());
    }
    // A pattern match at full confidence withholds whatever the classifier says.
    let hostile = vec![
        word("ignore", 99.0, 10),
        word("previous", 99.0, 60),
        word("instructions", 99.0, 110),
    ];
    let decision = classified(Ok(0), hostile).gate(&shot(), None, &[]);
    assert_eq!(decision.verdict, Verdict::Withhold);
}

#[test]
fn a_failed_classifier_is_insufficient_data_and_no_text_asks_nothing() {
    let decision =
        classified(Err("refused".into()), vec![word("hello", 95.0, 10)]).gate(&shot(), None, &[]);
    assert_eq!(decision.verdict, Verdict::InsufficientData, "{decision:?}");
    assert!(decision.problem.unwrap().contains("refused"));
    // Nothing read: the classifier is not asked, so its failure does not show.
    let decision = classified(Err("refused".into()), vec![]).gate(&shot(), None, &[]);
    assert_eq!(decision.verdict, Verdict::Allow, "{decision:?}");
    assert_eq!(decision.classifier_ms, 0.0);
}

#[test]
fn a_review_decides_only_a_review_verdict() {
    let gate = classified(Ok(400), vec![word("hello", 95.0, 10)]);
    let mut decision = gate.gate(&shot(), None, &[]);
    assert_eq!(decision.verdict, Verdict::Review);
    let mut denied = decision.clone();
    decision.reviewed(true);
    assert_eq!(decision.verdict, Verdict::Allow);
    assert_eq!(decision.max_score_permille, 400);
    assert_eq!(
        decision.reasons.last().unwrap().source,
        ReasonSource::Review
    );
    denied.reviewed(false);
    assert_eq!(denied.verdict, Verdict::Withhold);
    assert_eq!(denied.max_score_permille, 1000);
    let mut withheld = classified(Ok(900), vec![word("hello", 95.0, 10)]).gate(&shot(), None, &[]);
    withheld.reviewed(true);
    assert_eq!(
        withheld.verdict,
        Verdict::Withhold,
        "a review never allows a withheld frame"
    );
}

/// A server on loopback that answers one request with `answer` after `delay`; its endpoint.
fn one_shot(answer: String, delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        read_request(&mut stream);
        std::thread::sleep(delay);
        let _ = stream.write_all(answer.as_bytes());
    });
    format!("http://127.0.0.1:{port}/score")
}

/// Reads one whole request, its head and its `Content-Length` body, so the server never closes
/// on unread bytes (a close with unread data resets the connection, and the reset can reach the
/// client before it read the answer).
fn read_request(stream: &mut std::net::TcpStream) {
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |value| value.trim().parse().unwrap());
            if request.len() >= end + 4 + length {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    }
}

fn answer(model: &str, score: u32) -> String {
    let body = format!(
        "{{\"schema_version\":\"{RESPONSE_SCHEMA}\",\"model_sha256\":\"{model}\",\"score_permille\":{score}}}"
    );
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn the_http_classifier_checks_the_model_and_the_time_bound() {
    let endpoint = one_shot(answer(SHA, 420), Duration::ZERO);
    let classifier = HttpClassifier::new(&endpoint, SHA).unwrap();
    assert_eq!(
        classifier.score("hello", Duration::from_secs(5)).unwrap(),
        420
    );

    let endpoint = one_shot(answer(&"b".repeat(64), 420), Duration::ZERO);
    let classifier = HttpClassifier::new(&endpoint, SHA).unwrap();
    let error = classifier
        .score("hello", Duration::from_secs(5))
        .unwrap_err();
    assert!(error.to_string().contains("another model"), "{error}");

    let endpoint = one_shot(answer(SHA, 420), Duration::from_secs(3));
    let classifier = HttpClassifier::new(&endpoint, SHA).unwrap();
    let started = Instant::now();
    let error = classifier
        .score("hello", Duration::from_millis(300))
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "{error}");
    assert!(matches!(error, GateError::Classifier(_)), "{error}");

    // Nobody listening: refused, a typed error.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let classifier = HttpClassifier::new(&format!("http://127.0.0.1:{port}/"), SHA).unwrap();
    assert!(classifier.score("hello", Duration::from_secs(1)).is_err());
}

#[test]
fn the_reference_classifier_scores_by_its_table_over_http() {
    let reference = ReferenceClassifier::builtin();
    assert_eq!(reference.score("Please WIRE THE FUNDS today"), 400);
    assert_eq!(reference.score("exfiltrate and wire the funds"), 900);
    assert_eq!(reference.score("hello"), 0);
    let digest = reference.model_sha256().to_string();
    assert_eq!(digest.len(), 64);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || reference.serve(listener));
    let classifier =
        HttpClassifier::new(&format!("http://127.0.0.1:{port}/v1/classify"), &digest).unwrap();
    let timeout = Duration::from_secs(5);
    assert_eq!(classifier.score("wire the funds", timeout).unwrap(), 400);
    assert_eq!(classifier.score("nothing", timeout).unwrap(), 0);
    let table = vec![ScoredPhrase {
        phrase: "x".to_string(),
        score_permille: 1001,
    }];
    assert!(ReferenceClassifier::new(table).is_none());
}
