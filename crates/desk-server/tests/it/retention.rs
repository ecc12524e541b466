//! The policy's frame retention at release: by default (no `retention` in the policy) release
//! deletes the frames with the rest of the attempt data and the bundle is stamped
//! `delete_at_release`; with `retention: {frames: keep}` the frames stay in the evidence after
//! release, the bundle carries them and is stamped `keep`. Either way the artifact and logs go.

use axum::http::StatusCode;

use crate::policy::{signed, with_policy};
use crate::support::{Harness, click};

/// A ready session with one click, released; returns the state's evidence directory of it.
async fn released_after_a_click(harness: &Harness) -> (String, std::path::PathBuf) {
    let id = harness.ready().await;
    let (status, body) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let evidence = harness.dir.path().join("evidence").join(&id);
    assert!(
        std::fs::read_dir(evidence.join("frames")).unwrap().count() > 0,
        "frames before release"
    );
    let (status, released) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{released}");
    (id, evidence)
}

fn export(harness: &Harness, id: &str) -> (desk_evidence::Manifest, desk_evidence::VerifyReport) {
    let bundle = harness.dir.path().join(format!("bundle-{id}"));
    let session = desk_broker::SessionId::parse(id).unwrap();
    let manifest =
        desk_broker::export_evidence(harness.dir.path(), &session, None, &bundle).unwrap();
    let report = desk_broker::verify_evidence(
        &bundle,
        &desk_broker::public_key_path(harness.dir.path()),
        None,
    )
    .unwrap();
    (manifest, report)
}

/// The evidence directory's entries, sorted.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn by_default_release_deletes_the_frames_and_the_bundle_says_so() {
    let harness = with_policy(signed(&[], &crate::policy::policy_key()));
    let (id, evidence) = released_after_a_click(&harness).await;
    assert_eq!(entries(&evidence), ["evidence.ndjson"]);
    let (manifest, report) = export(&harness, &id);
    assert_eq!(
        manifest.frame_retention.as_deref(),
        Some("delete_at_release")
    );
    assert_eq!(report.n_frames, 0);
    assert!(
        manifest
            .files
            .iter()
            .all(|file| !file.path.starts_with("frames/"))
    );
}

#[tokio::test]
async fn a_policy_that_keeps_frames_keeps_them_after_release_and_stamps_the_bundle() {
    let policy = signed(
        &[(
            "clipboard: none\n",
            "clipboard: none\nretention: {frames: keep}\n",
        )],
        &crate::policy::policy_key(),
    );
    let harness = with_policy(policy);
    let (id, evidence) = released_after_a_click(&harness).await;
    // The frames stay; the artifact and everything else but the journal went.
    assert_eq!(entries(&evidence), ["evidence.ndjson", "frames"]);
    let kept = std::fs::read_dir(evidence.join("frames")).unwrap().count();
    assert!(kept >= 1, "the click's frame: {kept}");
    let (manifest, report) = export(&harness, &id);
    assert_eq!(manifest.frame_retention.as_deref(), Some("keep"));
    assert_eq!(report.frame_retention.as_deref(), Some("keep"));
    assert_eq!(report.n_frames, kept);
    assert!(
        !report.not_retained.is_empty(),
        "logs and artifact still go"
    );
}
