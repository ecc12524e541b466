//! Semantic steps on our own accessible fixture (issue 13, "Tests"): a small GTK 3 window
//! (`tests/fixtures/ax-fixture.py`, reached through GTK's AT-SPI bridge on the session's private
//! bus) that logs every activation, so exactly-once is counted by the app itself. Through the
//! real broker: an `ax_press` is one `pressed` event, one `ax_action` row and no seat input; an
//! `ax_set_text` reaches the entry byte for byte (non-ASCII too); a stale observation id sends
//! nothing; and while the fixture's main loop is blocked ("Hang") an `ax_press` answers
//! `ax_provider_busy` and is never delivered, not even once the provider answers again; a call
//! that blocks inside the provider ("Slow") is `input_outcome_unknown` and never replayed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::a11y::{AxNode, AxTree, AxWindow};
use desk_contract::control::{ProgramRequest, ProgramResponse};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::accessibility::ready;
use crate::semantic::{press, refused};
use crate::support::{Broker, xvfb_available};

/// The Python interpreter whose `gi` (python3-gi) the fixture imports.
const PYTHON: &str = "/usr/bin/python3";
/// How long "Hang" blocks the fixture's main loop: well past the worker's 2 s check limit.
const HANG_SECONDS: u64 = 6;

fn fixture_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ax-fixture.py")
}

/// Whether python3-gi with GTK 3 is installed. Without it the tests print a skip and pass,
/// unless `DESK_REQUIRE_XVFB=1` (CI installs it), where it fails.
fn gtk_available() -> bool {
    let ok = gtk_installed();
    if !ok {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "python3-gi with GTK 3 (gir1.2-gtk-3.0) is required (DESK_REQUIRE_XVFB=1)"
        );
        println!("skipped: python3-gi/GTK 3 not found");
    }
    ok
}

/// Whether python3-gi with GTK 3 imports (no skip message: see [`gtk_available`]).
pub(crate) fn gtk_installed() -> bool {
    let probe = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk";
    std::process::Command::new(PYTHON)
        .args(["-c", probe])
        .env_remove("DISPLAY")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Writes the `axfixture` profile (the fixture recording into `log`) under `root/profiles`.
pub(crate) fn write_profile(root: &Path, log: &Path) {
    let script = fixture_script();
    let dir = script.parent().unwrap();
    let profile = format!(
        "name = \"axfixture\"\ncommand = [{PYTHON:?}, {script:?}, \"--out\", {log:?}, \
         \"--hang-seconds\", \"{HANG_SECONDS}\"]\nread_only = [{dir:?}]\n\
         [env]\nLANG = \"C.UTF-8\"\nLC_ALL = \"C.UTF-8\"\n\
         [attempt]\nfilename = \"attempt.txt\"\ntemplate = \"fresh\"\n[window]\n\
         class = \"deskaxfixture\"\nmaximize = true\ntimeout_ms = 20000\n",
        script = script.display().to_string(),
        log = log.display().to_string(),
        dir = dir.display().to_string(),
    );
    std::fs::create_dir_all(root.join("profiles")).unwrap();
    std::fs::write(root.join("profiles/axfixture.toml"), profile).unwrap();
}

/// A broker whose `axfixture` profile runs the fixture, its log, and a ready session.
struct Fixture {
    _root: TempDir,
    _broker: Broker,
    client: Client,
    session: String,
    log: PathBuf,
}

impl Fixture {
    async fn start() -> Option<Fixture> {
        if !xvfb_available() || !gtk_available() {
            return None;
        }
        let root = tempfile::tempdir().unwrap();
        // The broker binds this file writable into every sandbox (the probe's recording).
        let log = root.path().join("fixture.ndjson");
        write_profile(root.path(), &log);
        let broker = Broker::start(root.path(), None, &log);
        let client = broker.client();
        let session = ready(&client, "axfixture").await;
        Some(Fixture {
            _root: root,
            _broker: broker,
            client,
            session,
            log,
        })
    }

    /// The fixture's events so far, in order.
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn events_named(&self, name: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|event| event["event"] == name)
            .collect()
    }

    /// Waits up to `limit` for an event named `name`.
    async fn wait_for(&self, name: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if !self.events_named(name).is_empty() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// A snapshot, timed.
    async fn tree(&self) -> AxTree {
        let started = Instant::now();
        let tree = self
            .client
            .accessibility(&self.session, None, None)
            .await
            .unwrap()
            .tree;
        println!(
            "fixture accessibility snapshot: {} nodes, walk {} ms, request {} ms",
            tree.nodes.len(),
            tree.elapsed_ms,
            started.elapsed().as_millis()
        );
        tree
    }

    async fn program(
        &self,
        request_id: &str,
        index: u64,
        steps: Value,
    ) -> Result<ProgramResponse, ClientError> {
        let request = ProgramRequest {
            request_id: request_id.to_string(),
            expected_action_index: index,
            control: None,
            screenshot_id: None,
            steps: serde_json::from_value(steps).unwrap(),
        };
        self.client.program(&self.session, &request).await
    }

    /// The event-log rows of action `index`.
    async fn rows_of(&self, index: u64) -> Vec<Value> {
        self.client
            .events(&self.session)
            .await
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|row| row["actionIndex"] == json!(index))
            .collect()
    }
}

