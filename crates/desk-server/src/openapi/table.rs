//! The route table the OpenAPI document is built from: each operation's method, path, summary
//! (the human-written text a client generator turns into docs), credential, body and answer
//! types, query parameters, and the error codes its handler can answer with. The statuses come
//! from the codes ([`super::statuses`]); codes every operation can answer are added by
//! [`Operation::codes`]. Over 400 lines: one entry per route, which reads best as one table.

use desk_contract::ErrorCode::{self, *};
use desk_contract::{api, clipboard, control};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Value, json};

/// A type's schema in a generator.
pub(crate) type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// `T`'s schema (a `$ref` to its component) in `generator`.
pub(super) fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// `approval_required` on the input routes (`approval.rs`).
const APPROVAL_REQUIRED_NOTE: &str = "the input would reach a control the signed policy marks \
     high-risk (approvals.high_risk_targets): the element under the point, or the focused \
     element for keys and text; only an approved exact action may invoke it; nothing was sent";
/// `insufficient_data` on the input routes.
const INSUFFICIENT_DATA_NOTE: &str = "with approvals in the policy, the accessibility data \
     needed to check the input against the high-risk targets was missing; refused unverified, \
     nothing was sent";

/// Which credential an operation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The session's lease token (`leaseToken`).
    Session,
    /// None from an admitted Unix peer or a verified client certificate, else an orchestration
    /// credential with the route's scope.
    Operator,
    /// A reviewer credential (scope `review`, the reviewer key) from every peer.
    Reviewer,
    /// An approver credential (scope `approve`, the policy's approver id and key) from every
    /// peer.
    Approver,
    /// Any admitted peer.
    Open,
}

/// What a successful answer carries.
pub(crate) enum Answer {
    /// A JSON body of this type.
    Json(SchemaFn),
    /// A JSON body of this type, which carries a screenshot: also offered in the binary form
    /// (desk-server's `shot_json.rs`), named by [`success`].
    Shot(SchemaFn),
    /// NDJSON text, one record of the named kind per line.
    Ndjson(&'static str),
    /// Text of this media type.
    Text(&'static str),
    /// The OpenAPI document itself.
    Document,
}

/// The success answer of a JSON operation, whose schema is `schema`: for an [`Answer::Shot`],
/// with the second media type a client names in `Accept` to take the PNG raw.
pub(crate) fn success(answer: &Answer, schema: Schema) -> Value {
    let mut content = json!({"application/json": {"schema": schema}});
    if !matches!(answer, Answer::Shot(_)) {
        return json!({"description": "success", "content": content});
    }
    content[api::ANSWER_PNG_MEDIA_TYPE] = json!({"schema": {"type": "string", "format": "binary"}});
    json!({
        "description": format!(
            "success. With `Accept: {media}` the answer is `Content-Type: {media}; json=N`: its \
             first N bytes are the JSON answer with `png_base64` empty, the rest the PNG (whose \
             SHA-256 is `screenshot.sha256`; none when the frame was withheld). Errors are JSON.",
            media = api::ANSWER_PNG_MEDIA_TYPE
        ),
        "content": content,
    })
}

/// A query (or non-session path) parameter.
pub(crate) struct Parameter {
    pub(crate) name: &'static str,
    pub(crate) required: bool,
    pub(crate) schema: fn() -> Value,
    pub(crate) description: &'static str,
}

/// One operation of the API.
pub(crate) struct Operation {
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    pub(crate) id: &'static str,
    pub(crate) summary: &'static str,
    pub(crate) access: Access,
    pub(crate) request: Option<SchemaFn>,
    pub(crate) answer: Answer,
    pub(crate) parameters: &'static [Parameter],
    /// The codes the handler can answer with, beyond those of [`Operation::codes`].
    pub(crate) codes: &'static [ErrorCode],
    /// What a code means on this operation, where it needs saying.
    pub(crate) notes: &'static [(ErrorCode, &'static str)],
}

