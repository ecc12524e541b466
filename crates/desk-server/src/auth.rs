//! Authorization of every request: the peer's admission, lease-bound bearer tokens on session
//! routes and scoped orchestration credentials on the other routes over TCP.
//!
//! [`authorize`] runs as a router layer before any handler, so a refused request reaches no
//! handler and nothing reaches a desktop. The decisions, in order:
//!
//! 1. The peer ([`Peer`], inserted by the listener as `ConnectInfo`): a Unix-socket peer is
//!    admitted when its uid (SO_PEERCRED) is in [`AuthConfig::allowed_uids`]; a TLS peer was
//!    admitted by the handshake (with `--client-ca`, only certificates of that CA get that far).
//!    A request without a peer identity, or from another uid, is refused with 403 `unauthorized`.
//! 2. Session routes (`/v1/sessions/{id}…`) need `Authorization: Bearer <lease_token>` whose
//!    SHA-256 matches one stored for THAT session (constant-time compare, desk-broker's
//!    `lease_token.rs`). A missing, malformed or
//!    wrong token and an unknown session id all get the same 401 `unauthorized` (no existence
//!    oracle). With a valid token, an expired lease admits only status and release (else 410
//!    `lease_expired`); a session released in time has no desktop, and its handlers refuse
//!    everything but status and release with 409 `invalid_state`.
//! 3. `POST /v1/leases` and `GET /v1/metrics`: open to an admitted Unix peer and to a TLS peer
//!    with a verified client certificate; a TLS peer without one needs an orchestration
//!    credential ([`desk_broker::credential`]) carrying the route's scope. Other routes (the OpenAPI
//!    document, unknown paths) are open to any admitted peer.
//!
//! 4. The screenshot gate's review routes (`/v1/reviews…`): a reviewer credential (the
//!    credential format with the `review` scope) verified with [`AuthConfig::reviewer_key`],
//!    from every peer, Unix or TLS, certificate or not; a lease token is no such credential.
//!    The handler gets the credential's subject as [`Reviewer`].
//! 5. `POST /v1/sessions/{id}/approvals`: an approver credential (scope `approve`, subject and
//!    key from the signed policy's `approvals`, `approval/issue.rs`) from every peer; a lease
//!    token is no such credential, nor is an approver credential a lease token.
//!
//! Credentials are never logged or echoed: refusal messages name the reason only.
//!
//! Fairness: the lease-token check reads the store on the blocking pool but never waits for a
//! session's turn or lock, so a flood of requests on one session does not delay another
//! session's authorization (`admission.rs`).
//!

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use desk_broker::credential::{self, Scope};
use desk_broker::{Approver, AuthConfig, Broker, BrokerError, SessionId, now_ms};

use crate::api_error::ApiError;
use crate::peer::Peer;
use crate::review_routes::Reviewer;
use crate::routes::{APPROVALS_ROUTE, KILL_ROUTE, scope_of};

/// What a request asks for, from its method and path alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A session route; `keeps_after_end` for status and release, which stay usable after the
    /// lease ended.
    Session {
        id: SessionId,
        keeps_after_end: bool,
    },
    /// A route that needs a scope over TCP without a client certificate.
    Scoped(Scope),
    /// The review routes: a reviewer credential from every peer.
    Review,
    /// The approvals route: an approver credential from every peer.
    Approve,
    /// The OpenAPI document and unknown paths.
    Open,
    /// A session path whose id is not a plain segment: refused like a wrong token.
    BadSession,
}

fn plain_segment(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 128
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~".contains(c))
}