/// The fixture's node named `name` with role `role` in the bound window.
fn node<'a>(tree: &'a AxTree, role: &str, name: &str) -> &'a AxNode {
    tree.nodes
        .iter()
        .find(|n| n.window == AxWindow::Bound && n.role == role && n.name == name)
        .unwrap_or_else(|| {
            let seen: Vec<_> = tree
                .nodes
                .iter()
                .map(|n| (&n.role, &n.name, n.window, n.bounds))
                .collect();
            panic!("no {role} {name:?} in the fixture's window: {seen:?}")
        })
}

/// One delivered semantic step: the receipt, one `ax_action` row, no seat input.
async fn delivered_once(fixture: &Fixture, response: &ProgramResponse, index: u64, action: &str) {
    assert_eq!(response.action_index, index);
    assert_eq!(response.receipt.submitted, 1);
    assert_eq!(response.receipt.failing_step, None);
    let receipt = &response.receipt.steps[0];
    assert_eq!(receipt.action_type.as_str(), action);
    assert_eq!(receipt.n_input_events, 1);
    let rows = fixture.rows_of(index).await;
    assert_eq!(rows.len(), 1, "one row and no seat input: {rows:?}");
    assert_eq!(rows[0]["type"], "ax_action");
    assert_eq!(rows[0]["action"], action);
}

