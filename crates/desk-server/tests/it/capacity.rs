//! Lease admission by capacity (the session cap and the memory budget over the profiles'
//! estimates), the health listener's readiness, and drain.

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use desk_desktop::AppProfile;
use desk_server::{Peer, health_router};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::Harness;

/// A fake profile named `name` whose `[limits] memory_mib` is `mib`.
fn profile(name: &str, mib: u64) -> AppProfile {
    let text = format!(
        "name = \"{name}\"\ncommand = [\"fake-app\", \"{{attempt}}\"]\nsave_keys = [\"ctrl\", \"s\"]\n\
         [attempt]\nfilename = \"attempt.txt\"\ntemplate = \"initial\\n\"\n[window]\nmaximize = true\n\
         [limits]\nmemory_mib = {mib}\n"
    );
    AppProfile::from_toml(name, &text).unwrap()
}

/// A broker offering `small` (300 MiB), `big` (1000 MiB) and the harness's `fake` (the 2 GiB
/// default), with `adjust` applied.
fn harness(adjust: impl FnOnce(&mut desk_broker::BrokerConfig)) -> Harness {
    Harness::with(|config| {
        config.profiles.insert(profile("small", 300));
        config.profiles.insert(profile("big", 1000));
        adjust(config);
    })
}

/// A lease as the harness's own peer: status, `Retry-After` and body.
async fn lease(
    harness: &Harness,
    attempt: &str,
    profile: &str,
) -> (StatusCode, Option<String>, Value) {
    let request = Request::builder()
        .method("POST")
        .uri("/v1/leases")
        .header("content-type", "application/json")
        .extension(ConnectInfo(Peer::current_user()))
        .body(Body::from(
            json!({"task_id": "t", "attempt_id": attempt, "profile": profile}).to_string(),
        ))
        .unwrap();
    let response = harness.app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .map(|value| value.to_str().unwrap().to_string());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    if status == StatusCode::OK {
        crate::support::remember_lease_token(&text);
    }
    let body: Value = serde_json::from_str(&text).unwrap();
    (status, retry_after, body)
}

/// `GET /readyz` on the health router: status and the capacity.
async fn readyz(harness: &Harness) -> (StatusCode, Value) {
    let request = Request::builder()
        .uri("/readyz")
        .body(Body::empty())
        .unwrap();
    let response = health_router(harness.broker.clone())
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn assert_refused_for_capacity(answer: &(StatusCode, Option<String>, Value), why: &str) {
    let (status, retry_after, body) = answer;
    assert_eq!(*status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "lease_conflict", "{body}");
    assert_eq!(retry_after.as_deref(), Some("10"), "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(why), "{message:?} does not say {why:?}");
}

#[tokio::test]
async fn leases_are_admitted_by_the_sum_of_their_profiles_memory() {
    let harness = harness(|config| config.memory_budget_mib = Some(1400));
    // The default profile alone (2048 MiB) is over the budget: refused, nothing leased.
    let refused = lease(&harness, "a0", "fake").await;
    assert_refused_for_capacity(&refused, "a fake desktop needs 2048 MiB");
    assert_eq!(readyz(&harness).await.1["live_sessions"], 0);

    let (status, _, big) = lease(&harness, "a1", "big").await;
    assert_eq!(status, StatusCode::OK, "{big}");
    let (status, _, small) = lease(&harness, "a2", "small").await;
    assert_eq!(status, StatusCode::OK, "{small}");
    // 1000 + 300 reserved; another 300 would make 1600 > 1400.
    let refused = lease(&harness, "a3", "small").await;
    assert_refused_for_capacity(&refused, "1300 of 1400 MiB are reserved by 2 live sessions");
    let (status, capacity) = readyz(&harness).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{capacity}");
    assert_eq!(capacity["reserved_mib"], 1300);
    assert_eq!(capacity["memory_budget_mib"], 1400);
    assert_eq!(capacity["ready"], false);

    // A replay of a held lease is no new desktop: admitted at a full budget.
    let (status, _, replay) = lease(&harness, "a1", "big").await;
    assert_eq!(
        (status, &replay["idempotent_replay"]),
        (StatusCode::OK, &json!(true))
    );

    // Releasing the big one frees its estimate: the refused attempt now fits.
    let id = big["session_id"].as_str().unwrap();
    let (status, _) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = lease(&harness, "a3", "small").await;
    assert_eq!(status, StatusCode::OK);
    let (status, capacity) = readyz(&harness).await;
    assert_eq!(
        (status, &capacity["reserved_mib"]),
        (StatusCode::OK, &json!(600))
    );
}

#[tokio::test]
async fn readiness_follows_the_session_cap() {
    let harness = harness(|config| config.max_sessions = 1);
    let (status, capacity) = readyz(&harness).await;
    assert_eq!(status, StatusCode::OK, "{capacity}");
    assert_eq!(
        (&capacity["ready"], &capacity["max_sessions"]),
        (&json!(true), &json!(1))
    );
    let (status, _, leased) = lease(&harness, "a1", "small").await;
    assert_eq!(status, StatusCode::OK);
    let (status, capacity) = readyz(&harness).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{capacity}");
    assert_eq!(capacity["reason"], "all 1 desktops are leased");
    assert_refused_for_capacity(
        &lease(&harness, "a2", "small").await,
        "all 1 desktops are leased",
    );
    let id = leased["session_id"].as_str().unwrap();
    harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(readyz(&harness).await.0, StatusCode::OK);
    // The liveness route answers whatever the capacity.
    let response = health_router(harness.broker.clone())
        .oneshot(
            Request::builder()
                .uri("/livez")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn drain_stops_leasing_and_counts_the_live_sessions_down() {
    let harness = harness(|_| {});
    let (_, _, first) = lease(&harness, "a1", "fake").await;
    let (status, drained) = harness.call("POST", "/v1/drain", None).await;
    assert_eq!(status, StatusCode::OK, "{drained}");
    assert_eq!(
        (
            &drained["draining"],
            &drained["ready"],
            &drained["live_sessions"]
        ),
        (&json!(true), &json!(false), &json!(1))
    );
    assert_refused_for_capacity(&lease(&harness, "a2", "small").await, "draining");
    let (status, capacity) = readyz(&harness).await;
    assert_eq!(
        (status, &capacity["reason"]),
        (StatusCode::SERVICE_UNAVAILABLE, &json!("draining"))
    );
    // The live session goes on while the broker drains.
    let id = first["session_id"].as_str().unwrap();
    let (status, reset) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/reset"),
            Some(json!({"request_id": "r1"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    // Idempotent: a second drain counts zero, and the broker still refuses to lease.
    let (status, drained) = harness.call("POST", "/v1/drain", None).await;
    assert_eq!(
        (status, &drained["live_sessions"], &drained["draining"]),
        (StatusCode::OK, &json!(0), &json!(true))
    );
    assert_refused_for_capacity(&lease(&harness, "a3", "small").await, "draining");
}

#[tokio::test]
async fn drain_is_an_operator_route() {
    let harness = harness(|_| {});
    // A TLS peer with a client certificate may lease but not drain (like the kill switch).
    let request = Request::builder()
        .method("POST")
        .uri("/v1/drain")
        .extension(ConnectInfo(Peer::Tls {
            client_cert_sha256: Some("00".repeat(32)),
        }))
        .body(Body::empty())
        .unwrap();
    let response = harness.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let (status, capacity) = readyz(&harness).await;
    assert_eq!(
        (status, &capacity["draining"]),
        (StatusCode::OK, &json!(false))
    );
}
