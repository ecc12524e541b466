//! Exactly-once through the whole stack: broker process → worker → XTEST → the probe window,
//! asserting on what the probe recorded, with retried request ids.

use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::api::ActionRequest;
use serde_json::{Value, json};

use crate::support::{Broker, lease_and_reset, xvfb_available};

/// The probe's log, one JSON object per received X event.
pub(crate) fn probe_events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

pub(crate) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

/// Text reconstructed from the probe's key presses.
pub(crate) fn typed_text(events: &[Value]) -> String {
    of_type(events, "key_press")
        .iter()
        .filter_map(|event| event["char"].as_str())
        .collect()
}

pub(crate) async fn act(
    client: &Client,
    session: &str,
    request_id: &str,
    index: u64,
    action: Value,
) -> Result<desk_contract::api::ActionResponse, ClientError> {
    let request = ActionRequest {
        request_id: request_id.to_string(),
        expected_action_index: index,
        screenshot_id: None,
        action: serde_json::from_value(action).unwrap(),
    };
    client.act(session, &request).await
}

/// Waits until the probe has logged at least `n` events (X delivery is asynchronous).
pub(crate) fn wait_for_events(log: &Path, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let events = probe_events(log);
        if events.len() >= n {
            return events;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    probe_events(log)
}

/// Writes the profile `name` into `root/profiles`: the probe binary logging to `log` with
/// `args` (see `desk-probe`'s flags), maximized, its directory visible read-only.
pub(crate) fn write_probe_profile(root: &Path, name: &str, log: &Path, args: &[&str]) {
    let profiles = root.join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    let mut command = vec![
        crate::support::probe_binary().display().to_string(),
        "--out".to_string(),
        log.display().to_string(),
    ];
    command.extend(args.iter().map(|arg| arg.to_string()));
    let text = format!(
        "name = {name:?}\ncommand = {command:?}\nread_only = [{dir:?}]\n\
         [attempt]\nfilename = \"attempt.txt\"\ntemplate = \"fresh\"\n\
         [window]\nclass = \"deskprobe\"\nmaximize = true\ntimeout_ms = 15000\n",
        // The sandbox shows the worker program alone of the target directory.
        dir = crate::support::probe_binary()
            .parent()
            .unwrap()
            .display()
            .to_string(),
    );
    std::fs::write(profiles.join(format!("{name}.toml")), text).unwrap();
}

/// A broker on a fresh temporary directory with one probe session leased and reset: what most
/// real-desktop tests start from. Fields drop in declaration order, so the broker is killed
/// before its directory is removed.
pub(crate) struct ProbeSession {
    pub(crate) broker: Broker,
    pub(crate) client: Client,
    /// The leased session's id.
    pub(crate) session: String,
    /// The probe's recording, one JSON object per received X event.
    pub(crate) log: PathBuf,
    /// The broker's socket, profiles and state directory, and the probe's log.
    pub(crate) root: tempfile::TempDir,
}

impl ProbeSession {
    /// [`Broker::start`] without a fault, and [`leased_probe`] of attempt `attempt` on it.
    pub(crate) async fn start(attempt: &str) -> ProbeSession {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("probe.ndjson");
        let broker = Broker::start(root.path(), None, &log);
        let client = broker.client();
        let session = leased_probe(&broker, attempt).await;
        ProbeSession {
            broker,
            client,
            session,
            log,
            root,
        }
    }
}

pub(crate) async fn leased_probe(broker: &Broker, attempt: &str) -> String {
    leased_profile(broker, "probe", attempt).await
}

/// Leases a session of `profile` (the probe under some options) and resets it to a verified,
/// settled handoff.
pub(crate) async fn leased_profile(broker: &Broker, profile: &str, attempt: &str) -> String {
    let client = broker.client();
    let (session, reset) = lease_and_reset(&client, "probe", attempt, profile).await;
    assert!(
        reset.window.maximized,
        "probe window must be maximized at handoff"
    );
    assert!(reset.screenshot.app_maximized);
    let settle = reset
        .settle
        .expect("the reset answer carries the handoff's settle receipt");
    assert_eq!(settle.outcome, desk_contract::SettleOutcome::Stable);
    assert!(settle.post_action_visual_stable);
    assert!(settle.n_samples > 0 && settle.wait_ms > 0, "{settle:?}");
    session
}

#[tokio::test(flavor = "multi_thread")]
async fn retried_actions_reach_the_probe_exactly_once() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("exactly-once").await;
    let baseline = probe_events(&probe.log).len();

    // A right click, sent twice with the same request id.
    let click = json!({"type": "click", "x": 321, "y": 234, "button": "right", "intent": "probe right click"});
    let first = act(&probe.client, &probe.session, "click-1", 0, click.clone())
        .await
        .unwrap();
    assert!(!first.idempotent_replay);
    assert_eq!(first.action_index, 0);
    let second = act(&probe.client, &probe.session, "click-1", 0, click.clone())
        .await
        .unwrap();
    assert!(
        second.idempotent_replay,
        "a retry must replay the cached response"
    );
    assert_eq!(
        second.screenshot.as_ref().unwrap().sha256,
        first.screenshot.as_ref().unwrap().sha256
    );
    // Same id, different content: a conflict, and nothing sent.
    let moved = json!({"type": "click", "x": 322, "y": 234, "button": "right", "intent": "probe right click"});
    let conflict = act(&probe.client, &probe.session, "click-1", 0, moved)
        .await
        .unwrap_err();
    assert!(
        matches!(conflict, ClientError::Api(ref body) if body.code == ErrorCode::ActionSequenceConflict),
        "{conflict:?}"
    );

    // Typed text with characters shells and keymaps get wrong, retried once.
    let text = "-<a> \"quoted\" 'single' ~|\\ {x}=1;";
    let typed = json!({"type": "type", "text": text, "intent": "type tricky text"});
    act(&probe.client, &probe.session, "type-1", 1, typed.clone())
        .await
        .unwrap();
    assert!(
        act(&probe.client, &probe.session, "type-1", 1, typed)
            .await
            .unwrap()
            .idempotent_replay
    );

    // A chord with a modifier, retried.
    let chord = json!({"type": "key", "keys": ["ctrl", "s"], "intent": "save chord"});
    act(&probe.client, &probe.session, "key-1", 2, chord.clone())
        .await
        .unwrap();
    assert!(
        act(&probe.client, &probe.session, "key-1", 2, chord)
            .await
            .unwrap()
            .idempotent_replay
    );

    let events = wait_for_events(&probe.log, baseline + 4);
    let events = &events[baseline..];
    let presses = of_type(events, "button_press");
    assert_eq!(presses.len(), 1, "exactly one button press: {presses:?}");
    assert_eq!(presses[0]["button"], 3);
    assert_eq!(
        (presses[0]["root_x"].as_i64(), presses[0]["root_y"].as_i64()),
        (Some(321), Some(234))
    );
    assert_eq!(of_type(events, "button_release").len(), 1);
    assert_eq!(
        typed_text(events),
        format!("{text}s"),
        "typed once, then the chord's s"
    );
    // The chord's s is the last key press; the typed text holds other s characters.
    let s_press = *of_type(events, "key_press").last().unwrap();
    assert_eq!(s_press["char"], "s");
    let control_mask = 1 << 2;
    assert_ne!(
        s_press["state"].as_u64().unwrap() & control_mask,
        0,
        "ctrl held during s"
    );

    // Pointer gestures, each retried once: still exactly one of each at the probe.
    let before_gestures = probe_events(&probe.log).len();
    let gestures = [
        json!({"type": "double_click", "x": 400, "y": 300, "button": "left", "intent": "double"}),
        json!({"type": "drag", "path": [{"x": 100, "y": 100}, {"x": 150, "y": 120}, {"x": 220, "y": 180}],
               "button": "left", "duration_ms": 60, "modifiers": ["shift"], "intent": "drag with shift"}),
        json!({"type": "scroll", "dx": 0, "dy": 3, "intent": "scroll down three notches"}),
    ];
    for (offset, gesture) in gestures.iter().enumerate() {
        let index = 3 + offset as u64;
        let request_id = format!("gesture-{index}");
        act(
            &probe.client,
            &probe.session,
            &request_id,
            index,
            gesture.clone(),
        )
        .await
        .unwrap();
        let replay = act(
            &probe.client,
            &probe.session,
            &request_id,
            index,
            gesture.clone(),
        )
        .await
        .unwrap();
        assert!(replay.idempotent_replay);
    }
    // 2 press/release pairs + 1 drag pair + 3 wheel pairs = 12 button events.
    let events = wait_for_events(&probe.log, before_gestures + 12);
    let events = &events[before_gestures..];
    let presses = of_type(events, "button_press");
    let buttons: Vec<i64> = presses
        .iter()
        .map(|event| event["button"].as_i64().unwrap())
        .collect();
    assert_eq!(
        buttons,
        vec![1, 1, 1, 5, 5, 5],
        "double click, drag, three wheel-down notches"
    );
    assert_eq!(of_type(events, "button_release").len(), 6);
    let drag_press = presses[2];
    assert_eq!(
        (drag_press["root_x"].as_i64(), drag_press["root_y"].as_i64()),
        (Some(100), Some(100))
    );
    assert_ne!(
        drag_press["state"].as_u64().unwrap() & 1,
        0,
        "shift held during the drag"
    );
    let drag_release = of_type(events, "button_release")[2];
    assert_eq!(
        (
            drag_release["root_x"].as_i64(),
            drag_release["root_y"].as_i64()
        ),
        (Some(220), Some(180))
    );
    let motions: Vec<(i64, i64)> = of_type(events, "motion")
        .iter()
        .map(|event| {
            (
                event["root_x"].as_i64().unwrap(),
                event["root_y"].as_i64().unwrap(),
            )
        })
        .collect();
    for point in [(150, 120), (220, 180)] {
        assert!(
            motions.contains(&point),
            "drag point {point:?} missing from {motions:?}"
        );
    }

    let status = probe.client.status(&probe.session).await.unwrap();
    assert_eq!(status.next_action_index, 6);
    let log_text = probe.client.events(&probe.session).await.unwrap();
    let records: Vec<Value> = log_text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        records
            .iter()
            .all(|r| r["sourcePid"] == -1 && r["provenance"] == "broker_action")
    );
    assert_eq!(
        records
            .iter()
            .filter(|r| r["type"] == "click" && r["pressed"] == true)
            .count(),
        4,
        "right click, double click (2), drag press"
    );
    assert_eq!(
        records
            .iter()
            .filter(|r| r["type"] == "scroll")
            .map(|r| r["dy"].as_i64().unwrap())
            .sum::<i64>(),
        3
    );
    let frames = probe.client.frame_events(&probe.session).await.unwrap();
    assert_eq!(
        frames.lines().count(),
        6,
        "one frame row per executed action"
    );
    probe.client.release(&probe.session).await.unwrap();
    assert!(
        !probe
            .client
            .release(&probe.session)
            .await
            .unwrap()
            .released_now,
        "release is idempotent"
    );
}
