//! Honest results: a rollout the infrastructure ended is `infra_error`, excluded from the mean
//! and counted separately; every result carries the run's software versions and the digest of
//! the workspace policy its session was leased under.

use desk_harness::{Agent, AgentError, RolloutStatus, SoftwareVersions, SuiteConfig, run_suite};

use crate::support::{Scripted, Served, batch, click, done};

#[tokio::test]
async fn infra_errors_are_counted_apart_from_the_mean() {
    let served = Served::start().await;
    let corpus = served.dir.path().join("corpus");
    let tasks = desk_cad::write_corpus_version(
        desk_cad::CorpusVersion::V1,
        &corpus.join("public"),
        &corpus.join("private"),
    )
    .unwrap();
    let out = served.dir.path().join("out");
    let versions = SoftwareVersions {
        app: "fake-app 1".into(),
        deskbroker_commit: "0123abc".into(),
        ..SoftwareVersions::default()
    };
    let config = SuiteConfig {
        public_dir: corpus.join("public"),
        gold_dir: corpus.join("private"),
        out_dir: out.clone(),
        broker_version: "0.0.0-test".into(),
        versions: versions.clone(),
        attempt_id: "infra".into(),
        profile: None,
        max_actions: None,
        wall_time: None,
        require_sandbox: false,
    };
    // The second task's desktop hands off an app window that is not maximized: reset fails.
    let fake = served.fake.clone();
    let mut factory = |task: &desk_cad::Task| -> Result<Box<dyn Agent>, AgentError> {
        fake.set_unmaximized_handoff(task.id.as_str() == "task-002");
        Ok(Box::new(Scripted::new(vec![batch(
            "c1",
            vec![click(10, 10), done()],
        )])))
    };
    let (summary, records) = run_suite(&served.client(), &tasks[..2], &config, &mut factory)
        .await
        .unwrap();
    assert_eq!(records[1].status, RolloutStatus::SetupFailed);
    assert!(records[1].infra_error);
    assert!(!records[0].infra_error);
    assert_eq!(summary.n_rollouts, 2);
    assert_eq!(summary.n_infra_error, 1);
    assert_eq!(
        summary.mean_score,
        records[0].score.score(),
        "task-002 is not averaged"
    );
    assert_eq!(records[0].versions, versions);
    assert_eq!(summary.versions, versions);
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(written["n_infra_error"], 1);
    assert_eq!(written["rollouts"][1]["infra_error"], true);
    assert_eq!(written["versions"]["deskbroker_commit"], "0123abc");
    // Every result names the workspace policy its session was leased under.
    let policy = records[0].policy_sha256.clone().expect("a policy digest");
    assert_eq!(policy.len(), 64);
    assert_eq!(records[1].policy_sha256.as_deref(), Some(policy.as_str()));
    assert_eq!(written["rollouts"][0]["policy_sha256"], policy.as_str());
    let rollout: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join(written["rollouts"][0]["record"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    assert_eq!(rollout["policy_sha256"], policy.as_str());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("1 infra_error"), "the report shows the count");
    assert!(html.contains("fake-app 1"), "the report shows the versions");
    let table = desk_harness::format_table(&summary);
    assert!(table.contains("1 infra_error"), "{table}");
    served.stop().await;
}
