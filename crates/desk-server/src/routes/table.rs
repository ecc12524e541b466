//! The route table: one row per route (method, path, operation name, credential, handler). The
//! router is built from it (`routes.rs`), the metrics and log label of a request is its row's
//! operation name ([`operation`]), the scopes of the operator routes are its rows' credentials
//! (`auth.rs`), the capabilities document lists it, and a test checks that the OpenAPI document
//! (`openapi/table.rs`) has exactly one operation per row.

use axum::extract::DefaultBodyLimit;
use axum::http::Method;
use axum::routing::{MethodRouter, delete, get, post, put};
use desk_broker::Broker;
use desk_broker::credential::Scope;

use crate::clipboard_routes::{CLIPBOARD_BODY_LIMIT_BYTES, get_clipboard, put_clipboard};

/// The credential a route takes (`auth.rs` enforces it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// The session's lease token; `keeps_after_end` for status and release, which stay usable
    /// after the lease ended.
    Session {
        /// Whether the route stays usable after the lease ended.
        keeps_after_end: bool,
    },
    /// An operator route: an admitted Unix peer or a verified client certificate, else an
    /// orchestration credential with this scope (a kill always needs the scope over TLS).
    Scoped(Scope),
    /// A reviewer credential (scope `review`) from every peer.
    Reviewer,
    /// An approver credential (scope `approve`) from every peer.
    Approver,
    /// Any admitted peer.
    Open,
}

/// One route.
pub struct Route {
    /// The HTTP method.
    pub method: &'static str,
    /// The path, in axum path syntax.
    pub path: &'static str,
    /// The operation name: the `op` of its log line and metrics series.
    pub op: &'static str,
    /// The credential it takes.
    pub credential: Credential,
    /// Its handler, for the router.
    handler: fn() -> MethodRouter<Broker>,
}

impl Route {
    /// The route's method router (its handler, with its layers).
    pub(crate) fn handler(&self) -> MethodRouter<Broker> {
        (self.handler)()
    }
}

const fn session(
    method: &'static str,
    path: &'static str,
    op: &'static str,
    handler: fn() -> MethodRouter<Broker>,
) -> Route {
    Route {
        method,
        path,
        op,
        credential: Credential::Session {
            keeps_after_end: false,
        },
        handler,
    }
}

const fn route(
    method: &'static str,
    path: &'static str,
    op: &'static str,
    credential: Credential,
    handler: fn() -> MethodRouter<Broker>,
) -> Route {
    Route {
        method,
        path,
        op,
        credential,
        handler,
    }
}

/// The kill switch's route template (its row's path): an operator route under `/v1/sessions/`, never authorized
/// by a lease token.
pub(crate) const KILL_ROUTE: &str = "/v1/sessions/{id}/kill";

/// The approvals route's template: authorized by an approver credential, never a lease token.
pub(crate) const APPROVALS_ROUTE: &str = "/v1/sessions/{id}/approvals";

/// The status route's operation name when the request long-polls (carries `wait_ms`).
const STATUS_WAIT_OP: &str = "status_wait";

