//! The client against a real broker served on a Unix socket, with `FakeDesktop` desktops.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use desk_broker::{BackendRequest, Broker, BrokerConfig, FaultHook};
use desk_client::{Client, ClientError};
use desk_contract::api::{ActionRequest, LeaseRequest, ResetRequest, SaveMethod, SessionState};
use desk_contract::{Action, DisplaySize, ErrorCode};
use desk_desktop::fake::{FakeHandle, FakeSave};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};
use desk_server::serve_unix;
use tokio::sync::oneshot;

const PROFILE: &str = r#"
name = "fake"
command = ["fake-app", "{attempt}"]
save_keys = ["ctrl", "s"]
save_timeout_ms = 500
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
"#;

struct Served {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    fake: FakeHandle,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), desk_broker::BrokerError>>,
}

async fn serve() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let mut profiles = ProfileSet::default();
    profiles.insert(AppProfile::from_toml("fake", PROFILE).unwrap());
    let mut config = BrokerConfig::new(dir.path().join("state"), profiles);
    config.display = DisplaySize {
        width: 320,
        height: 200,
    };
    config.default_profile = "fake".to_string();
    config.fault = FaultHook::None;
    let fake = FakeHandle::default();
    fake.set_save(FakeSave::AttemptFromArgv);
    let handle = fake.clone();
    let broker = Broker::open(config, move |request: &BackendRequest| {
        let desktop: Box<dyn DesktopBackend> =
            Box::new(FakeDesktop::with_handle(request.display, handle.clone()));
        Ok::<_, BackendError>(desktop)
    })
    .unwrap();
    let socket = dir.path().join("broker.sock");
    let (stop, stopped) = oneshot::channel::<()>();
    let server_socket = socket.clone();
    let task = tokio::spawn(async move {
        serve_unix(&server_socket, broker, async {
            let _ = stopped.await;
        })
        .await
    });
    for _ in 0..200 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Served {
        _dir: dir,
        socket,
        fake,
        stop: Some(stop),
        task,
    }
}

impl Served {
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.unwrap().unwrap();
        assert!(
            !self.socket.exists(),
            "the socket file is removed on shutdown"
        );
    }
}

fn action(request_id: &str, index: u64, json: serde_json::Value) -> ActionRequest {
    ActionRequest {
        request_id: request_id.to_string(),
        expected_action_index: index,
        screenshot_id: None,
        action: serde_json::from_value::<Action>(json).unwrap(),
    }
}

#[tokio::test]
async fn lifecycle_over_the_unix_socket() {
    let served = serve().await;
    let mode = std::fs::metadata(&served.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let client = Client::new(&served.socket);

    let lease = client
        .lease(&LeaseRequest {
            task_id: "t".into(),
            attempt_id: "a".into(),
            profile: None,
        })
        .await
        .unwrap();
    assert_eq!(lease.state, SessionState::Leased);
    let session = lease.session_id;
    let reset = client
        .reset(
            &session,
            &ResetRequest {
                request_id: "r".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(reset.screenshot.width, 320);
    let shot = client.screenshot(&session).await.unwrap();
    assert!(shot.sequence > reset.screenshot.sequence);

    let click = serde_json::json!({"type": "click", "x": 3, "y": 4, "intent": "select"});
    let first = client
        .act(&session, &action("a0", 0, click.clone()))
        .await
        .unwrap();
    assert!(!first.idempotent_replay);
    let again = client
        .act(&session, &action("a0", 0, click.clone()))
        .await
        .unwrap();
    assert!(again.idempotent_replay);
    assert_eq!(served.fake.n_inputs(), 1);

    let refused = client
        .act(&session, &action("a1", 5, click))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ClientError::Api(ref body) if body.code == ErrorCode::ActionSequenceConflict),
        "{refused:?}"
    );
    let raw = serde_json::json!({"request_id": "bad", "expected_action_index": 1,
        "action": {"type": "click", "x": 1000, "y": 1, "intent": "off screen"}});
    let refused = client.act_json(&session, &raw).await.unwrap_err();
    assert_eq!(
        refused.api_body().map(|body| body.code),
        Some(ErrorCode::InvalidAction)
    );

    let missing = client.artifact(&session).await.unwrap_err();
    assert_eq!(
        missing.api_body().map(|body| body.code),
        Some(ErrorCode::CheckpointRequired)
    );
    let checkpoint = client.checkpoint(&session).await.unwrap();
    assert_eq!(checkpoint.method, SaveMethod::ControllerSave);
    let artifact = client.artifact(&session).await.unwrap();
    assert_eq!(artifact.sha256, checkpoint.sha256);

    let done = serde_json::json!({"type": "done", "intent": "finished"});
    client
        .act(&session, &action("a-done", 1, done))
        .await
        .unwrap();
    let status = client.status(&session).await.unwrap();
    assert_eq!(status.state, SessionState::Done);
    assert_eq!(status.action_count, 2);
    assert!(client.events(&session).await.unwrap().lines().count() >= 4);
    assert_eq!(
        client.frame_events(&session).await.unwrap().lines().count(),
        3
    );
    assert_eq!(client.openapi().await.unwrap()["openapi"], "3.1.0");

    assert!(client.release(&session).await.unwrap().released_now);
    assert!(!client.release(&session).await.unwrap().released_now);
    // An unknown session gets the answer of a wrong lease token: no existence oracle.
    let gone = client.status("s_nope").await.unwrap_err();
    assert_eq!(
        gone.api_body().map(|body| body.code),
        Some(ErrorCode::Unauthorized)
    );
    // Lease tokens are shared by the clients of one socket, unless a client keeps its own.
    let lease = client
        .lease(&LeaseRequest {
            task_id: "t".into(),
            attempt_id: "tokens".into(),
            profile: None,
        })
        .await
        .unwrap();
    let other = Client::new(&served.socket);
    assert_eq!(
        other.lease_token(&lease.session_id),
        Some(lease.lease_token.clone())
    );
    other.status(&lease.session_id).await.unwrap();
    let private = Client::new(&served.socket).with_private_tokens();
    assert_eq!(
        private
            .status(&lease.session_id)
            .await
            .unwrap_err()
            .api_body()
            .map(|b| b.code),
        Some(ErrorCode::Unauthorized)
    );
    private.set_lease_token(&lease.session_id, lease.lease_token.clone());
    private.status(&lease.session_id).await.unwrap();
    assert!(!format!("{private:?}").contains(lease.lease_token.expose()));
    served.stop().await;
}

#[tokio::test]
async fn connection_failures_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::new(dir.path().join("missing.sock"));
    let error = client.status("s_1").await.unwrap_err();
    assert!(matches!(error, ClientError::Connect { .. }), "{error:?}");
    let error = client.status("../etc").await.unwrap_err();
    assert!(matches!(error, ClientError::Request { .. }), "{error:?}");
}

