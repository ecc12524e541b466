//! Unit tests of the pure helpers, the store's recovery, the error mapping and authorization.
//! Over 400 lines: most of it is `auth`, table-like checks of crate-private functions (route
//! classification, bearer parsing, scopes, token hashes) that only a unit test can reach.

use desk_contract::ErrorCode;
use serde_json::json;

use crate::error::BrokerError;
use crate::util::rfc3339;

#[test]
fn rfc3339_formats_known_instants() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(rfc3339(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
}

/// The request digest journals held before RFC 8785: sorted keys at every level, serde_json's
/// scalars. Kept here only as the reference the replay promise is checked against.
fn sorted_keys_json(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|key| format!("{}:{}", json!(key), sorted_keys_json(&map[key])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        serde_json::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(sorted_keys_json).collect();
            format!("[{}]", items.join(","))
        }
        scalar => scalar.to_string(),
    }
}

/// A request id journaled with the old sorted-keys digest is still the same request: for
/// every action type, with intents full of escapes and non-ASCII text, the RFC 8785 digest
/// equals the old one (and a different action still differs).
#[test]
fn request_digests_match_journals_written_with_sorted_keys_json() {
    let intent = "quote \" \\ tab\t nl\n ctl\u{1f} del\u{7f} é ✓ 🦀 \u{2028}";
    let actions = [
        json!({"type": "click", "x": 10, "y": 20, "button": "right", "modifiers": ["shift"], "intent": intent}),
        json!({"type": "double_click", "x": 0, "y": 0, "intent": intent}),
        json!({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}], "duration_ms": 120, "modifiers": ["ctrl", "alt"], "intent": intent}),
        json!({"type": "move", "x": 5, "y": 6, "duration_ms": 0, "intent": intent}),
        json!({"type": "scroll", "dx": -1, "dy": 3, "intent": intent}),
        json!({"type": "key", "keys": ["ctrl", "s"], "intent": intent}),
        json!({"type": "type", "text": "Hello, \"world\" \\ ~", "intent": intent}),
        json!({"type": "wait", "milliseconds": 250, "intent": intent}),
        json!({"type": "done", "intent": intent}),
    ];
    let mut digests = std::collections::BTreeSet::new();
    for action in actions {
        let request = desk_contract::api::ActionRequest {
            request_id: "r-1".to_string(),
            expected_action_index: 9_007_199_254_740_991,
            screenshot_id: None,
            action: serde_json::from_value(action.clone()).unwrap(),
        };
        let old = json!({
            "expected_action_index": request.expected_action_index,
            "action": request.action,
        });
        let old = crate::util::sha256_hex(sorted_keys_json(&old).as_bytes());
        let new = crate::actions::request_digest(&request).unwrap();
        assert_eq!(new, old, "{action}");
        digests.insert(new);
    }
    assert_eq!(digests.len(), 9, "different actions keep different digests");
}

#[test]
fn server_errors_hide_their_cause() {
    let error = BrokerError::Io {
        operation: "read",
        path: "/secret/path".into(),
        source: std::io::Error::other("disk on fire"),
    };
    let body = error.to_body();
    assert_eq!(body.code, ErrorCode::Internal);
    assert!(!body.message.contains("secret"), "{}", body.message);
    let refused = BrokerError::LeaseExpired("s_1".into()).to_body();
    assert_eq!(refused.code, ErrorCode::LeaseExpired);
    assert!(refused.message.contains("s_1"));
}

