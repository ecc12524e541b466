//! Integration tests for desk-cad: corpus determinism, scoring rules and LibreCAD fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod corpus;
mod drafting;
mod fixtures;
mod hostile3d;
mod parts3d;
mod pictures;
mod real_files;
mod scoring;
mod sheet_render;
mod solid;
mod validity;
