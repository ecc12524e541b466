//! The broker is SIGKILLed between journaling an action and responding; after a restart the
//! retried request is reported honestly (`input_outcome_unknown`) and never re-injected.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use desk_client::ClientError;
use desk_contract::ErrorCode;
use desk_contract::api::SessionState;
use serde_json::json;

use crate::probe::{act, leased_probe, of_type, probe_events, wait_for_events};
use crate::support::{Broker, processes_mentioning, xvfb_available};

async fn crash_case(fault: &str, expected_presses: usize) {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let mut broker = Broker::start(root.path(), Some(fault), &log);
    let session = leased_probe(&broker, fault).await;
    let baseline = probe_events(&log).len();
    let click = json!({"type": "click", "x": 200, "y": 150, "button": "left", "intent": "click before the crash"});

    let lost = act(&broker.client(), &session, "crash-1", 0, click.clone()).await;
    assert!(
        matches!(lost, Err(ClientError::Transport(_))),
        "the response must be lost: {lost:?}"
    );
    let status = broker.wait_exit(Duration::from_secs(10));
    assert_eq!(status.signal(), Some(9), "the broker must die by SIGKILL");

    let events = wait_for_events(&log, baseline + expected_presses * 2);
    assert_eq!(
        of_type(&events[baseline..], "button_press").len(),
        expected_presses
    );

    broker.restart(None);
    let client = broker.client();
    let retry = act(&client, &session, "crash-1", 0, click.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(retry, ClientError::Api(ref body) if body.code == ErrorCode::InputOutcomeUnknown),
        "a retry after the crash must report the unknown outcome: {retry:?}"
    );
    let status = client.status(&session).await.unwrap();
    assert_eq!(status.state, SessionState::Error);
    assert_eq!(
        status.last_error.map(|error| error.code),
        Some(ErrorCode::InputOutcomeUnknown)
    );
    let next = act(&client, &session, "crash-2", 1, click)
        .await
        .unwrap_err();
    assert!(
        matches!(next, ClientError::Api(ref body) if body.code == ErrorCode::InvalidState),
        "{next:?}"
    );

    std::thread::sleep(Duration::from_millis(300));
    let after = probe_events(&log);
    assert_eq!(
        of_type(&after[baseline..], "button_press").len(),
        expected_presses,
        "never replayed"
    );

    client.release(&session).await.unwrap();
    let leftovers = processes_mentioning(&log.display().to_string());
    assert!(
        leftovers.is_empty(),
        "release must reap the crashed session's processes: {leftovers:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_after_input_is_reported_unknown_and_never_replayed() {
    crash_case("kill_after_input", 1).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_after_journal_before_input_is_reported_unknown() {
    crash_case("kill_before_input", 0).await;
}

/// A small seeded generator (xorshift64*), so a failing run can be replayed with its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound.max(1)
    }
}

/// What became of one planned action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// The client holds a successful response (first answer or replay).
    Acknowledged,
    /// The broker died while it was in flight; it failed closed (`input_outcome_unknown`).
    InDoubt,
    /// Never sent: an earlier action of its batch failed closed.
    NeverSent,
}

