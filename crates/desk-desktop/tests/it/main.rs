//! desk-desktop's integration tests (real Xvfb and openbox).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;
mod wm;
