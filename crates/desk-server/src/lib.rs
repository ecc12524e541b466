//! The deskbroker HTTP server: the `/v1` routes and their handlers, extractors, the one auth
//! layer, errors on the wire, connection handling, TLS, serving and the OpenAPI document.
//!
//! Everything behind a handler is desk-broker's core ([`desk_broker::Broker`]); this crate
//! depends on it, never the reverse, and desk-broker links no HTTP crate.
#![forbid(unsafe_code)]
