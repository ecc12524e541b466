//! The harness against a real broker served in-process over a temp Unix socket, with
//! `FakeDesktop` desktops: the batching rule, budgets, fail-closed behaviour, request-id
//! determinism, replay, and the HTML report rendered in headless Chromium.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod report;
mod rollout;
mod summary;
mod support;
