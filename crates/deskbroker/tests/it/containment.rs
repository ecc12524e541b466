//! What a session's sandbox lets in, and when a broker may build one: a profile's `read_only`
//! paths (and nothing outside them or the base), `--private-path` checked at handoff, a host
//! that cannot build a sandbox refusing the lease, and a broker run as an unprivileged user
//! containing its desktops as well as a root one does.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{Broker, serve_command, write_probe_profile, xvfb_available};

/// Where the probes of these tests record: their private home.
const HOME_LOG: &str = "{home}/probe.ndjson";

/// Leases a session of `profile` and resets it.
async fn reset_profile(
    client: &desk_client::Client,
    profile: &str,
) -> (
    String,
    Result<desk_contract::api::ResetResponse, desk_client::ClientError>,
) {
    crate::support::lease_then_reset(client, profile, "a1", profile).await
}

/// The sandbox shows an app only where the profile says: a program outside every bound
/// directory fails its reset at once (not after the window timeout with exit status 127); the
/// profile's `read_only` shows its directory; a `read_only` path that would show the broker's
/// state directory, or a path named by `--private-path` (the gold), is refused at handoff by
/// the workspace check.
#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_shows_an_app_only_where_the_profile_says() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("probe.ndjson");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hidden = bin.join("hidden-probe");
    std::fs::copy(crate::support::probe_binary(), &hidden).unwrap();
    // Profiles are read at start: write them first.
    let profiles = tmp.path().join("profiles");
    write_probe_profile(&profiles, "hidden", &hidden, HOME_LOG, &[]);
    write_probe_profile(&profiles, "shown", &hidden, HOME_LOG, &[&bin]);
    write_probe_profile(&profiles, "exposing", &hidden, HOME_LOG, &[tmp.path()]);
    // A private path named at serve (as `bench run` names its gold directory).
    let gold = tmp.path().join("gold");
    std::fs::create_dir_all(&gold).unwrap();
    write_probe_profile(&profiles, "gold", &hidden, HOME_LOG, &[&bin, &gold]);
    let broker = Broker::start_with(
        tmp.path(),
        None,
        &log,
        &["--private-path", gold.to_str().unwrap()],
    );
    let client = broker.client();

    let started = std::time::Instant::now();
    let (session, reset) = reset_profile(&client, "hidden").await;
    // The cause (the program's path) is in the broker's log; a 5xx body never carries one.
    let text = reset
        .expect_err("the app is not in the sandbox")
        .to_string();
    assert!(text.contains("desktop_failed"), "{text}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "fails before the 15 s window timeout: {:?}",
        started.elapsed()
    );
    client.release(&session).await.unwrap();

    let (session, reset) = reset_profile(&client, "shown").await;
    let reset = reset.expect("the profile's read_only shows the app");
    assert!(reset.window.maximized);
    client.release(&session).await.unwrap();

    let (session, reset) = reset_profile(&client, "exposing").await;
    let text = reset
        .expect_err("a bind that shows the state directory is refused")
        .to_string();
    assert!(text.contains("workspace_unverified"), "{text}");
    let status = client.status(&session).await.unwrap();
    let last = status.last_error.expect("the refusal is recorded");
    assert!(
        last.message.contains("forbidden_path_visible"),
        "{}",
        last.message
    );
    client.release(&session).await.unwrap();

    let (session, reset) = reset_profile(&client, "gold").await;
    let text = reset
        .expect_err("a bind that shows a private path is refused")
        .to_string();
    assert!(text.contains("workspace_unverified"), "{text}");
    client.release(&session).await.unwrap();
}

/// A host whose bubblewrap cannot build a sandbox (here a `bwrap` first on the broker's PATH
/// that answers as bubblewrap does when the kernel refuses user namespaces) refuses the lease
/// itself with 503 `sandbox_unavailable`, and no session exists afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_that_cannot_sandbox_refuses_the_lease() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("probe.ndjson");
    let bin = tmp.path().join("refusing-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let bwrap = bin.join("bwrap");
    std::fs::write(
        &bwrap,
        "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace, likely because the \
         kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let broker = Broker::start_env(tmp.path(), &log, &[("PATH", path)]);
    let client = broker.client();
    let error = client
        .lease(&desk_contract::api::LeaseRequest {
            task_id: "t".into(),
            attempt_id: "a1".into(),
            profile: Some("probe".into()),
        })
        .await
        .expect_err("no sandbox, no lease");
    match &error {
        desk_client::ClientError::Api(body) => {
            assert_eq!(
                body.code,
                desk_contract::ErrorCode::SandboxUnavailable,
                "{body:?}"
            );
            assert!(body.message.contains("--unsafe-no-sandbox"), "{body:?}");
        }
        other => panic!("expected sandbox_unavailable, got {other}"),
    }
    let sessions = std::fs::read_dir(broker.state_dir.join("sessions"))
        .map(|dir| dir.count())
        .unwrap_or(0);
    assert_eq!(sessions, 0, "a refused lease creates no session");
}

/// Kills the process group of a broker started by the test, and whatever desktops it left.
struct Spawned {
    child: std::process::Child,
    state_dir: std::path::PathBuf,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Ok(sessions) = std::fs::read_dir(self.state_dir.join("sessions")) {
            for session in sessions.flatten() {
                desk_desktop::launcher::reap_recorded(session.path());
            }
        }
    }
}

