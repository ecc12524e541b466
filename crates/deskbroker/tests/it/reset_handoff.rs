//! The verified handoff through the broker: a screen that never settles is refused with
//! `reset_unstable` after reset's settle waits, and a window the manager cannot make cover the
//! work area with `app_not_maximized`; nothing is handed to the agent either way.

use desk_client::ClientError;
use desk_contract::ErrorCode;

use crate::support::{Broker, lease_then_reset, probe_binary, xvfb_available};

/// Writes profile `name` into `profiles` (before the broker starts): the probe window with
/// `flags`.
fn probe_profile_with(profiles: &std::path::Path, name: &str, flags: &[&str]) {
    let flags: Vec<String> = flags.iter().map(|flag| format!("{flag:?}")).collect();
    let text = format!(
        "name = {name:?}\ncommand = [{program:?}, \"--out\", \"{{home}}/probe.ndjson\", {flags}]\n\
         read_only = [{program:?}]\n\
         [attempt]\nfilename = \"attempt.txt\"\ntemplate = \"fresh\"\n[window]\n\
         class = \"deskprobe\"\nmaximize = true\ntimeout_ms = 15000\n",
        program = probe_binary().display().to_string(),
        flags = flags.join(", ")
    );
    std::fs::create_dir_all(profiles).unwrap();
    std::fs::write(profiles.join(format!("{name}.toml")), text).unwrap();
}

async fn reset_error(broker: &Broker, profile: &str) -> ErrorCode {
    let client = broker.client();
    let (session, reset) = lease_then_reset(&client, "handoff", profile, profile).await;
    let refused = reset.unwrap_err();
    client.release(&session).await.unwrap();
    match refused {
        ClientError::Api(body) => body.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handoff_that_never_settles_or_cannot_cover_is_refused() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let profiles = root.path().join("profiles");
    probe_profile_with(&profiles, "flicker", &["--repaint-ms", "40"]);
    probe_profile_with(&profiles, "small", &["--max-size", "600x400"]);
    let broker = Broker::start(root.path(), None, &log);
    assert_eq!(
        reset_error(&broker, "flicker").await,
        ErrorCode::ResetUnstable
    );
    assert_eq!(
        reset_error(&broker, "small").await,
        ErrorCode::AppNotMaximized
    );
}
