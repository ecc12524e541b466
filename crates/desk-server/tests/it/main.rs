//! Integration tests of the broker over its HTTP router, with `FakeDesktop` desktops.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod after_input;
mod capacity;
mod checkpoint;
mod clipboard;
mod control;
mod control_stop;
mod fair;
mod hooked;
mod invalid;
mod kill;
mod kill_fence;
mod lifecycle;
mod observe;
mod openapi;
mod policy;
mod recovery;
mod replay;
mod retention;
mod strict;
mod support;
mod untrusted;