#[tokio::test]
async fn a_live_socket_is_not_stolen_and_a_stale_one_is_replaced() {
    let served = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::open(
        BrokerConfig::new(dir.path(), ProfileSet::default()),
        |_: &BackendRequest| -> Result<Box<dyn DesktopBackend>, BackendError> {
            Err(BackendError::DesktopFailed("unused".into()))
        },
    )
    .unwrap();
    let error = serve_unix(&served.socket, broker.clone(), async {})
        .await
        .unwrap_err();
    assert!(error.to_string().contains("bind"), "{error}");

    // A socket file nobody listens on is removed and replaced.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    serve_unix(&stale, broker, async {}).await.unwrap();
    served.stop().await;
}

/// A squatter's listener: binds `socket`, accepts one connection and prints how many bytes it
/// received before the client hung up (perl-base is on every Debian machine).
const SQUATTER: &str = r#"
use IO::Socket::UNIX; use IO::Select;
my $server = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $ARGV[0], Listen => 5)
    or die "bind: $!";
$| = 1; print "ready\n";
my $client = $server->accept or die "accept: $!";
my $n = 0; my $buffer;
if (IO::Select->new($client)->can_read(5)) { $n = sysread($client, $buffer, 65536) // 0; }
print "$n\n";
"#;

#[tokio::test]
async fn the_client_sends_nothing_through_a_socket_it_cannot_trust() {
    use std::io::BufRead as _;
    use std::os::unix::process::CommandExt as _;

    // A directory others can write: refused before connecting.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("broker.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let client = Client::new(&socket);
    client.set_lease_token("s_1", desk_contract::api::LeaseToken::new("secret-token"));
    let error = client.status("s_1").await.unwrap_err();
    assert!(
        matches!(&error, ClientError::UntrustedSocket { reason, .. } if reason.contains("0777")),
        "{error:?}"
    );
    assert!(
        listener.accept().is_err(),
        "the client did not even connect"
    );

    // A trusted directory, but the listener runs as another user: refused after SO_PEERCRED,
    // before a byte is written.
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: the listener-uid case needs root to run a listener as another uid");
        return;
    }
    let squat = dir.path().join("squat.sock");
    let mut squatter = std::process::Command::new("perl")
        .args(["-e", SQUATTER])
        .arg(&squat)
        .uid(54_321)
        .gid(54_321)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(squatter.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let client = Client::new(&squat);
    client.set_lease_token("s_1", desk_contract::api::LeaseToken::new("secret-token"));
    let error = client.status("s_1").await.unwrap_err();
    assert!(
        matches!(&error, ClientError::UntrustedSocket { reason, .. } if reason.contains("uid 54321")),
        "{error:?}"
    );
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "0",
        "nothing reached the squatter"
    );
    squatter.wait().unwrap();
}
