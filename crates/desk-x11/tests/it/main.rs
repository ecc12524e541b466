//! Integration tests for desk-x11 against real Xvfb + openbox displays, asserting on what the
//! probe window recorded rather than on what the worker believes it sent.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    unreachable_pub
)]

mod clipboard;
mod desk;
mod handoff;
mod input;
mod keys;
mod observe;
mod prohibited;
mod protocol;
