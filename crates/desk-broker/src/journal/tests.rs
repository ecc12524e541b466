//! Storage failures outside actions are typed.

use desk_contract::api::LeaseRequest;
use desk_contract::{DisplaySize, ErrorCode};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};

use crate::Broker;
use crate::config::BrokerConfig;
use desk_desktop::BackendRequest;

const PROFILE: &str = r#"
name = "fake"
command = ["fake-app", "{attempt}"]
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
"#;

fn lease(attempt_id: &str) -> LeaseRequest {
    LeaseRequest {
        task_id: "task".to_string(),
        attempt_id: attempt_id.to_string(),
        profile: None,
    }
}

#[tokio::test]
async fn a_store_that_cannot_be_written_refuses_a_lease_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut profiles = ProfileSet::default();
    profiles.insert(AppProfile::from_toml("fake", PROFILE).unwrap());
    let mut config = BrokerConfig::new(dir.path(), profiles);
    config.display = DisplaySize {
        width: 64,
        height: 40,
    };
    config.default_profile = "fake".to_string();
    let broker = Broker::open(config, |request: &BackendRequest| {
        let desktop: Box<dyn DesktopBackend> = Box::new(FakeDesktop::new(request.display));
        Ok::<_, BackendError>(desktop)
    })
    .unwrap();
    broker.lease(lease("before")).await.unwrap();
    // Every write now fails as on a read-only or failed disk (SQLITE_READONLY).
    broker
        .inner
        .store
        .lock()
        .execute_batch("PRAGMA query_only = ON")
        .unwrap();
    let error = broker.lease(lease("after")).await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::JournalUnavailable, "{error}");
    assert!(error.to_string().contains("read-only"), "{error}");
}
