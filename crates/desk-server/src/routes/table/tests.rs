//! The route table against the rules it replaced: the operation labels of every request shape
//! are the ones the hand-written match gave (kept here as the reference), and each row's
//! credential is the one `auth.rs` classifies its path as.

use axum::http::Method;
use desk_broker::credential::Scope;

use super::{Credential, ROUTES, operation, route_list};
use crate::auth::{Target, classify};

/// The operation name of a request and the session id segment of a session route: fixed labels
/// from the path's shape and the method, never request data. `long_poll` marks a status request
/// that carries `wait_ms`. A path no route matches is `unknown`.
fn reference<'a>(
    method: &Method,
    path: &'a str,
    long_poll: bool,
) -> (&'static str, Option<&'a str>) {
    if method == Method::GET && path == "/review" {
        return ("review_page", None);
    }
    let segments: Vec<&str> = path.strip_prefix("/v1/").unwrap_or("").split('/').collect();
    let method = method.as_str();
    let op = match (method, segments.as_slice()) {
        ("GET", ["reviews"]) => "list_reviews",
        ("GET", ["reviews", _]) => "get_review",
        ("GET", ["reviews", _, "frame"]) => "get_review_frame",
        ("POST", ["reviews", _, "decision"]) => "decide_review",
        ("POST", ["leases"]) => "lease",
        ("GET", ["metrics"]) => "metrics",
        ("POST", ["drain"]) => "drain",
        ("GET", ["openapi.json"]) => "openapi",
        ("GET", ["capabilities"]) => "capabilities",
        ("GET", ["capabilities", _]) => "capability",
        (_, ["sessions", id, rest @ ..]) if !id.is_empty() => {
            let op = match (method, rest) {
                ("POST", ["reset"]) => "reset",
                ("GET", ["screenshot"]) => "screenshot",
                ("POST", ["actions"]) => "execute",
                ("POST", ["checkpoint"]) => "checkpoint",
                ("GET", ["artifact"]) => "artifact",
                ("GET", ["events"]) => "events",
                ("GET", ["frame-events"]) => "frame_events",
                ("GET", ["accessibility"]) => "accessibility",
                ("GET", ["windows"]) => "windows",
                ("POST", ["approvals"]) => "approve",
                ("POST", ["observations"]) => "observe",
                ("GET", ["observations", _]) => "get_observation",
                ("GET", []) if long_poll => "status_wait",
                ("GET", []) => "status",
                ("DELETE", []) => "release",
                ("POST", ["kill"]) => "kill",
                ("POST", ["programs"]) => "execute_program",
                ("GET", ["control"]) => "control_status",
                ("POST", ["control"]) => "claim_control",
                ("POST", ["control", "restart"]) => "restart_control",
                ("POST", ["stop"]) => "stop",
                ("POST", ["zoom"]) => "zoom",
                ("GET", ["capabilities"]) => "session_capabilities",
                ("GET", ["clipboard"]) => "clipboard_read",
                ("PUT", ["clipboard"]) => "clipboard_write",
                _ => "unknown",
            };
            return (op, (op != "unknown").then_some(*id));
        }
        _ => "unknown",
    };
    (op, None)
}

#[test]
fn operations_match_the_reference_for_every_request_shape() {
    let methods = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
    ];
    let mut paths: Vec<String> = vec![
        "/".into(),
        "/v1".into(),
        "/v1/".into(),
        "/v2/metrics".into(),
        "/review".into(),
        "/review/".into(),
        "/v1/leases/".into(),
        "/v1/sessions".into(),
        "/v1/sessions/".into(),
        "/v1/sessions//reset".into(),
        "/v1/sessions/s_1/reset/".into(),
        "/v1/sessions/s_1/nope".into(),
        "//v1/leases".into(),
    ];
    for route in ROUTES {
        for fill in ["s_1", "", "a/b", "x.y"] {
            let path = route
                .path
                .replace("{id}", fill)
                .replace("{feature}", fill)
                .replace("{observation_id}", fill);
            paths.push(path.clone());
            paths.push(format!("{path}/"));
            paths.push(format!("{path}/extra"));
        }
    }
    for method in &methods {
        for path in &paths {
            for long_poll in [false, true] {
                assert_eq!(
                    operation(method, path, long_poll),
                    reference(method, path, long_poll),
                    "{method} {path} long_poll={long_poll}"
                );
            }
        }
    }
}

#[test]
fn every_row_is_named_and_unique() {
    let mut seen = std::collections::BTreeSet::new();
    for route in ROUTES {
        assert!(
            seen.insert((route.method, route.path)),
            "{} {}",
            route.method,
            route.path
        );
        let path = route.path.replace("{id}", "s_x");
        let method = Method::from_bytes(route.method.as_bytes()).unwrap();
        assert_eq!(
            operation(&method, &path, false).0,
            route.op,
            "{method} {path}"
        );
    }
    assert_eq!(route_list().len(), ROUTES.len());
}

#[test]
fn each_rows_credential_is_how_auth_classifies_its_path() {
    for route in ROUTES {
        let method = Method::from_bytes(route.method.as_bytes()).unwrap();
        let path = route.path.replace("{id}", "s_1");
        let expected = match route.credential {
            Credential::Session { keeps_after_end } => Target::Session {
                id: desk_broker::SessionId::parse("s_1").unwrap(),
                keeps_after_end,
            },
            Credential::Scoped(scope) => Target::Scoped(scope),
            Credential::Reviewer => Target::Review,
            Credential::Approver => Target::Approve,
            Credential::Open => Target::Open,
        };
        assert_eq!(classify(&method, &path), expected, "{method} {path}");
    }
    assert!(
        ROUTES
            .iter()
            .any(|route| route.credential == Credential::Scoped(Scope::Kill))
    );
}