/// A broker run as an unprivileged user (here `nobody`, from a root test process) sandboxes
/// its desktops too: the app runs in other namespaces, loopback only, without capabilities,
/// under the broker's own uid (no other uid is available without privileges), and the
/// handoff's workspace check passes. Without root the whole suite already runs this way.
#[tokio::test(flavor = "multi_thread")]
async fn a_broker_run_as_an_unprivileged_user_contains_its_desktops() {
    if !xvfb_available() || !nix::unistd::geteuid().is_root() {
        return;
    }
    const NOBODY: u32 = 65534;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The binaries, where `nobody` can run them (a checkout may sit in a private directory).
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let broker_bin = bin.join("deskbroker");
    std::fs::copy(crate::support::deskbroker(), &broker_bin).unwrap();
    std::fs::copy(
        crate::support::worker_program(),
        bin.join("deskbroker-worker"),
    )
    .unwrap();
    let probe = bin.join("desk-probe");
    std::fs::copy(crate::support::probe_binary(), &probe).unwrap();
    let home = tmp.path().join("home");
    let profiles = home.join("profiles");
    write_probe_profile(&profiles, "probe", &probe, HOME_LOG, &[&probe]);
    let chown = std::process::Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(&home)
        .status()
        .unwrap();
    assert!(chown.success());
    let socket = home.join("broker.sock");
    let state_dir = home.join("state");
    let serve = serve_command(&broker_bin, &socket, &state_dir, &profiles);
    let child = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            &NOBODY.to_string(),
            "--regid",
            &NOBODY.to_string(),
        ])
        .arg("--clear-groups")
        .arg(serve.get_program())
        .args(serve.get_args())
        // This test process (root) is the client.
        .args(["--allow-uid", "0"])
        // Without root no cgroup can be made: the operator must say limits are off.
        .arg(crate::support::UNSAFE_NO_LIMITS)
        .env("HOME", &home)
        .env("DESKBROKER_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _broker = Spawned { child, state_dir };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !socket.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "broker socket did not appear"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // desk-client trusts only a socket of its own uid or root's, as it should; speak HTTP/1.1
    // on the socket directly instead.
    let lease = http(
        &socket,
        "POST",
        "/v1/leases",
        None,
        r#"{"task_id":"t","attempt_id":"a1"}"#,
    );
    let session = lease["session_id"].as_str().unwrap().to_string();
    let token = lease["lease_token"].as_str().unwrap().to_string();
    let path = format!("/v1/sessions/{session}/reset");
    let reset = http(
        &socket,
        "POST",
        &path,
        Some(&token),
        r#"{"request_id":"r1"}"#,
    );
    let facts: desk_contract::desktop::WorkspaceFacts =
        serde_json::from_value(reset["workspace"].clone())
            .unwrap_or_else(|error| panic!("no workspace facts ({error}): {reset}"));
    assert_eq!(facts.sandbox, desk_contract::desktop::SandboxMode::On);
    assert_eq!(facts.limits, desk_contract::desktop::LimitsMode::Off);
    assert!(facts.failures.is_empty(), "{facts:?}");
    assert_eq!(facts.broker_uid, NOBODY, "{facts:?}");
    assert_eq!(facts.app_uid, NOBODY, "{facts:?}");
    assert!(facts.shared_namespaces.is_empty(), "{facts:?}");
    assert_eq!(facts.interfaces, ["lo"], "{facts:?}");
    assert!(facts.no_new_privs, "{facts:?}");
    let released = http(
        &socket,
        "DELETE",
        &format!("/v1/sessions/{session}"),
        Some(&token),
        "",
    );
    assert_eq!(released["state"], "released", "{released}");
}

/// One HTTP/1.1 request on the Unix socket `socket`; the JSON body of a 2xx answer.
fn http(
    socket: &Path,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: &str,
) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    let auth = bearer
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: deskbroker\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, payload) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 2"), "{method} {path}: {answer}");
    serde_json::from_str(payload).unwrap_or_else(|error| panic!("{error}: {answer}"))
}