impl Operation {
    /// Every code this operation can answer with: its own, `unauthorized` (the peer check
    /// before every route, the credential check), `internal`, `invalid_request` when it reads
    /// a body, and `session_killed` on a session route.
    pub(crate) fn codes(&self) -> Vec<ErrorCode> {
        let mut codes = vec![Unauthorized];
        if self.request.is_some() {
            codes.push(InvalidRequest);
        }
        codes.extend(self.codes.iter().copied());
        if self.access == Access::Session || self.path.starts_with("/v1/sessions/") {
            codes.push(SessionKilled);
        }
        codes.push(Internal);
        let mut unique = Vec::with_capacity(codes.len());
        for code in codes {
            if !unique.contains(&code) {
                unique.push(code);
            }
        }
        unique
    }

    /// True when a missing or wrong credential answers 401 (every operation but the open ones).
    pub(crate) fn takes_credential(&self) -> bool {
        self.access != Access::Open
    }

    /// The note on `code`, or the common one for `session_busy`.
    pub(crate) fn note(&self, code: ErrorCode) -> Option<&'static str> {
        let own = self.notes.iter().find(|(known, _)| *known == code);
        own.map(|(_, note)| *note).or(match code {
            SessionBusy => Some(
                "the session already has its queue of waiting requests; nothing was done; retry \
                 later, with the same request_id for an action",
            ),
            Unauthorized => Some("401: missing or wrong credential; 403: peer not admitted"),
            _ => None,
        })
    }
}

/// The document's description.
pub(crate) const DESCRIPTION: &str = "Control plane between computer-use agent harnesses and real \
desktops. Errors are {code, message}; each operation lists every status it can answer and the \
codes behind it. Served on a Unix socket (mode 0600; peers admitted by uid, 403 unauthorized \
otherwise) and optionally over TLS on TCP (mutual TLS with --client-ca). Session routes need the \
lease token as a bearer credential (401 unauthorized without it). A session queues at most 32 \
requests behind the running one by default (429 session_busy beyond). Bodies are at most \
256 KiB (413), the clipboard's PUT 32 MiB + 64 KiB.";

/// The security schemes operations name.
pub(crate) fn security_schemes() -> Value {
    json!({
        "leaseToken": {
            "type": "http",
            "scheme": "bearer",
            "description": "The lease_token of the session's lease. Required on every \
                /v1/sessions/{id} route, over the Unix socket too. Missing, wrong, another \
                session's token and unknown session ids all answer 401 unauthorized; an expired \
                lease answers 410 lease_expired except on status and release.",
        },
        "orchestrationCredential": {
            "type": "http",
            "scheme": "bearer",
            "description": "Over TCP (TLS) without a client certificate: an Ed25519-signed, \
                expiring credential from `deskbroker certs token` with the route's scope \
                (lease, metrics, kill). Not needed from an allowed Unix-socket peer or a client \
                with a verified certificate.",
        },
        "reviewerCredential": {
            "type": "http",
            "scheme": "bearer",
            "description": "The screenshot gate's review routes: a credential of the same \
                format with the review scope, signed by the reviewer key the broker was started \
                with (serve --reviewer-pub); required from every peer, the Unix socket too. A \
                lease token is no reviewer credential.",
        },
        "approverCredential": {
            "type": "http",
            "scheme": "bearer",
            "description": "POST /v1/sessions/{id}/approvals: a credential of the same format \
                with the approve scope whose subject is the signed policy's approvals.approver_id, \
                signed by its approver_public_key; required from every peer. A lease token is no \
                approver credential, and an approver credential authorizes nothing else.",
        },
    })
}

const NOTHING_SENT: &str = "nothing was sent";

