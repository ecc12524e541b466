//! A real sandboxed session whose attempt file was replaced by a link (to a private file of the
//! host, to the broker's `/proc/self/environ`) checkpoints nothing: `artifact_invalid`, no
//! byte of the target in any answer, `GET /artifact` stays `checkpoint_required`.

use std::os::unix::fs::symlink;

use crate::probe::ProbeSession;
use crate::support::xvfb_available;

fn refusal(error: desk_client::ClientError) -> (String, String) {
    match error {
        desk_client::ClientError::Api(body) => (body.code.as_str().to_string(), body.message),
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_attempt_file_is_refused_in_a_real_session() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("linked").await;
    let (root, broker, client, session) =
        (&probe.root, &probe.broker, &probe.client, &probe.session);
    let secret = root.path().join("gold.dxf");
    std::fs::write(&secret, "PRIVATE-GOLD-5c1e").unwrap();
    let attempt = broker
        .session_dir(session)
        .join("workspace/attempt/attempt.txt");
    for target in [secret.as_path(), std::path::Path::new("/proc/self/environ")] {
        let _ = std::fs::remove_file(&attempt);
        symlink(target, &attempt).unwrap();
        let (code, message) = refusal(client.checkpoint(session).await.unwrap_err());
        assert_eq!(code, "artifact_invalid", "{message}");
        assert!(message.contains("symbolic link"), "{message}");
        assert!(!message.contains("PRIVATE-GOLD") && !message.contains("PATH="));
        let (code, _) = refusal(client.artifact(session).await.unwrap_err());
        assert_eq!(code, "checkpoint_required");
    }
    client.release(session).await.unwrap();
}