pub(crate) fn classify(method: &Method, path: &str) -> Target {
    if let Some(rest) = path.strip_prefix("/v1/sessions/")
        && let Some(id) = rest.strip_suffix("/kill")
        && (plain_segment(id) || id == "{id}")
    {
        return Target::Scoped(Scope::Kill);
    }
    if method == Method::POST
        && let Some(rest) = path.strip_prefix("/v1/sessions/")
        && let Some(id) = rest.strip_suffix("/approvals")
        && (plain_segment(id) || id == "{id}")
    {
        return Target::Approve;
    }
    if let Some(rest) = path.strip_prefix("/v1/sessions/") {
        let (id, has_suffix) = match rest.split_once('/') {
            Some((id, _)) => (id, true),
            None => (rest, false),
        };
        if !plain_segment(id) {
            return Target::BadSession;
        }
        // A segment that is no session id (a `.`, a `~`, over 64 bytes) has no lease token:
        // refused like one without a token.
        let Ok(id) = SessionId::parse(id) else {
            return Target::BadSession;
        };
        let keeps_after_end = !has_suffix && (method == Method::GET || method == Method::DELETE);
        return Target::Session {
            id,
            keeps_after_end,
        };
    }
    if path == "/v1/reviews" || path.starts_with("/v1/reviews/") {
        return Target::Review;
    }
    // The operator routes' scopes are their rows' in the route table (draining is an
    // operator's act, like the kill switch).
    scope_of(path).map_or(Target::Open, Target::Scoped)
}

/// The target of a request from its raw path, cross-checked with the route template the router
/// matched (available to this layer because it runs after routing): a request the router sends
/// to a session handler is never judged by anything but its lease token, whatever its raw path
/// looks like.
pub(crate) fn target_of(method: &Method, raw_path: &str, matched: Option<&str>) -> Target {
    let by_path = classify(method, raw_path);
    match matched {
        Some(KILL_ROUTE) => match by_path {
            Target::Scoped(Scope::Kill) => by_path,
            _ => Target::BadSession,
        },
        Some(APPROVALS_ROUTE) => match by_path {
            Target::Approve => by_path,
            _ => Target::BadSession,
        },
        Some(template) if template.starts_with("/v1/sessions/") => match by_path {
            Target::Session { .. } | Target::BadSession => by_path,
            Target::Scoped(_) | Target::Open | Target::Review | Target::Approve => {
                Target::BadSession
            }
        },
        Some(template) => match classify(method, template) {
            Target::Scoped(scope) => Target::Scoped(scope),
            Target::Review => Target::Review,
            _ => by_path,
        },
        None => by_path,
    }
}

/// The bearer token of `headers`: `Ok(None)` when there is no `Authorization` header, `Err`
/// when there are several or one that is not `Bearer <token>`.
pub(crate) fn bearer(headers: &HeaderMap) -> Result<Option<&str>, BrokerError> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let malformed = || BrokerError::Unauthorized("malformed Authorization header".to_string());
    if values.next().is_some() {
        return Err(malformed());
    }
    let text = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = text.split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(malformed());
    }
    Ok(Some(token))
}

/// Step 1: whether the peer is admitted at all.
pub(crate) fn admit_peer(config: &AuthConfig, peer: Option<&Peer>) -> Result<(), BrokerError> {
    match peer {
        None => Err(BrokerError::Forbidden(
            "the connection has no peer identity".to_string(),
        )),
        Some(Peer::Unix { uid: Some(uid) }) if config.allowed_uids.contains(uid) => Ok(()),
        Some(Peer::Unix { uid: Some(uid) }) => Err(BrokerError::Forbidden(format!(
            "peer uid {uid} is not allowed on this socket"
        ))),
        Some(Peer::Unix { uid: None }) => Err(BrokerError::Forbidden(
            "the peer's credentials could not be read".to_string(),
        )),
        Some(Peer::Tls { .. }) => Ok(()),
    }
}

/// Step 3: a scoped route.
pub(crate) fn check_scope(
    config: &AuthConfig,
    peer: &Peer,
    scope: Scope,
    token: Option<&str>,
    now_ms: u64,
) -> Result<(), BrokerError> {
    match peer {
        Peer::Unix { .. } => Ok(()),
        // A client certificate admits a harness, not an operator: a kill needs the scope.
        Peer::Tls {
            client_cert_sha256: Some(_),
        } if scope != Scope::Kill => Ok(()),
        Peer::Tls { .. } => {
            let key = config.orchestrator_key.as_ref().ok_or_else(|| {
                BrokerError::Unauthorized(format!("{} needs a client certificate", scope.as_str()))
            })?;
            let token = token.ok_or_else(|| {
                BrokerError::Unauthorized(format!(
                    "{} needs a client certificate or an orchestration credential",
                    scope.as_str()
                ))
            })?;
            let claims = credential::verify(key, token, now_ms)?;
            if !claims.scope.contains(&scope) {
                return Err(BrokerError::Unauthorized(format!(
                    "orchestration credential refused: it lacks the {} scope",
                    scope.as_str()
                )));
            }
            tracing::debug!(
                sub = claims.sub,
                scope = scope.as_str(),
                "credential admitted"
            );
            Ok(())
        }
    }
}

