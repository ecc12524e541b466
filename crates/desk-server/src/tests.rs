//! Router tests: the authorization decisions, each alone, and the layer in front of a real
//! router. Over 400 lines: one table-like check per decision of the one auth path, beside the
//! layer's own tests, read best together.

mod auth {
    //! The authorization decisions, each alone, and the layer in front of a real router.

    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
    use desk_contract::DisplaySize;
    use desk_desktop::fake::FakeHandle;
    use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};
    use desk_evidence::SigningKey;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};
    use tower::ServiceExt;

    use desk_broker::credential::{self, Scope};
    use desk_broker::{
        AuthConfig, BackendRequest, Broker, BrokerConfig, BrokerError, FaultHook, SessionId,
    };

    use crate::api_error::status;
    use crate::auth::{Target, admit_peer, bearer, check_scope, classify, target_of};
    use crate::peer::Peer;
    use crate::router;

    const NOW: u64 = 1_800_000_000_000;

    fn code(result: Result<(), BrokerError>) -> Option<(u16, &'static str)> {
        result
            .err()
            .map(|error| (status(&error).as_u16(), error.code().as_str()))
    }

    #[test]
    fn routes_are_classified_by_path() {
        let session = |id: &str, keeps: bool| Target::Session {
            id: SessionId::parse(id).unwrap(),
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
            assert_eq!(status(&error), StatusCode::UNAUTHORIZED);
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