struct Planned {
    request_id: String,
    point: (i64, i64),
    fate: Fate,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The pause between two actions of a batch.
const THINK: Duration = Duration::from_millis(25);

/// Sends `actions` in order; stops at the first failure. Reports each acknowledgement on
/// `acks`; returns how many were acknowledged.
async fn run_batch(
    client: desk_client::Client,
    session: String,
    first_index: u64,
    actions: Vec<(String, serde_json::Value)>,
    acks: tokio::sync::mpsc::UnboundedSender<usize>,
) -> usize {
    let mut acknowledged = 0;
    for (offset, (request_id, action)) in actions.into_iter().enumerate() {
        let index = first_index + offset as u64;
        match act(&client, &session, &request_id, index, action).await {
            Ok(_) => {
                acknowledged += 1;
                let _ = acks.send(acknowledged);
                // An agent thinks between actions.
                tokio::time::sleep(THINK).await;
            }
            Err(_) => break,
        }
    }
    acknowledged
}

fn click_at(point: (i64, i64), n: usize) -> serde_json::Value {
    json!({"type": "click", "x": point.0, "y": point.1, "button": "left", "intent": format!("crash loop click {n}")})
}

/// The pid of the session's X server, from its `processes.json`.
fn xvfb_pid(broker: &Broker, session: &str) -> u32 {
    desk_desktop::launcher::recorded_processes(broker.session_dir(session))
        .iter()
        .find(|process| process.role == "xvfb")
        .map(|process| process.pid)
        .expect("the session records its Xvfb")
}

/// SIGKILLs the broker at seeded random points of multi-action batches against the probe
/// window, restarts it on the same state each time (reattaching to the running desktop), retries
/// every unacknowledged request id, and finally compares the probe's log with what was
/// acknowledged: zero duplicated, zero lost acknowledged inputs. An action in doubt fails closed
/// and the loop continues on a new lease. `DESK_CRASH_SEED` and `DESK_CRASH_ITERATIONS`
/// override the defaults (seed 20261129, 50 iterations).
#[tokio::test(flavor = "multi_thread")]
async fn crash_loop_random_sigkills_lose_and_duplicate_nothing() {
    if !xvfb_available() {
        return;
    }
    const BATCH: usize = 4;
    let seed = env_number("DESK_CRASH_SEED", 20_261_129);
    let iterations = env_number("DESK_CRASH_ITERATIONS", 50) as usize;
    let mut rng = Rng::new(seed);
    let started = std::time::Instant::now();
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let mut broker = Broker::start(root.path(), None, &log);
    let mut n_leases = 1;
    let mut session = leased_probe(&broker, "crash-loop-1").await;
    let mut next_index = 0u64;
    let mut plan: Vec<Planned> = Vec::new();
    let point_of =
        |n: usize| -> (i64, i64) { (40 + (n % 60) as i64 * 20, 120 + (n / 60) as i64 * 24) };

    // Calibrate the kill window on one acknowledged action.
    let calibration_started = std::time::Instant::now();
    let point = point_of(0);
    act(
        &broker.client(),
        &session,
        "calibrate",
        0,
        click_at(point, 0),
    )
    .await
    .unwrap();
    plan.push(Planned {
        request_id: "calibrate".into(),
        point,
        fate: Fate::Acknowledged,
    });
    next_index += 1;
    let action_ms = calibration_started.elapsed().as_millis().max(5) as u64;
    let window_ms = action_ms * BATCH as u64 * 5 / 4;

    // Where the kill landed, seen from the first unacknowledged action after the restart.
    let (mut before_input, mut in_doubt, mut after_input, mut after_batch) = (0, 0, 0, 0);
    let mut n_reattached = 0;
    for iteration in 0..iterations {
        let first = plan.len();
        let actions: Vec<(String, serde_json::Value)> = (0..BATCH)
            .map(|k| {
                let n = first + k;
                let request_id = format!("it{iteration}-a{k}");
                plan.push(Planned {
                    request_id: request_id.clone(),
                    point: point_of(n),
                    fate: Fate::NeverSent,
                });
                (request_id, click_at(point_of(n), n))
            })
            .collect();
        let xvfb_before = xvfb_pid(&broker, &session);
        let (acks, mut acked) = tokio::sync::mpsc::unbounded_channel();
        let batch = tokio::spawn(run_batch(
            broker.client(),
            session.clone(),
            next_index,
            actions.clone(),
            acks,
        ));
        // A uniform delay over the batch lands mostly inside an action (input and settle take
        // nearly all of it); every other iteration instead kills right after a seeded number of
        // acknowledgements, between two actions.
        if rng.below(2) == 0 {
            let after = rng.below(BATCH as u64) as usize;
            if after > 0 {
                while let Some(n) = acked.recv().await {
                    if n >= after {
                        break;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(rng.below(3))).await;
        } else {
            tokio::time::sleep(Duration::from_millis(rng.below(window_ms))).await;
        }
        broker.kill();
        let acknowledged = batch.await.unwrap();
        broker.respawn();
        let client = broker.client();
        for planned in &mut plan[first..first + acknowledged] {
            planned.fate = Fate::Acknowledged;
        }
        next_index += acknowledged as u64;
        if acknowledged == BATCH {
            after_batch += 1;
        }
        let mut failed_closed = false;
        for k in acknowledged..BATCH {
            let (request_id, action) = &actions[k];
            match act(&client, &session, request_id, next_index, action.clone()).await {
                Ok(response) => {
                    if k == acknowledged {
                        if response.idempotent_replay {
                            after_input += 1;
                        } else {
                            before_input += 1;
                        }
                    }
                    plan[first + k].fate = Fate::Acknowledged;
                    next_index += 1;
                }
                Err(ClientError::Api(body)) if body.code == ErrorCode::InputOutcomeUnknown => {
                    assert_eq!(k, acknowledged, "only the action in flight can be in doubt");
                    in_doubt += 1;
                    plan[first + k].fate = Fate::InDoubt;
                    let status = client.status(&session).await.unwrap();
                    assert_eq!(status.state, SessionState::Error);
                    failed_closed = true;
                    break;
                }
                Err(other) => {
                    panic!("iteration {iteration}: retry of {request_id} failed: {other:?}")
                }
            }
        }
        if failed_closed {
            client.release(&session).await.unwrap();
            n_leases += 1;
            session = leased_probe(&broker, &format!("crash-loop-{n_leases}")).await;
            next_index = 0;
        } else {
            assert_eq!(
                xvfb_pid(&broker, &session),
                xvfb_before,
                "iteration {iteration}: the desktop must be reattached, not relaunched"
            );
            n_reattached += 1;
        }
    }
    broker.client().release(&session).await.unwrap();

    let n_acknowledged = plan.iter().filter(|p| p.fate == Fate::Acknowledged).count();
    let mut presses: std::collections::HashMap<(i64, i64), usize> = Default::default();
    let mut deadline = 0;
    loop {
        presses.clear();
        for event in of_type(&probe_events(&log), "button_press") {
            let point = (
                event["root_x"].as_i64().unwrap(),
                event["root_y"].as_i64().unwrap(),
            );
            *presses.entry(point).or_default() += 1;
        }
        let seen = plan
            .iter()
            .filter(|p| p.fate == Fate::Acknowledged && presses.contains_key(&p.point))
            .count();
        if seen == n_acknowledged || deadline == 50 {
            break;
        }
        deadline += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut lost = Vec::new();
    let mut duplicated = Vec::new();
    let mut phantom = Vec::new();
    for planned in &plan {
        let n = presses.get(&planned.point).copied().unwrap_or(0);
        match planned.fate {
            Fate::Acknowledged if n == 0 => lost.push(&planned.request_id),
            Fate::NeverSent if n > 0 => phantom.push(&planned.request_id),
            _ => {}
        }
        if n > 1 {
            duplicated.push(&planned.request_id);
        }
    }
    let planned_points: std::collections::HashSet<_> = plan.iter().map(|p| p.point).collect();
    let stray: Vec<_> = presses
        .keys()
        .filter(|point| !planned_points.contains(point))
        .collect();
    let wall = started.elapsed();
    println!(
        "crash loop: seed {seed}, {iterations} iterations, {} actions planned, {n_acknowledged} \
         acknowledged; kills landed: {before_input} before input (no journal row), {in_doubt} \
         in doubt (failed closed), {after_input} after input (replayed from the journal), \
         {after_batch} after the batch; {n_reattached} restarts reattached, {n_leases} leases; \
         {} duplicated, {} lost; action {action_ms} ms, kill window {window_ms} ms; wall {:.1} s",
        plan.len(),
        duplicated.len(),
        lost.len(),
        wall.as_secs_f64()
    );
    assert!(duplicated.is_empty(), "duplicated inputs: {duplicated:?}");
    assert!(lost.is_empty(), "lost acknowledged inputs: {lost:?}");
    assert!(
        phantom.is_empty(),
        "inputs never sent reached the probe: {phantom:?}"
    );
    assert!(stray.is_empty(), "unplanned presses: {stray:?}");
    assert!(n_reattached > 0, "no restart reattached a desktop");
}