/// Every route, in the order the capabilities document lists them.
pub const ROUTES: &[Route] = &[
    route(
        "POST",
        "/v1/leases",
        "lease",
        Credential::Scoped(Scope::Lease),
        || post(crate::handlers::lease),
    ),
    session("POST", "/v1/sessions/{id}/reset", "reset", || {
        post(crate::handlers::reset)
    }),
    session("GET", "/v1/sessions/{id}/screenshot", "screenshot", || {
        get(crate::handlers::screenshot)
    }),
    session("POST", "/v1/sessions/{id}/actions", "execute", || {
        post(crate::handlers::execute)
    }),
    session("POST", "/v1/sessions/{id}/checkpoint", "checkpoint", || {
        post(crate::handlers::checkpoint)
    }),
    session("GET", "/v1/sessions/{id}/artifact", "artifact", || {
        get(crate::handlers::artifact)
    }),
    session("GET", "/v1/sessions/{id}/events", "events", || {
        get(crate::handlers::events)
    }),
    session(
        "GET",
        "/v1/sessions/{id}/frame-events",
        "frame_events",
        || get(crate::handlers::frame_events),
    ),
    route(
        "GET",
        "/v1/sessions/{id}",
        "status",
        Credential::Session {
            keeps_after_end: true,
        },
        || get(crate::handlers::status),
    ),
    route(
        "DELETE",
        "/v1/sessions/{id}",
        "release",
        Credential::Session {
            keeps_after_end: true,
        },
        || delete(crate::handlers::release),
    ),
    route(
        "POST",
        KILL_ROUTE,
        "kill",
        Credential::Scoped(Scope::Kill),
        || post(crate::handlers::kill),
    ),
    route(
        "GET",
        "/v1/metrics",
        "metrics",
        Credential::Scoped(Scope::Metrics),
        || get(crate::handlers::metrics),
    ),
    route(
        "GET",
        "/v1/openapi.json",
        "openapi",
        Credential::Open,
        || get(crate::handlers::openapi),
    ),
    session(
        "POST",
        "/v1/sessions/{id}/programs",
        "execute_program",
        || post(crate::handlers::program),
    ),
    session("GET", "/v1/sessions/{id}/control", "control_status", || {
        get(crate::handlers::control_status)
    }),
    session("POST", "/v1/sessions/{id}/control", "claim_control", || {
        post(crate::handlers::claim_control)
    }),
    session(
        "POST",
        "/v1/sessions/{id}/control/restart",
        "restart_control",
        || post(crate::handlers::restart_control),
    ),
    session("POST", "/v1/sessions/{id}/stop", "stop", || {
        post(crate::handlers::stop)
    }),
    session("POST", "/v1/sessions/{id}/zoom", "zoom", || {
        post(crate::handlers::zoom)
    }),
    session(
        "GET",
        "/v1/sessions/{id}/capabilities",
        "session_capabilities",
        || get(|state, id| crate::handlers::session_capabilities(state, id, route_list())),
    ),
    route(
        "GET",
        "/v1/capabilities",
        "capabilities",
        Credential::Open,
        || get(|state| crate::handlers::capabilities(state, route_list())),
    ),
    route(
        "GET",
        "/v1/capabilities/{feature}",
        "capability",
        Credential::Open,
        || get(crate::handlers::capability),
    ),
    session(
        "GET",
        "/v1/sessions/{id}/clipboard",
        "clipboard_read",
        || get(get_clipboard).layer(DefaultBodyLimit::max(CLIPBOARD_BODY_LIMIT_BYTES)),
    ),
    session(
        "PUT",
        "/v1/sessions/{id}/clipboard",
        "clipboard_write",
        || put(put_clipboard).layer(DefaultBodyLimit::max(CLIPBOARD_BODY_LIMIT_BYTES)),
    ),
    session(
        "GET",
        "/v1/sessions/{id}/accessibility",
        "accessibility",
        || get(crate::handlers::accessibility),
    ),
    session("GET", "/v1/sessions/{id}/windows", "windows", || {
        get(crate::handlers::windows)
    }),
    route(
        "POST",
        APPROVALS_ROUTE,
        "approve",
        Credential::Approver,
        || post(crate::approval_routes::approve_route),
    ),
    session("POST", "/v1/sessions/{id}/observations", "observe", || {
        post(crate::observer_routes::observe_route)
    }),
    session(
        "GET",
        "/v1/sessions/{id}/observations/{observation_id}",
        "get_observation",
        || get(crate::observer_routes::observation_route),
    ),
    route(
        "POST",
        "/v1/drain",
        "drain",
        Credential::Scoped(Scope::Kill),
        || post(crate::health::drain_route),
    ),
    route(
        "GET",
        "/v1/reviews",
        "list_reviews",
        Credential::Reviewer,
        || get(crate::review_routes::list_route),
    ),
    route(
        "GET",
        "/v1/reviews/{id}",
        "get_review",
        Credential::Reviewer,
        || get(crate::review_routes::one_route),
    ),
    route(
        "GET",
        "/v1/reviews/{id}/frame",
        "get_review_frame",
        Credential::Reviewer,
        || get(crate::review_routes::frame_route),
    ),
    route(
        "POST",
        "/v1/reviews/{id}/decision",
        "decide_review",
        Credential::Reviewer,
        || post(crate::review_routes::decide_route),
    ),
    route("GET", "/review", "review_page", Credential::Open, || {
        get(crate::review_routes::page_route)
    }),
];

/// The routes as the capabilities document lists them: `METHOD path`.
pub(crate) fn route_list() -> Vec<String> {
    ROUTES
        .iter()
        .map(|route| format!("{} {}", route.method, route.path))
        .collect()
}

/// Whether `path`'s segments fit `template`'s: a `{…}` segment takes any segment (a session
/// id, after `sessions`, a non-empty one), every other one only itself.
fn fits<'a>(template: &str, path: &'a str) -> Option<Option<&'a str>> {
    let (template, path) = match (template.strip_prefix("/v1/"), path.strip_prefix("/v1/")) {
        (Some(template), Some(path)) => (template, path),
        _ if template == path => return Some(None),
        _ => return None,
    };
    let mut session_id = None;
    let mut previous = "";
    let mut wanted = template.split('/');
    let mut given = path.split('/');
    loop {
        match (wanted.next(), given.next()) {
            (None, None) => return Some(session_id),
            (Some(want), Some(got)) if want.starts_with('{') => {
                if previous == "sessions" {
                    if got.is_empty() {
                        return None;
                    }
                    session_id = Some(got);
                }
                previous = want;
            }
            (Some(want), Some(got)) if want == got => previous = want,
            _ => return None,
        }
    }
}

/// The operation name of a request and the session id segment of a session route: the row of
/// [`ROUTES`] the method and path fit, never request data. `long_poll` marks a status request
/// that carries `wait_ms`. A request no row fits is `unknown`.
pub(crate) fn operation<'a>(
    method: &Method,
    path: &'a str,
    long_poll: bool,
) -> (&'static str, Option<&'a str>) {
    for route in ROUTES {
        if route.method != method.as_str() {
            continue;
        }
        if let Some(session_id) = fits(route.path, path) {
            let op = if route.op == "status" && long_poll {
                STATUS_WAIT_OP
            } else {
                route.op
            };
            return (op, session_id);
        }
    }
    ("unknown", None)
}

/// The scope of an operator route whose path has no parameter, by its path alone (any method):
/// its row's, when a row of that path is scoped.
pub(crate) fn scope_of(path: &str) -> Option<Scope> {
    ROUTES.iter().find_map(|route| match route.credential {
        Credential::Scoped(scope) if route.path == path => Some(scope),
        _ => None,
    })
}

#[cfg(test)]
mod tests;
