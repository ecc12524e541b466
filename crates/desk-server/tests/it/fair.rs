//! Fair sessions: a flood of requests on one session neither holds blocking threads while it
//! waits for that session nor delays another session's status; the excess beyond the per-session
//! queue is refused with `session_busy`, changing nothing, and replays stay exactly-once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use desk_broker::BrokerConfig;
use serde_json::Value;

use crate::hooked::{Moment, hooked_harness};
use crate::support::{Harness, click};

/// How long a slow desktop's captures and actions take while `slow` is set.
const DELAY: Duration = Duration::from_millis(50);

/// The switches of a harness's slow desktops: while `slow` is set their captures and actions
/// take `DELAY`, and further wait while `held` is set, so that requests on a session queue up.
#[derive(Default)]
struct Switches {
    slow: Arc<AtomicBool>,
    held: Arc<AtomicBool>,
    n_started: Arc<AtomicUsize>,
}

fn slow_harness(switches: &Switches, adjust: impl FnOnce(&mut BrokerConfig)) -> Harness {
    let (slow, held, n_started) = (
        Arc::clone(&switches.slow),
        Arc::clone(&switches.held),
        Arc::clone(&switches.n_started),
    );
    hooked_harness(adjust, move || {
        let (slow, held, n_started) =
            (Arc::clone(&slow), Arc::clone(&held), Arc::clone(&n_started));
        Box::new(move |moment| {
            if moment == Moment::AfterExecute || !slow.load(Ordering::SeqCst) {
                return;
            }
            n_started.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(DELAY);
            while held.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    })
}

/// More requests than tokio's default blocking pool has threads (512).
const N_FLOOD: usize = 700;
/// Every `ACTION_EVERY`-th flood request is the same action (one request id), the rest are
/// screenshots.
const ACTION_EVERY: usize = 7;
const QUEUE: usize = 32;
/// Longest time the statuses are measured.
const WINDOW: Duration = Duration::from_secs(8);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_session_does_not_delay_another_sessions_status() {
    let switches = Switches::default();
    let (slow, n_started) = (&switches.slow, &switches.n_started);
    let harness = Arc::new(slow_harness(&switches, |config| {
        config.session_queue = QUEUE
    }));
    let flooded = harness.ready().await;
    let other = harness.lease("task-2", "attempt-1").await;
    slow.store(true, Ordering::SeqCst);

    let flood_started = Instant::now();
    let n_pending = Arc::new(AtomicUsize::new(N_FLOOD));
    let mut flood = tokio::task::JoinSet::new();
    for n in 0..N_FLOOD {
        let (harness, id, n_pending) = (
            Arc::clone(&harness),
            flooded.clone(),
            Arc::clone(&n_pending),
        );
        flood.spawn(async move {
            let answer = if n % ACTION_EVERY == 0 {
                harness.act(&id, "flood-1", 0, click(5, 5)).await
            } else {
                harness
                    .call("GET", &format!("/v1/sessions/{id}/screenshot"), None)
                    .await
            };
            n_pending.fetch_sub(1, Ordering::SeqCst);
            (n % ACTION_EVERY == 0, answer, Instant::now())
        });
    }

    // The other session's status, over and over while the flood lasts (at most `WINDOW`).
    let mut latencies = Vec::new();
    let mut n_during_flood = 0;
    while n_pending.load(Ordering::SeqCst) > 0 && flood_started.elapsed() < WINDOW {
        let asked = Instant::now();
        let body = harness.status(&other).await;
        latencies.push(asked.elapsed());
        assert_eq!(body["state"], "leased", "{body}");
        if n_pending.load(Ordering::SeqCst) > 0 {
            n_during_flood += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (mut n_ok, mut n_busy, mut flood_done) = (0, 0, flood_started);
    let mut action_answers = Vec::new();
    while let Some(joined) = flood.join_next().await {
        let (is_action, (status, body), finished) = joined.unwrap();
        flood_done = flood_done.max(finished);
        match (status, body["code"].as_str()) {
            (StatusCode::OK, _) => n_ok += 1,
            (StatusCode::TOO_MANY_REQUESTS, Some("session_busy")) => n_busy += 1,
            other => panic!("unexpected flood answer {other:?}: {body}"),
        }
        if is_action && status == StatusCode::OK {
            action_answers.push(body);
        }
    }
    slow.store(false, Ordering::SeqCst);
    let max = latencies.iter().max().copied().unwrap_or_default();
    println!(
        "flood of {N_FLOOD} on one session: {n_ok} answered, {n_busy} session_busy, drained in \
         {:?}; {} statuses of another session ({n_during_flood} during the flood), max {max:?}, \
         mean {:?}",
        flood_done - flood_started,
        latencies.len(),
        latencies.iter().sum::<Duration>() / u32::try_from(latencies.len().max(1)).unwrap()
    );
    assert!(max < Duration::from_secs(2), "status took {max:?}");
    assert!(
        n_during_flood >= 5,
        "only {n_during_flood} statuses overlapped the flood"
    );
    assert!(n_busy > 0, "the excess of the queue is refused");
    assert!(
        n_ok > QUEUE,
        "the queue admitted its {QUEUE} and more as it drained"
    );
    assert_eq!(n_ok + n_busy, N_FLOOD);

    // Exactly-once: of the admitted copies of the action one ran, the others replayed it.
    let fresh: Vec<&Value> = action_answers
        .iter()
        .filter(|answer| answer["idempotent_replay"] == false)
        .collect();
    assert!(fresh.len() <= 1, "{} copies ran", fresh.len());
    let n_replayed = action_answers.len() - fresh.len();
    assert_eq!(
        n_started.load(Ordering::SeqCst),
        n_ok - n_replayed,
        "every answered request but the replays reached the desktop once, no refused one did"
    );
    for answer in &action_answers {
        assert_eq!(answer["receipt"], action_answers[0]["receipt"]);
    }
    let (status, again) = harness.act(&flooded, "flood-1", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    if let Some(first) = action_answers.first() {
        assert_eq!(again["idempotent_replay"], true);
        assert_eq!(again["receipt"], first["receipt"]);
    }
    assert_eq!(
        harness.fake.n_inputs(),
        1,
        "the action reached the desktop once"
    );

    // Nothing else broke: the flooded session goes on, the other one too.
    let body = harness.status(&flooded).await;
    assert_eq!(
        (body["state"].as_str(), body["next_action_index"].as_u64()),
        (Some("ready"), Some(1)),
        "{body}"
    );
    let (status, body) = harness.act(&flooded, "after-1", 1, click(6, 6)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(harness.status(&other).await["state"], "leased");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_action_changes_nothing_and_its_retry_runs_once() {
    let switches = Switches::default();
    let (slow, held, n_started) = (&switches.slow, &switches.held, &switches.n_started);
    // No request may wait: one running request fills the session's queue.
    let harness = Arc::new(slow_harness(&switches, |config| config.session_queue = 0));
    let id = harness.ready().await;
    slow.store(true, Ordering::SeqCst);
    held.store(true, Ordering::SeqCst);
    let screenshot = {
        let (harness, id) = (Arc::clone(&harness), id.clone());
        tokio::spawn(async move {
            harness
                .call("GET", &format!("/v1/sessions/{id}/screenshot"), None)
                .await
        })
    };
    while n_started.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let (status, body) = harness.act(&id, "busy-1", 0, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("session_busy")),
        "{body}"
    );
    let (status, body) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("session_busy")),
        "{body}"
    );
    // Status is never queued.
    let body = harness.status(&id).await;
    assert_eq!(body["next_action_index"], 0, "{body}");
    held.store(false, Ordering::SeqCst);
    let (status, body) = screenshot.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    slow.store(false, Ordering::SeqCst);

    assert_eq!(
        harness.fake.n_inputs(),
        0,
        "the refused action reached nothing"
    );
    let body = harness.status(&id).await;
    assert_eq!(
        (body["state"].as_str(), body["next_action_index"].as_u64()),
        (Some("ready"), Some(0)),
        "{body}"
    );
    let (status, first) = harness.act(&id, "busy-1", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(
        first["idempotent_replay"], false,
        "the refusal used up nothing"
    );
    let (status, again) = harness.act(&id, "busy-1", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(again["receipt"], first["receipt"]);
    assert_eq!(harness.fake.n_inputs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reaper_waits_its_turn_and_is_never_refused() {
    let switches = Switches::default();
    let (slow, held, n_started) = (&switches.slow, &switches.held, &switches.n_started);
    let harness = Arc::new(slow_harness(&switches, |config| {
        config.session_queue = 0;
        config.lease_ttl = Duration::from_secs(1);
    }));
    let id = harness.ready().await;
    slow.store(true, Ordering::SeqCst);
    held.store(true, Ordering::SeqCst);
    let screenshot = {
        let (harness, id) = (Arc::clone(&harness), id.clone());
        tokio::spawn(async move {
            harness
                .call("GET", &format!("/v1/sessions/{id}/screenshot"), None)
                .await
        })
    };
    while n_started.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The lease expires while the screenshot holds the session's only place.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let reaping = {
        let broker = harness.broker.clone();
        tokio::spawn(async move { broker.release_expired().await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !reaping.is_finished(),
        "the reaper waits for the running screenshot"
    );
    held.store(false, Ordering::SeqCst);
    let (status, body) = screenshot.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(reaping.await.unwrap().unwrap(), 1);
    assert_eq!(harness.status(&id).await["state"], "released");
}