/// The refusal of a session route without a valid lease token; the same for an unknown session
/// (no existence oracle).
fn wrong_token() -> BrokerError {
    BrokerError::Unauthorized("missing or invalid lease token for this session".to_string())
}

/// Step 4: a reviewer credential, whatever the peer.
pub(crate) fn check_reviewer(
    config: &AuthConfig,
    token: Option<&str>,
    now_ms: u64,
) -> Result<Reviewer, BrokerError> {
    let key = config.reviewer_key.as_ref().ok_or_else(|| {
        BrokerError::Unauthorized(
            "this broker takes no reviewer credential (serve --reviewer-pub)".to_string(),
        )
    })?;
    let token =
        token.ok_or_else(|| BrokerError::Unauthorized("a reviewer credential is needed".into()))?;
    let claims = credential::verify(key, token, now_ms)?;
    if !claims.scope.contains(&Scope::Review) {
        return Err(BrokerError::Unauthorized(
            "credential refused: it lacks the review scope".to_string(),
        ));
    }
    Ok(Reviewer(claims.sub))
}

/// What [`decide`] needs of a request, taken out of it so no borrow of the body is held across
/// an await.
struct Asked {
    peer: Option<Peer>,
    target: Target,
    bearer: Result<Option<String>, BrokerError>,
}

impl Asked {
    fn of(request: &Request) -> Asked {
        Asked {
            peer: request
                .extensions()
                .get::<ConnectInfo<Peer>>()
                .map(|ConnectInfo(peer)| peer.clone()),
            target: target_of(
                request.method(),
                request.uri().path(),
                request
                    .extensions()
                    .get::<MatchedPath>()
                    .map(MatchedPath::as_str),
            ),
            bearer: bearer(request.headers()).map(|token| token.map(str::to_string)),
        }
    }
}

/// Who a credential route's credential names, for its handler.
enum Named {
    Nobody,
    Reviewer(Reviewer),
    Approver(Approver),
}

async fn decide(broker: &Broker, asked: Asked) -> Result<Named, BrokerError> {
    let config = broker.auth_config();
    admit_peer(config, asked.peer.as_ref())?;
    let Some(peer) = asked.peer else {
        return Err(BrokerError::Forbidden(
            "the connection has no peer identity".to_string(),
        ));
    };
    match asked.target {
        Target::Open => Ok(Named::Nobody),
        Target::BadSession => Err(wrong_token()),
        Target::Scoped(scope) => {
            let token = asked.bearer?;
            check_scope(config, &peer, scope, token.as_deref(), now_ms()).map(|()| Named::Nobody)
        }
        Target::Review => {
            let token = asked.bearer?;
            check_reviewer(config, token.as_deref(), now_ms()).map(Named::Reviewer)
        }
        Target::Approve => {
            let token = asked.bearer?;
            broker.check_approver(token.as_deref()).map(Named::Approver)
        }
        Target::Session {
            id,
            keeps_after_end,
        } => {
            let token = asked.bearer.map_err(|_| wrong_token())?;
            broker
                .authorize_session(id, token, keeps_after_end)
                .await
                .map(|()| Named::Nobody)
        }
    }
}

/// The router layer that authorizes a request before its handler runs.
pub(crate) async fn authorize(
    State(broker): State<Broker>,
    mut request: Request,
    next: Next,
) -> Response {
    match decide(&broker, Asked::of(&request)).await {
        Ok(named) => {
            match named {
                Named::Nobody => {}
                Named::Reviewer(reviewer) => {
                    request.extensions_mut().insert(reviewer);
                }
                Named::Approver(approver) => {
                    request.extensions_mut().insert(approver);
                }
            }
            next.run(request).await
        }
        Err(refusal) => ApiError(refusal).into_response(),
    }
}