#[tokio::test(flavor = "multi_thread")]
async fn ax_fixture_press_once_and_stale_refused() {
    let Some(fixture) = Fixture::start().await else {
        return;
    };
    assert!(fixture.wait_for("ready", Duration::from_secs(5)).await);
    fixture.tree().await;
    let stale = fixture.tree().await;
    let tree = fixture.tree().await;
    assert!(!tree.truncated);
    assert_eq!(tree.nodes[0].role, "application");
    let button = node(&tree, "button", "Press me");
    assert!(button.actions.iter().any(|a| a == "click"), "{button:?}");

    // A stale observation (two snapshots ago): refused, nothing reaches the fixture.
    let events_before = fixture.client.events(&fixture.session).await.unwrap();
    let stale_button = node(&stale, "button", "Press me");
    let result = fixture
        .program("stale", 0, json!([press(&stale, stale_button)]))
        .await;
    refused(result, ErrorCode::AxObservationStale);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fixture.events_named("pressed"), Vec::<Value>::new());
    assert_eq!(
        fixture.client.events(&fixture.session).await.unwrap(),
        events_before
    );

    // The press: exactly one activation in the app, and index 0 was not taken by the refusal.
    let response = fixture
        .program("press", 0, json!([press(&tree, button)]))
        .await
        .unwrap();
    delivered_once(&fixture, &response, 0, "ax_press").await;
    assert_eq!(
        response.receipt.steps[0].delivery.as_str(),
        "input_injected"
    );
    assert!(fixture.wait_for("pressed", Duration::from_secs(2)).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        fixture.events_named("pressed"),
        vec![json!({"event": "pressed", "count": 1})]
    );
    fixture.client.release(&fixture.session).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn ax_fixture_set_text_exact() {
    let Some(fixture) = Fixture::start().await else {
        return;
    };
    assert!(fixture.wait_for("ready", Duration::from_secs(5)).await);
    let mut written = Vec::new();
    for (index, text) in (0u64..).zip(["plain ascii", "Grüße ✓"]) {
        let tree = fixture.tree().await;
        let entry = node(&tree, "text", "Name");
        assert!(entry.editable, "{entry:?}");
        let step = json!({
            "type": "ax_set_text",
            "observation_id": tree.observation_id,
            "node": entry.index,
            "text": text,
            "mode": "set",
            "intent": "enter a name",
        });
        let response = fixture
            .program(&format!("text-{index}"), index, json!([step]))
            .await
            .unwrap();
        delivered_once(&fixture, &response, index, "ax_set_text").await;
        let rows = fixture.rows_of(index).await;
        assert_eq!(
            rows[0]["text_chars"],
            json!(text.chars().count()),
            "{rows:?}"
        );
        let texts: Vec<String> = fixture
            .events_named("text")
            .iter()
            .map(|e| e["text"].as_str().unwrap().to_string())
            .collect();
        println!("fixture text events after {text:?}: {texts:?}");
        // One change per set, to exactly the text sent.
        written.push(text.to_string());
        assert_eq!(texts, written);
    }
    fixture.client.release(&fixture.session).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn ax_fixture_hung_provider_is_busy() {
    let Some(fixture) = Fixture::start().await else {
        return;
    };
    assert!(fixture.wait_for("ready", Duration::from_secs(5)).await);
    fixture.tree().await;
    let tree = fixture.tree().await;
    let hang = node(&tree, "button", "Hang");
    let button = node(&tree, "button", "Press me");

    // "Hang" answers its DoAction, then blocks the main loop for HANG_SECONDS.
    let response = fixture
        .program("hang", 0, json!([press(&tree, hang)]))
        .await
        .unwrap();
    delivered_once(&fixture, &response, 0, "ax_press").await;
    assert!(
        fixture.wait_for("hang_start", Duration::from_secs(3)).await,
        "the fixture's main loop is blocked"
    );
    assert!(fixture.events_named("hang_end").is_empty());

    // The provider cannot answer the checks: ax_provider_busy within about 2 s, nothing sent.
    let events_before = fixture.client.events(&fixture.session).await.unwrap();
    let started = Instant::now();
    let result = fixture
        .program("busy", 1, json!([press(&tree, button)]))
        .await;
    let waited = started.elapsed();
    println!("busy answer after {} ms: {result:?}", waited.as_millis());
    assert!(
        fixture.events_named("hang_end").is_empty(),
        "the answer came while the fixture was still blocked"
    );
    refused(result, ErrorCode::AxProviderBusy);
    assert!(waited >= Duration::from_millis(1900), "{waited:?}");
    assert_eq!(
        fixture.client.events(&fixture.session).await.unwrap(),
        events_before
    );

    // Once the main loop runs again, the refused press never arrives.
    assert!(
        fixture
            .wait_for("hang_end", Duration::from_secs(HANG_SECONDS + 5))
            .await
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fixture.events_named("pressed"), Vec::<Value>::new());

    // The provider answers again: a fresh observation's press is delivered, at index 1 (the
    // refused program took none), exactly once.
    let tree = fixture.tree().await;
    let button = node(&tree, "button", "Press me");
    let response = fixture
        .program("after", 1, json!([press(&tree, button)]))
        .await
        .unwrap();
    delivered_once(&fixture, &response, 1, "ax_press").await;
    assert!(fixture.wait_for("pressed", Duration::from_secs(2)).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        fixture.events_named("pressed"),
        vec![json!({"event": "pressed", "count": 1})]
    );
    fixture.client.release(&fixture.session).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn ax_fixture_a_call_that_hangs_in_the_provider_is_outcome_unknown() {
    let Some(fixture) = Fixture::start().await else {
        return;
    };
    assert!(fixture.wait_for("ready", Duration::from_secs(5)).await);
    fixture.tree().await;
    let tree = fixture.tree().await;
    let slow = node(&tree, "text", "Slow");
    let steps = json!([{
        "type": "ax_set_text",
        "observation_id": tree.observation_id,
        "node": slow.index,
        "text": "late",
        "mode": "set",
        "intent": "a text the provider takes too long to insert",
    }]);
    // The checks pass; the call enters the provider and blocks there for HANG_SECONDS, past
    // the worker's 5 s limit for a call: whether the text arrived is unknown.
    let started = Instant::now();
    let result = fixture.program("slow", 0, steps.clone()).await;
    let waited = started.elapsed();
    println!(
        "hung call answered after {} ms: {result:?}",
        waited.as_millis()
    );
    refused(result, ErrorCode::InputOutcomeUnknown);
    assert!(waited >= Duration::from_millis(4900), "{waited:?}");
    assert_eq!(fixture.events_named("slow_insert_start").len(), 1);
    // Never replayed: the same request is in doubt again and sends nothing; the session is in
    // error and takes no further input.
    refused(
        fixture.program("slow", 0, steps).await,
        ErrorCode::InputOutcomeUnknown,
    );
    let status = fixture.client.status(&fixture.session).await.unwrap();
    assert_eq!(
        status.last_error.as_ref().map(|error| error.code),
        Some(ErrorCode::InputOutcomeUnknown),
        "{status:?}"
    );
    assert!(
        fixture
            .wait_for("slow_insert_end", Duration::from_secs(HANG_SECONDS + 5))
            .await
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fixture.events_named("slow_insert_start").len(), 1);
    assert_eq!(
        fixture.events_named("slow_text"),
        vec![json!({"event": "slow_text", "text": "late"})],
        "the text arrived once, late"
    );
    fixture.client.release(&fixture.session).await.unwrap();
}
