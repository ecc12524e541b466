//! The hand-written OpenAPI 3.1 document served at `GET /v1/openapi.json`.
//!
//! Invariant: every route in [`crate::ROUTES`] appears in it with its method (checked by a
//! test); update `openapi.json` whenever a route, body or error code changes.

/// The OpenAPI 3.1 document, as JSON text.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");
