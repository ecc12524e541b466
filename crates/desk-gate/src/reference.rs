//! The local reference classifier, for tests and trials (`docs/screenshot-gate.md`,
//! "Classifier"): a deterministic scorer behind the classifier protocol of
//! [`crate::HttpClassifier`]. Its model is a scoring table, phrases with a score each; a text
//! scores the highest score of the phrases it contains (case-insensitive), 0 without any. Its
//! model digest is the SHA-256 of the table's canonical JSON ([`ReferenceClassifier::model_sha256`]),
//! so a policy pins exactly one table. [`ReferenceClassifier::serve`] answers HTTP/1.1 POSTs on
//! a listener, one thread per connection; the `desk-classifier-ref` program runs it.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::classifier::{ClassifierRequest, ClassifierResponse, REQUEST_SCHEMA, RESPONSE_SCHEMA};

/// Largest request the reference classifier reads.
const MAX_REQUEST_BYTES: usize = 1 << 20;

/// One row of the scoring table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoredPhrase {
    /// The phrase, matched case-insensitively anywhere in the text.
    pub phrase: String,
    /// Its score in thousandths.
    pub score_permille: u32,
}

/// The reference classifier: a scoring table.
#[derive(Debug, Clone)]
pub struct ReferenceClassifier {
    table: Vec<ScoredPhrase>,
    model_sha256: String,
}

impl ReferenceClassifier {
    /// The classifier of `table`; `None` when a score is above 1000 or a phrase is empty.
    pub fn new(table: Vec<ScoredPhrase>) -> Option<ReferenceClassifier> {
        if table
            .iter()
            .any(|row| row.score_permille > 1000 || row.phrase.trim().is_empty())
        {
            return None;
        }
        let canonical = serde_json::to_vec(&table).ok()?;
        let model_sha256 = hex::encode(Sha256::digest(&canonical));
        Some(ReferenceClassifier {
            table,
            model_sha256,
        })
    }

    /// The built-in table the tests use: a review-band phrase and a withhold-band one.
    pub fn builtin() -> ReferenceClassifier {
        let table = vec![
            ScoredPhrase {
                phrase: "wire the funds".to_string(),
                score_permille: 400,
            },
            ScoredPhrase {
                phrase: "exfiltrate".to_string(),
                score_permille: 900,
            },
        ];
        ReferenceClassifier {
            model_sha256: hex::encode(Sha256::digest(
                serde_json::to_vec(&table).unwrap_or_default(),
            )),
            table,
        }
    }

    /// SHA-256 (hex) of the table's JSON: the digest a policy pins.
    pub fn model_sha256(&self) -> &str {
        &self.model_sha256
    }

    /// The score of `text`.
    pub fn score(&self, text: &str) -> u32 {
        let text = text.to_lowercase();
        self.table
            .iter()
            .filter(|row| text.contains(&row.phrase.to_lowercase()))
            .map(|row| row.score_permille)
            .max()
            .unwrap_or(0)
    }

    /// Answers classifier requests on `listener` until it fails; one thread per connection.
    pub fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        let classifier = Arc::new(self);
        loop {
            let (stream, _) = listener.accept()?;
            let classifier = Arc::clone(&classifier);
            std::thread::spawn(move || {
                let _ = classifier.answer(stream);
            });
        }
    }

    fn answer(&self, mut stream: TcpStream) -> std::io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut request = Vec::new();
        let mut chunk = [0u8; 8192];
        let body = loop {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            request.extend_from_slice(&chunk[..n]);
            if request.len() > MAX_REQUEST_BYTES {
                return respond(&mut stream, "413 Payload Too Large", b"{}");
            }
            if let Some(end) = request.windows(4).position(|window| window == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|value| value.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break request[end + 4..end + 4 + length].to_vec();
                }
            }
        };
        let Ok(asked) = serde_json::from_slice::<ClassifierRequest>(&body) else {
            return respond(&mut stream, "400 Bad Request", b"{}");
        };
        if asked.schema_version != REQUEST_SCHEMA {
            return respond(&mut stream, "400 Bad Request", b"{}");
        }
        let answer = ClassifierResponse {
            schema_version: RESPONSE_SCHEMA.to_string(),
            model_sha256: self.model_sha256.clone(),
            score_permille: self.score(&asked.text),
        };
        let body = serde_json::to_vec(&answer).unwrap_or_default();
        respond(&mut stream, "200 OK", &body)
    }
}

fn respond(stream: &mut TcpStream, status: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)
}