#[test]
fn event_log_records_round_trip() {
    use desk_contract::events::{
        EventRecord, FrameEvent, FrameEventsRow, InputEvent, InputEventKind, Origin, Provenance,
    };
    let event = InputEvent {
        timestamp_ms: 5,
        kind: InputEventKind::MouseMove { x: 1, y: 2 },
    };
    let text = serde_json::to_string(&event).unwrap();
    assert_eq!(serde_json::from_str::<InputEvent>(&text).unwrap(), event);
    let record = EventRecord {
        event,
        source_pid: -1,
        action_index: Some(3),
        provenance: Provenance::BrokerAction,
        origin: Origin::Release,
        step_index: None,
    };
    let text = serde_json::to_string(&record).unwrap();
    assert!(
        text.contains(r#""sourcePid":-1"#)
            && text.contains(r#""actionIndex":3"#)
            && text.contains(r#""provenance":"broker_action""#)
            && text.contains(r#""origin":"release""#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<EventRecord>(&text).unwrap(), record);
    let row = FrameEventsRow {
        frame: 2,
        video_t_ms: 10,
        events: vec![FrameEvent {
            record,
            video_t_ms: 4,
            t_in_frame_ms: 1,
        }],
    };
    let text = serde_json::to_string(&row).unwrap();
    assert_eq!(serde_json::from_str::<FrameEventsRow>(&text).unwrap(), row);
}

mod auth {
    //! The authorization decisions, each alone, and the layer in front of a real router.

    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
    use desk_contract::DisplaySize;
    use desk_contract::api::SessionState;
    use desk_desktop::fake::FakeHandle;
    use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};
    use desk_evidence::SigningKey;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};
    use tower::ServiceExt;

    use crate::auth::{
        Peer, Target, admit_peer, bearer, check_scope, check_session_state, classify, target_of,
        token_matches,
    };
    use crate::config::AuthConfig;
    use crate::credential::{self, Scope};
    use crate::error::BrokerError;
    use crate::store::SessionRow;
    use crate::util::sha256_hex;
    use crate::{BackendRequest, Broker, BrokerConfig, FaultHook, router};

    const NOW: u64 = 1_800_000_000_000;

    fn code(result: Result<(), BrokerError>) -> Option<(u16, &'static str)> {
        result.err().map(|error| {
            let (status, code) = error.status_and_code();
            (status.as_u16(), code.as_str())
        })
    }

    #[test]
    fn routes_are_classified_by_path() {
        let session = |id: &str, keeps: bool| Target::Session {
            id: crate::ids::sid(id),
            keeps_after_end: keeps,
        };
        let cases = [
            (Method::GET, "/v1/sessions/s_1", session("s_1", true)),
            (Method::DELETE, "/v1/sessions/s_1", session("s_1", true)),
            (
                Method::POST,
                "/v1/sessions/s_1/actions",
                session("s_1", false),
            ),
            (
                Method::GET,
                "/v1/sessions/s_1/events",
                session("s_1", false),
            ),
            (Method::POST, "/v1/sessions/s_1", session("s_1", false)),
            (Method::GET, "/v1/sessions/s%2F1/reset", Target::BadSession),
            (Method::GET, "/v1/sessions//reset", Target::BadSession),
            (Method::GET, "/v1/sessions/", Target::BadSession),
            (Method::POST, "/v1/leases", Target::Scoped(Scope::Lease)),
            (Method::GET, "/v1/metrics", Target::Scoped(Scope::Metrics)),
            (Method::GET, "/v1/openapi.json", Target::Open),
            (Method::GET, "/v1/nope", Target::Open),
        ];
        for (method, path, expected) in cases {
            assert_eq!(classify(&method, path), expected, "{method} {path}");
        }
    }

    #[test]
    fn the_matched_route_overrides_a_misleading_raw_path() {
        let post = Method::POST;
        let bad = Target::BadSession;
        assert_eq!(
            target_of(
                &post,
                "//v1/sessions/s_1/actions",
                Some("/v1/sessions/{id}/actions")
            ),
            bad
        );
        assert_eq!(
            target_of(
                &post,
                "/v1/sessions/s_1/actions",
                Some("/v1/sessions/{id}/actions")
            ),
            classify(&post, "/v1/sessions/s_1/actions")
        );
        assert_eq!(
            target_of(&post, "//v1/leases", Some("/v1/leases")),
            Target::Scoped(Scope::Lease)
        );
        assert_eq!(target_of(&post, "/v1/nope", None), Target::Open);
    }

    #[test]
    fn bearer_tokens_are_parsed_strictly() {
        let headers = |values: &[&str]| {
            let mut map = HeaderMap::new();
            for value in values {
                map.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        assert_eq!(bearer(&headers(&[])).unwrap(), None);
        assert_eq!(bearer(&headers(&["Bearer abc"])).unwrap(), Some("abc"));
        assert_eq!(bearer(&headers(&["bearer abc"])).unwrap(), Some("abc"));
        for bad in [
            &["Basic abc"][..],
            &["Bearer "],
            &["Bearer"],
            &["abc"],
            &["Bearer a", "Bearer b"],
        ] {
            let error = bearer(&headers(bad)).unwrap_err();
            assert!(!error.to_string().contains("abc"), "{error}");
            assert_eq!(error.status_and_code().0, StatusCode::UNAUTHORIZED);
        }
    }

    #[test]
    fn peers_are_admitted_by_uid_or_tls() {
        let config = AuthConfig {
            allowed_uids: vec![1000],
            orchestrator_key: None,
            reviewer_key: None,
        };
        let unix = |uid| Peer::Unix { uid };
        assert_eq!(code(admit_peer(&config, Some(&unix(Some(1000))))), None);
        assert_eq!(
            code(admit_peer(&config, Some(&unix(Some(0))))),
            Some((403, "unauthorized"))
        );
        assert_eq!(
            code(admit_peer(&config, Some(&unix(None)))),
            Some((403, "unauthorized"))
        );
        assert_eq!(code(admit_peer(&config, None)), Some((403, "unauthorized")));
        let tls = Peer::Tls {
            client_cert_sha256: None,
        };
        assert_eq!(code(admit_peer(&config, Some(&tls))), None);
        assert_eq!(
            AuthConfig::default().allowed_uids,
            vec![nix::unistd::geteuid().as_raw()]
        );
    }

    #[test]
    fn scoped_routes_need_a_client_cert_or_a_scoped_credential() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let other_key = SigningKey::from_bytes(&[8; 32]);
        let config = AuthConfig {
            allowed_uids: vec![],
            orchestrator_key: Some(key.verifying_key()),
            reviewer_key: None,
        };
        let with_cert = Peer::Tls {
            client_cert_sha256: Some("ab".into()),
        };
        let anonymous = Peer::Tls {
            client_cert_sha256: None,
        };
        let unix = Peer::Unix { uid: Some(1) };
        let issue = |key: &SigningKey, scope: &[Scope], iat: u64, ttl: u64| {
            credential::issue(key, "ci", scope, iat, ttl).unwrap()
        };
        let lease = issue(&key, &[Scope::Lease], NOW - 1000, 60_000);
        let metrics = issue(&key, &[Scope::Metrics], NOW - 1000, 60_000);
        let expired = issue(&key, &[Scope::Lease], NOW - 120_000, 60_000);
        let future = issue(&key, &[Scope::Lease], NOW + 3_600_000, 60_000);
        let forged = issue(&other_key, &[Scope::Lease], NOW - 1000, 60_000);
        let (payload, signature) = lease.split_once('.').unwrap();
        let mut tampered_payload = payload.to_string();
        tampered_payload.replace_range(2..3, if &payload[2..3] == "A" { "B" } else { "A" });
        let tampered = format!("{tampered_payload}.{signature}");

        let check = |peer: &Peer, token: Option<&str>| {
            code(check_scope(&config, peer, Scope::Lease, token, NOW))
        };
        assert_eq!(check(&unix, None), None);
        assert_eq!(check(&with_cert, None), None);
        assert_eq!(check(&anonymous, Some(&lease)), None);
        let refused = Some((401, "unauthorized"));
        for (name, token) in [
            ("none", None),
            ("wrong scope", Some(metrics.as_str())),
            ("expired", Some(expired.as_str())),
            ("not yet valid", Some(future.as_str())),
            ("other key", Some(forged.as_str())),
            ("tampered", Some(tampered.as_str())),
            ("garbage", Some("garbage")),
            ("lease token shape", Some("abc.def")),
        ] {
            assert_eq!(check(&anonymous, token), refused, "{name}");
        }
        let without_key = AuthConfig {
            orchestrator_key: None,
            ..config.clone()
        };
        assert_eq!(
            code(check_scope(
                &without_key,
                &anonymous,
                Scope::Lease,
                Some(&lease),
                NOW
            )),
            refused
        );
    }

    #[test]
    fn credentials_refuse_non_canonical_payloads_and_long_lifetimes() {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let key = SigningKey::from_bytes(&[9; 32]);
        // Validly signed, but not the canonical encoding of its claims (key order).
        let payload = br#"{"v":1,"sub":"ci","scope":["lease"],"iat_ms":1800000000000,"exp_ms":1800000060000}"#;
        let text = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(key.sign_bytes(payload))
        );
        let error = credential::verify(&key.verifying_key(), &text, NOW).unwrap_err();
        assert!(error.to_string().contains("canonical"), "{error}");
        assert!(credential::issue(&key, "ci", &[Scope::Lease], NOW, 0).is_err());
        assert!(
            credential::issue(&key, "ci", &[Scope::Lease], NOW, credential::MAX_TTL_MS + 1)
                .is_err()
        );
        assert!(credential::issue(&key, "ci", &[], NOW, 1000).is_err());
        let good = credential::issue(&key, "ci", &[Scope::Lease], NOW, 1000).unwrap();
        let claims = credential::verify(&key.verifying_key(), &good, NOW).unwrap();
        assert_eq!((claims.sub.as_str(), claims.exp_ms), ("ci", NOW + 1000));
        assert!(credential::verify(&key.verifying_key(), &good, NOW + 1000).is_err());
        assert_eq!(credential::parse_ttl_ms("15m"), Some(900_000));
        assert_eq!(credential::parse_ttl_ms("2h"), Some(7_200_000));
        assert_eq!(credential::parse_ttl_ms("15"), None);
        assert_eq!(credential::parse_ttl_ms("m"), None);
    }

    #[test]
    fn lease_tokens_match_only_their_hashes() {
        let stored = vec![sha256_hex(b"first"), sha256_hex(b"second")];
        assert!(token_matches(Some("first"), &stored));
        assert!(token_matches(Some("second"), &stored));
        assert!(!token_matches(Some("third"), &stored));
        assert!(
            !token_matches(Some(&stored[0]), &stored),
            "the hash is not the token"
        );
        assert!(!token_matches(None, &stored));
        assert!(!token_matches(Some("first"), &[]));
    }

    fn session(state: SessionState, expires_at_ms: u64, expired: bool) -> SessionRow {
        SessionRow {
            id: crate::ids::sid("s_1"),
            task_id: "t".into(),
            attempt_id: "a".into(),
            profile: "p".into(),
            lifecycle: crate::session::Lifecycle::from_stored(crate::session::StoredLifecycle {
                state,
                expired,
                error_code: None,
                error_message: None,
                next_action_index: 0,
            }),
            created_at_ms: 0,
            expires_at_ms,
            last_sequence: 0,
            reset_request_id: None,
            reset_response: None,
            reset_sha: None,
            attempt_path: None,
            handoff_ms: None,
            last_frame_ms: None,
            checkpoint_sha: None,
            checkpoint_size: None,
            checkpoint_method: None,
            session_dir: String::new(),
        }
    }

    #[test]
    fn expired_leases_admit_only_status_and_release() {
        let live = session(SessionState::Ready, NOW + 1, false);
        let lapsed = session(SessionState::Ready, NOW - 1, false);
        let reaped = session(SessionState::Released, NOW - 1, true);
        let released = session(SessionState::Released, NOW - 1, false);
        assert_eq!(code(check_session_state(&live, false, NOW)), None);
        assert_eq!(
            code(check_session_state(&lapsed, false, NOW)),
            Some((410, "lease_expired"))
        );
        assert_eq!(
            code(check_session_state(&reaped, false, NOW)),
            Some((410, "lease_expired"))
        );
        assert_eq!(code(check_session_state(&lapsed, true, NOW)), None);
        assert_eq!(code(check_session_state(&reaped, true, NOW)), None);
        // Released in time: the handlers answer `invalid_state` (no desktop is left).
        assert_eq!(code(check_session_state(&released, false, NOW)), None);
    }

    const FAKE_PROFILE: &str = r#"
name = "fake"
command = ["fake-app", "{attempt}"]
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
"#;

    struct App {
        _dir: tempfile::TempDir,
        app: axum::Router,
        fake: FakeHandle,
    }

    fn app(allowed_uids: Vec<u32>) -> App {
        let dir = tempfile::tempdir().unwrap();
        let mut profiles = ProfileSet::default();
        profiles.insert(AppProfile::from_toml("fake", FAKE_PROFILE).unwrap());
        let mut config = BrokerConfig::new(dir.path(), profiles);
        config.display = DisplaySize {
            width: 640,
            height: 400,
        };
        config.default_profile = "fake".into();
        config.fault = FaultHook::None;
        config.auth.allowed_uids = allowed_uids;
        let fake = FakeHandle::default();
        let handle = fake.clone();
        let broker = Broker::open(config, move |request: &BackendRequest| {
            let desktop: Box<dyn DesktopBackend> =
                Box::new(FakeDesktop::with_handle(request.display, handle.clone()));
            Ok::<_, BackendError>(desktop)
        })
        .unwrap();
        App {
            _dir: dir,
            app: router(broker),
            fake,
        }
    }

    impl App {
        async fn call(
            &self,
            peer: Option<Peer>,
            method: &str,
            path: &str,
            token: Option<&str>,
            body: Value,
        ) -> (StatusCode, Value) {
            let mut builder = Request::builder().method(method).uri(path);
            if let Some(peer) = peer {
                builder = builder.extension(ConnectInfo(peer));
            }
            if let Some(token) = token {
                builder = builder.header("authorization", format!("Bearer {token}"));
            }
            let request = builder.body(Body::from(body.to_string())).unwrap();
            let response = self.app.clone().oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice(&bytes).unwrap())
        }
    }

    fn me() -> Option<Peer> {
        Some(Peer::current_user())
    }

    #[tokio::test]
    async fn the_layer_refuses_before_any_handler_runs() {
        let app = app(vec![nix::unistd::geteuid().as_raw()]);
        let lease = |attempt: &str| json!({"task_id": "t", "attempt_id": attempt});
        let (status, first) = app
            .call(me(), "POST", "/v1/leases", None, lease("a1"))
            .await;
        assert_eq!(status, StatusCode::OK, "{first}");
        let (_, second) = app
            .call(me(), "POST", "/v1/leases", None, lease("a2"))
            .await;
        let id = first["session_id"].as_str().unwrap();
        let token = first["lease_token"].as_str().unwrap();
        let other_token = second["lease_token"].as_str().unwrap();
        assert_eq!(token.len(), 43, "32 bytes of base64url");
        let reset_path = format!("/v1/sessions/{id}/reset");
        let reset = json!({"request_id": "r0"});
        for (name, peer, token) in [
            ("no token", me(), None),
            ("garbage token", me(), Some("garbage")),
            ("another lease's token", me(), Some(other_token)),
        ] {
            let (status, body) = app
                .call(peer, "POST", &reset_path, token, reset.clone())
                .await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {body}");
            assert_eq!(body["code"], "unauthorized", "{name}");
            assert!(!body.to_string().contains(other_token), "{name}: {body}");
        }
        let (status, _) = app
            .call(None, "POST", &reset_path, Some(token), reset.clone())
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "no peer identity");
        // Unknown session: the same answer as a wrong token.
        let (status, body) = app
            .call(
                me(),
                "GET",
                "/v1/sessions/s_unknown",
                Some(token),
                json!({}),
            )
            .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized"))
        );
        assert_eq!(app.fake.n_inputs(), 0);

        let (status, body) = app
            .call(me(), "POST", &reset_path, Some(token), reset)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let click = json!({"request_id": "c1", "expected_action_index": 0,
            "action": {"type": "click", "x": 5, "y": 5, "intent": "test"}});
        let actions = format!("/v1/sessions/{id}/actions");
        let (status, _) = app
            .call(me(), "POST", &actions, Some(other_token), click.clone())
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            app.fake.n_inputs(),
            0,
            "a refused action reached the desktop"
        );
        // Paths that only look different are judged like the route the router matches.
        for path in [
            format!("//v1/sessions/{id}/actions"),
            format!("/v1/sessions/{id}//actions"),
            format!("/v1/%73essions/{id}/actions"),
            format!("/v1/sessions/{id}/actions/"),
            format!("/v1/sessions/{id}/./actions"),
            format!("/v1/sessions/x/../{id}/actions"),
        ] {
            let (status, body) = app.call(me(), "POST", &path, None, click.clone()).await;
            assert!(!status.is_success(), "{path}: {status} {body}");
        }
        assert_eq!(
            app.fake.n_inputs(),
            0,
            "a refused action reached the desktop"
        );
        let (status, body) = app.call(me(), "POST", &actions, Some(token), click).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(app.fake.n_inputs(), 1);

        // A replayed lease mints a fresh token; both stay valid until release.
        let (_, replay) = app
            .call(me(), "POST", "/v1/leases", None, lease("a1"))
            .await;
        assert_eq!(replay["idempotent_replay"], true);
        let fresh = replay["lease_token"].as_str().unwrap();
        assert_ne!(fresh, token);
        for token in [token, fresh] {
            let (status, _) = app
                .call(
                    me(),
                    "GET",
                    &format!("/v1/sessions/{id}"),
                    Some(token),
                    json!({}),
                )
                .await;
            assert_eq!(status, StatusCode::OK);
        }
    }

    #[tokio::test]
    async fn a_peer_outside_the_allowlist_gets_nothing() {
        let app = app(vec![nix::unistd::geteuid().as_raw().wrapping_add(1)]);
        for (method, path) in [("POST", "/v1/leases"), ("GET", "/v1/openapi.json")] {
            let body = json!({"task_id": "t", "attempt_id": "a"});
            let (status, answer) = app.call(me(), method, path, None, body).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {answer}");
            assert_eq!(answer["code"], "unauthorized");
        }
    }
}
