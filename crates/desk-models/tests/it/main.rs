//! Integration tests of the model adapters against scripted model servers on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod chat;
mod e2e;
mod live_shapes;
mod responses;
mod support;