/// Every operation, in the order of [`crate::routes::ROUTES`].
pub(crate) const OPERATIONS: &[Operation] = &[
    Operation {
        method: "POST",
        path: "/v1/leases",
        id: "lease_session",
        summary: "Reserve a desktop; identical (task_id, attempt_id) replays the active lease",
        access: Access::Operator,
        request: Some(schema_of::<api::LeaseRequest>),
        answer: Answer::Json(schema_of::<api::LeaseResponse>),
        parameters: &[],
        codes: &[
            PolicyInvalid,
            ProfileNotAllowed,
            NotFound,
            LeaseConflict,
            LeaseExpired,
            SandboxUnavailable,
            JournalUnavailable,
        ],
        notes: &[
            (
                PolicyInvalid,
                "the broker's signed workspace policy is unsigned, altered, expired or not yet \
                 valid, fails lint, or states a network allowlist this sandbox cannot enforce; \
                 nothing is leased",
            ),
            (
                ProfileNotAllowed,
                "the policy does not allow the profile; nothing is leased",
            ),
            (NotFound, "profile"),
            (
                LeaseConflict,
                "the identity is held with another profile or was released; or, with a \
                 Retry-After header, no capacity now: the sessions are at --max-sessions, the \
                 memory budget is spent, or the broker drains (retry later or elsewhere)",
            ),
        ],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/reset",
        id: "reset_session",
        summary: "Prepare the attempt file, start the app maximized, return the handoff \
                  screenshot; identical request_id replays",
        access: Access::Session,
        request: Some(schema_of::<api::ResetRequest>),
        answer: Answer::Shot(schema_of::<api::ResetResponse>),
        parameters: &[],
        codes: &[
            InvalidState,
            AppNotMaximized,
            ResetUnstable,
            DesktopFailed,
            ResourceLimit,
            SandboxUnavailable,
            WorkspaceUnverified,
            NotFound,
            LeaseExpired,
            SessionBusy,
            JournalUnavailable,
        ],
        notes: &[
            (
                AppNotMaximized,
                "the window does not cover the work area, is not viewable, or is iconic",
            ),
            (
                ResetUnstable,
                "the handoff screen kept changing through every settle wait",
            ),
        ],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/screenshot",
        id: "get_screenshot",
        summary: "Capture the live desktop; sequence strictly increases",
        access: Access::Session,
        request: None,
        answer: Answer::Shot(schema_of::<api::Screenshot>),
        parameters: &[],
        codes: &[
            InvalidState,
            DesktopFailed,
            ResourceLimit,
            NotFound,
            LeaseExpired,
            SessionBusy,
            JournalUnavailable,
        ],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/actions",
        id: "execute_action",
        summary: "Validate and execute exactly one action; identical retry replays with \
                  idempotent_replay=true. A body with approval_id is an approved exact action \
                  (ApprovedActionRequest): it consumes that receipt once, invokes the element \
                  through accessibility and answers ApprovedActionResponse (docs/approvals.md)",
        access: Access::Session,
        request: Some(schema_of::<api::ActionRequest>),
        answer: Answer::Shot(schema_of::<api::ActionResponse>),
        parameters: &[],
        codes: &[
            InvalidAction,
            ActionSequenceConflict,
            InvalidState,
            ScreenshotUnknown,
            ScreenshotStale,
            PointOutsideImage,
            DestinationNotApp,
            DestinationProhibited,
            ApprovalRequired,
            InsufficientData,
            DesktopFailed,
            ResourceLimit,
            NotFound,
            LeaseExpired,
            SessionBusy,
            InputOutcomeUnknown,
            JournalUnavailable,
        ],
        notes: &[
            (
                PointOutsideImage,
                "an action naming a screenshot_id; never clamped",
            ),
            (ApprovalRequired, APPROVAL_REQUIRED_NOTE),
            (InsufficientData, INSUFFICIENT_DATA_NOTE),
            (
                DestinationNotApp,
                "the input would reach something other than the app: the bare desktop, another \
                 program's window, or keys with the focus on no window of the app; nothing was \
                 sent",
            ),
            (
                DestinationProhibited,
                "the input would reach a destination the profile prohibits (a Python console, \
                 macro editor or dialog, add-on manager, web view); nothing was sent",
            ),
            (DesktopFailed, NOTHING_SENT),
            (
                JournalUnavailable,
                "the action journal cannot be written; nothing was sent",
            ),
        ],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/checkpoint",
        id: "checkpoint_save",
        summary: "Accept an already-saved change or send the profile's save gesture when an app \
                  window is in front",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<api::CheckpointResponse>),
        parameters: &[],
        codes: &[
            InvalidState,
            CheckpointFailed,
            ArtifactInvalid,
            DesktopFailed,
            ResourceLimit,
            NotFound,
            LeaseExpired,
            SessionBusy,
            JournalUnavailable,
        ],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/artifact",
        id: "retrieve_artifact",
        summary: "The checkpointed attempt file",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<api::ArtifactResponse>),
        parameters: &[],
        codes: &[
            CheckpointRequired,
            InvalidState,
            NotFound,
            LeaseExpired,
            SessionBusy,
        ],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/events",
        id: "retrieve_events",
        summary: "events.json: raw input NDJSON (EventRecord per line)",
        access: Access::Session,
        request: None,
        answer: Answer::Ndjson("EventRecord"),
        parameters: &[],
        codes: &[InvalidState, NotFound, LeaseExpired, SessionBusy],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/frame-events",
        id: "retrieve_frame_events",
        summary: "frame_events.json: frame-aligned input NDJSON (FrameEventsRow per line)",
        access: Access::Session,
        request: None,
        answer: Answer::Ndjson("FrameEventsRow"),
        parameters: &[],
        codes: &[InvalidState, NotFound, LeaseExpired, SessionBusy],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}",
        id: "get_status",
        summary: "State, action count, checkpoint and last error; with wait_ms, a long-poll",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<api::StatusResponse>),
        parameters: &[
            Parameter {
                name: "wait_ms",
                required: false,
                schema: || json!({"type": "integer", "minimum": 0, "maximum": 5000}),
                description: "long-poll: wait at most this many milliseconds for a change",
            },
            Parameter {
                name: "state",
                required: false,
                schema: || json!({"$ref": "#/components/schemas/SessionState"}),
                description: "long-poll: the state the client last saw (needs wait_ms)",
            },
            Parameter {
                name: "next_action_index",
                required: false,
                schema: || json!({"type": "integer", "minimum": 0}),
                description: "long-poll: the next action index the client last saw (needs \
                              wait_ms)",
            },
        ],
        codes: &[InvalidRequest, NotFound],
        notes: &[(InvalidRequest, "long-poll parameters")],
    },
    Operation {
        method: "DELETE",
        path: "/v1/sessions/{id}",
        id: "release_session",
        summary: "Idempotent: shut the desktop down and delete attempt data",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<api::ReleaseResponse>),
        parameters: &[],
        codes: &[NotFound, SessionBusy, JournalUnavailable],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/kill",
        id: "kill_session",
        summary: "Operator kill switch (a Unix peer, or over TLS an orchestration credential \
                  with the kill scope; never the lease token): destroy the workspace now, revoke \
                  the lease, write a signed terminal receipt. Idempotent. Afterwards every \
                  session route answers 410 session_killed.",
        access: Access::Operator,
        request: Some(schema_of::<api::KillRequest>),
        answer: Answer::Json(schema_of::<api::KillResponse>),
        parameters: &[],
        codes: &[NotFound, InvalidState],
        notes: &[(InvalidState, "the session was released")],
    },
    Operation {
        method: "GET",
        path: "/v1/metrics",
        id: "metrics",
        summary: "Prometheus text: request counts by operation, status and error code, latency \
                  histograms per operation, session gauges",
        access: Access::Operator,
        request: None,
        answer: Answer::Text("text/plain"),
        parameters: &[],
        codes: &[],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/drain",
        id: "drain",
        summary: "Stop leasing until the broker restarts (idempotent; live sessions go on) and \
                  answer the capacity; a preStop hook repeats it until live_sessions is 0 \
                  (an operator route: a Unix peer, or over TLS an orchestration credential with \
                  the kill scope)",
        access: Access::Operator,
        request: None,
        answer: Answer::Json(schema_of::<api::Capacity>),
        parameters: &[],
        codes: &[],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/openapi.json",
        id: "openapi",
        summary: "This document",
        access: Access::Open,
        request: None,
        answer: Answer::Document,
        parameters: &[],
        codes: &[],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/programs",
        id: "execute_program",
        summary: "Validate a whole input program (steps of the action schema, and the semantic \
                  steps ax_press and ax_set_text on the current accessibility observation), then \
                  run it exactly once as one action index; stops at the first failing step or at \
                  Stop",
        access: Access::Session,
        request: Some(schema_of::<control::ProgramRequest>),
        answer: Answer::Shot(schema_of::<control::ProgramResponse>),
        parameters: &[],
        codes: &[
            InvalidParams,
            ActionSequenceConflict,
            InvalidState,
            ControlBusy,
            ControlStopped,
            ControlStaleGeneration,
            ControlObserveOnly,
            AccessibilityUnavailable,
            AxProviderBusy,
            ScreenshotUnknown,
            ScreenshotStale,
            PointOutsideImage,
            AxObservationStale,
            AxForeignWindow,
            AxNotActionable,
            DestinationNotApp,
            DestinationProhibited,
            ApprovalRequired,
            InsufficientData,
            SessionBusy,
            DesktopFailed,
            ResourceLimit,
            NotFound,
            LeaseExpired,
            InputOutcomeUnknown,
            Unsupported,
            JournalUnavailable,
        ],
        notes: &[
            (
                InvalidParams,
                "the message names the step index and field; nothing was sent",
            ),
            (
                PointOutsideImage,
                "never clamped, never a coordinate fallback; nothing was sent",
            ),
            (DesktopFailed, NOTHING_SENT),
            (
                Unsupported,
                "a semantic step on a broker whose desktops offer no accessibility; nothing was \
                 sent",
            ),
        ],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/control",
        id: "get_control",
        summary: "The control session: owner, mode, generation, target revision, stopped",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<control::ControlStatus>),
        parameters: &[],
        codes: &[InvalidState, NotFound, LeaseExpired],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/control",
        id: "claim_control",
        summary: "Claim an unowned session's control (a new generation) or change the owner's \
                  mode",
        access: Access::Session,
        request: Some(schema_of::<control::ControlClaim>),
        answer: Answer::Json(schema_of::<control::ControlStatus>),
        parameters: &[],
        codes: &[
            ControlBusy,
            ControlStopped,
            InvalidState,
            NotFound,
            LeaseExpired,
            JournalUnavailable,
        ],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/control/restart",
        id: "restart_control",
        summary: "The only way out of a stopped generation: a new generation for the named owner",
        access: Access::Session,
        request: Some(schema_of::<control::ControlClaim>),
        answer: Answer::Json(schema_of::<control::ControlStatus>),
        parameters: &[],
        codes: &[InvalidState, NotFound, LeaseExpired, JournalUnavailable],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/stop",
        id: "stop",
        summary: "Advance the generation and mark the control session stopped first; a running \
                  program halts before its next step and its observation is dropped; then release \
                  held input",
        access: Access::Session,
        request: Some(schema_of::<control::StopRequest>),
        answer: Answer::Json(schema_of::<control::StopResponse>),
        parameters: &[],
        codes: &[InvalidState, NotFound, LeaseExpired, JournalUnavailable],
        notes: &[],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/zoom",
        id: "zoom",
        summary: "A fresh capture of a region given in a current screenshot's image pixels, \
                  enlarged by a whole number up to 8 (long edge at most 1568 px): a marked \
                  screenshot (zoom) with its own screenshot_id whose pixels map onto the region",
        access: Access::Session,
        request: Some(schema_of::<control::ZoomRequest>),
        answer: Answer::Shot(schema_of::<api::Screenshot>),
        parameters: &[],
        codes: &[
            InvalidParams,
            InvalidState,
            ScreenshotUnknown,
            ScreenshotStale,
            PointOutsideImage,
            SessionBusy,
            DesktopFailed,
            ResourceLimit,
            NotFound,
            LeaseExpired,
        ],
        notes: &[
            (
                InvalidParams,
                "an empty region, or one whose long edge is beyond 1568 screen pixels; nothing \
                 was captured",
            ),
            (PointOutsideImage, "nothing was captured; never clamped"),
        ],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/capabilities",
        id: "get_session_capabilities",
        summary: "The capabilities document with this session's control state",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<control::Capabilities>),
        parameters: &[],
        codes: &[InvalidState, NotFound, LeaseExpired],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/capabilities",
        id: "get_capabilities",
        summary: "Routes, action and step types, and every feature a client may ask for, offered \
                  or not",
        access: Access::Open,
        request: None,
        answer: Answer::Json(schema_of::<control::Capabilities>),
        parameters: &[],
        codes: &[],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/capabilities/{feature}",
        id: "get_capability",
        summary: "A feature's entry when offered; 501 unsupported when known and not offered",
        access: Access::Open,
        request: None,
        answer: Answer::Json(schema_of::<control::FeatureSupport>),
        parameters: &[Parameter {
            name: "feature",
            required: true,
            schema: || json!({"type": "string"}),
            description: "a feature name of GET /v1/capabilities",
        }],
        codes: &[NotFound, Unsupported],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/clipboard",
        id: "clipboard_read",
        summary: "Read the session display's clipboard as UTF-8 text (policy clipboard mode read \
                  or read_write; allowed in observe mode); at most max_output_bytes, cut at a \
                  character boundary with truncated=true; a Stop while it runs discards it",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<clipboard::ClipboardText>),
        parameters: &[
            Parameter {
                name: "max_output_bytes",
                required: false,
                schema: || json!({"type": "integer", "minimum": 1, "maximum": 1_048_576, "default": 65_536}),
                description: "read cap; outside 1..=1 MiB is refused (invalid_params), never \
                              clamped",
            },
            Parameter {
                name: "owner",
                required: false,
                schema: || json!({"type": "string"}),
                description: "control token owner (with generation)",
            },
            Parameter {
                name: "generation",
                required: false,
                schema: || json!({"type": "integer", "minimum": 0}),
                description: "control token generation (with owner)",
            },
        ],
        codes: &[
            InvalidRequest,
            InvalidParams,
            ClipboardDisabled,
            NotFound,
            InvalidState,
            ControlBusy,
            ControlStopped,
            ControlStaleGeneration,
            LeaseExpired,
            ClipboardUnavailable,
            SessionBusy,
            DesktopFailed,
            ResourceLimit,
            JournalUnavailable,
        ],
        notes: &[],
    },
    Operation {
        method: "PUT",
        path: "/v1/sessions/{id}/clipboard",
        id: "clipboard_write",
        summary: "Replace the session display's clipboard text (policy clipboard mode \
                  read_write; act mode); NUL and text over 16 MiB are refused before anything \
                  changes; a write that fails once asked is clipboard_outcome_unknown and never \
                  retried",
        access: Access::Session,
        request: Some(schema_of::<clipboard::ClipboardWriteRequest>),
        answer: Answer::Json(schema_of::<clipboard::ClipboardWritten>),
        parameters: &[],
        codes: &[
            InvalidParams,
            ClipboardDisabled,
            NotFound,
            InvalidState,
            ControlBusy,
            ControlStopped,
            ControlStaleGeneration,
            ControlObserveOnly,
            LeaseExpired,
            ClipboardUnavailable,
            SessionBusy,
            DesktopFailed,
            ResourceLimit,
            ClipboardOutcomeUnknown,
            JournalUnavailable,
        ],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/accessibility",
        id: "get_accessibility",
        summary: "The app's accessibility (AT-SPI) tree, breadth first, bounded by max_nodes, \
                  max_depth and a 3 s deadline (truncated says whether anything was left out); a \
                  new observation_id that replaces the previous one. Sends no input. \
                  docs/accessibility.md",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<api::AccessibilityResponse>),
        parameters: &[
            Parameter {
                name: "max_nodes",
                required: false,
                schema: || json!({"type": "integer", "minimum": 1}),
                description: "at most this many nodes; default 2000, 1..=10000, refused \
                              (invalid_request) otherwise",
            },
            Parameter {
                name: "max_depth",
                required: false,
                schema: || json!({"type": "integer", "minimum": 1}),
                description: "depth limit (the application is depth 0); default 64, 1..=256",
            },
        ],
        codes: &[
            InvalidRequest,
            InvalidState,
            AccessibilityUnavailable,
            DesktopFailed,
            ResourceLimit,
            NotFound,
            LeaseExpired,
            SessionBusy,
            JournalUnavailable,
        ],
        notes: &[
            (
                InvalidRequest,
                "unknown, repeated or out-of-range query parameter",
            ),
            (
                AccessibilityUnavailable,
                "no accessibility bus, or the app is not on it",
            ),
        ],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/observations",
        id: "observe",
        summary: "A fresh observation of the session by the observer, a process of its own \
                  (containment G001): the app's accessibility elements it read itself and the \
                  sha256 of the last frame captured, signed with the observer's key and stored \
                  in the session. Answers the signed envelope. docs/observer.md",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<desk_broker::SignedObservation>),
        parameters: &[],
        codes: &[InsufficientData, InvalidState, NotFound, LeaseExpired],
        notes: &[(
            InsufficientData,
            "no observer runs, its answer did not verify or was stale, or it could not see the \
             app (that signed answer is stored all the same)",
        )],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/observations/{observation_id}",
        id: "get_observation",
        summary: "A stored signed observation of the session, byte for byte as the observer \
                  signed it",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<desk_broker::SignedObservation>),
        parameters: &[Parameter {
            name: "observation_id",
            required: true,
            schema: || json!({"type": "string", "pattern": "^obs_[0-9a-f]{32}$"}),
            description: "the observation's id",
        }],
        codes: &[NotFound],
        notes: &[(NotFound, "no such observation in this session")],
    },
    Operation {
        method: "POST",
        path: "/v1/sessions/{id}/approvals",
        id: "approve",
        summary: "An approver's signed receipt for one exact ax_press on a high-risk element of \
                  the session's current observation, bound to sha256 of the action and of the \
                  element (role, name, path, bounds); consumed once by POST .../actions with \
                  approval_id. docs/approvals.md",
        access: Access::Approver,
        request: Some(schema_of::<desk_contract::approval::ApprovalRequest>),
        answer: Answer::Json(schema_of::<desk_contract::approval::ApprovalReceipt>),
        parameters: &[],
        codes: &[
            InvalidRequest,
            InvalidParams,
            AxObservationStale,
            InsufficientData,
            Unsupported,
            NotFound,
            LeaseExpired,
            InvalidState,
            SessionBusy,
            JournalUnavailable,
        ],
        notes: &[
            (
                InvalidParams,
                "the element is no high-risk target of the policy",
            ),
            (
                InsufficientData,
                "the element is not in the observation with exactly that binding",
            ),
        ],
    },
    Operation {
        method: "GET",
        path: "/v1/sessions/{id}/windows",
        id: "get_windows",
        summary: "The app's top-level windows (managed and override-redirect), bottom to top, \
                  with title, role (main, dialog, menu, popup, other), bounds and on-screen \
                  state. Sends no input.",
        access: Access::Session,
        request: None,
        answer: Answer::Json(schema_of::<api::WindowsResponse>),
        parameters: &[],
        codes: &[
            InvalidState,
            DesktopFailed,
            ResourceLimit,
            NotFound,
            LeaseExpired,
            SessionBusy,
            JournalUnavailable,
        ],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/reviews",
        id: "list_reviews",
        summary: "The screenshot gate's review queue: every frame put in review, pending or \
                  decided, with its reasons (never the matched text)",
        access: Access::Reviewer,
        request: None,
        answer: Answer::Json(schema_of::<desk_broker::ReviewList>),
        parameters: &[],
        codes: &[],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/reviews/{id}",
        id: "get_review",
        summary: "One review of the queue",
        access: Access::Reviewer,
        request: None,
        answer: Answer::Json(schema_of::<desk_broker::Review>),
        parameters: &[],
        codes: &[NotFound],
        notes: &[],
    },
    Operation {
        method: "GET",
        path: "/v1/reviews/{id}/frame",
        id: "get_review_frame",
        summary: "The queued frame's PNG bytes, as the gate saw them (for the reviewer only)",
        access: Access::Reviewer,
        request: None,
        answer: Answer::Text("image/png"),
        parameters: &[],
        codes: &[NotFound],
        notes: &[(NotFound, "no such review, or its session was released")],
    },
    Operation {
        method: "POST",
        path: "/v1/reviews/{id}/decision",
        id: "decide_review",
        summary: "Allow or deny a queued frame; the decision is a signed record of the \
                  session's journal, bound to the frame's digest, written before it holds. An \
                  allowed frame reaches the agent at its next screenshot of the same bytes",
        access: Access::Reviewer,
        request: Some(schema_of::<desk_broker::ReviewDecisionRequest>),
        answer: Answer::Json(schema_of::<desk_broker::Review>),
        parameters: &[],
        codes: &[NotFound, InvalidState, SessionBusy, JournalUnavailable],
        notes: &[(InvalidState, "the review was decided already")],
    },
    Operation {
        method: "GET",
        path: "/review",
        id: "review_page",
        summary: "The review page: static HTML and script (no external asset, a strict \
                  Content-Security-Policy); the reviewer types the credential into it",
        access: Access::Open,
        request: None,
        answer: Answer::Text("text/html"),
        parameters: &[],
        codes: &[],
        notes: &[],
    },
];
