//! Integration tests for desk-cad: corpus determinism, scoring rules and LibreCAD fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod corpus;
mod fixtures;
mod scoring;
