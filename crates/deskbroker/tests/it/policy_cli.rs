//! `deskbroker policy …` and `serve --policy --policy-pub` as an operator uses them: lint exit
//! codes and rule ids, keygen, sign, verify (and its refusals), then a fake broker serving the
//! signed policy: its digest in the lease answer, and a policy that fails refusing every lease.

use std::path::Path;
use std::process::{Command, Output};

use desk_client::Client;
use desk_contract::ErrorCode;
use desk_contract::api::LeaseRequest;

use crate::support::{FakeServer, deskbroker};

fn policy(dir: &Path, args: &[&str]) -> Output {
    Command::new(deskbroker())
        .current_dir(dir)
        .env("DESKBROKER_STATE_DIR", dir.join("state"))
        .arg("policy")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn author_lint_sign_verify_and_serve_a_policy() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let example = policy(dir, &["example"]);
    assert!(example.status.success());
    let yaml = text(&example.stdout).replace("[librecad]", "[librecad, generic]");
    std::fs::write(dir.join("policy.yaml"), &yaml).unwrap();
    let lint = policy(dir, &["lint", "policy.yaml"]);
    assert_eq!(lint.status.code(), Some(0), "{}", text(&lint.stderr));

    let bad = yaml
        .replace("disposable: true", "disposable: 1")
        .replace("logged_out: true", "logged_out: yes")
        .replace("  - attempt\n", "  - /home/user\n");
    std::fs::write(dir.join("bad.yaml"), bad).unwrap();
    let lint = policy(dir, &["lint", "bad.yaml"]);
    assert_eq!(lint.status.code(), Some(2));
    let stderr = text(&lint.stderr);
    for id in ["POL-005", "POL-013", "POL-042"] {
        assert!(stderr.contains(id), "{id} missing from {stderr}");
    }

    assert!(
        policy(dir, &["keygen", "--out-dir", "keys"])
            .status
            .success()
    );
    let sign = policy(
        dir,
        &[
            "sign",
            "policy.yaml",
            "--key",
            "keys/policy.key",
            "--out",
            "policy.signed.json",
        ],
    );
    assert!(sign.status.success(), "{}", text(&sign.stderr));
    let verify = policy(
        dir,
        &["verify", "policy.signed.json", "--pub", "keys/policy.pub"],
    );
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    let digest = text(&verify.stdout)
        .split_whitespace()
        .nth(2)
        .unwrap()
        .to_string();
    assert_eq!(digest.len(), 64);
    let expired = policy(
        dir,
        &[
            "verify",
            "policy.signed.json",
            "--pub",
            "keys/policy.pub",
            "--at",
            "2031-01-01T00:00:00Z",
        ],
    );
    assert_eq!(expired.status.code(), Some(2));
    assert!(text(&expired.stderr).contains("expired"));
    let signed = std::fs::read_to_string(dir.join("policy.signed.json")).unwrap();
    let altered = signed.replace("\"idle_seconds\":600", "\"idle_seconds\":601");
    assert_ne!(altered, signed);
    std::fs::write(dir.join("altered.json"), altered).unwrap();
    let refused = policy(dir, &["verify", "altered.json", "--pub", "keys/policy.pub"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("signature"),
        "{}",
        text(&refused.stderr)
    );

    let served_root = dir.join("served");
    std::fs::create_dir(&served_root).unwrap();
    let signed_path = dir.join("policy.signed.json").display().to_string();
    let pub_path = dir.join("keys/policy.pub").display().to_string();
    let server = FakeServer::start(
        &served_root,
        &["--policy", &signed_path, "--policy-pub", &pub_path],
    );
    let client = Client::new(server.socket.clone());
    let lease = client
        .lease(&LeaseRequest {
            task_id: "t".into(),
            attempt_id: "a".into(),
            profile: None,
        })
        .await
        .unwrap();
    assert_eq!(lease.policy_sha256.as_deref(), Some(digest.as_str()));
    drop(server);

    let refusing_root = dir.join("refusing");
    std::fs::create_dir(&refusing_root).unwrap();
    let altered_path = dir.join("altered.json").display().to_string();
    let server = FakeServer::start(
        &refusing_root,
        &["--policy", &altered_path, "--policy-pub", &pub_path],
    );
    let client = Client::new(server.socket.clone());
    let error = client
        .lease(&LeaseRequest {
            task_id: "t".into(),
            attempt_id: "a".into(),
            profile: None,
        })
        .await
        .unwrap_err();
    assert_eq!(error.api_body().unwrap().code, ErrorCode::PolicyInvalid);
}
