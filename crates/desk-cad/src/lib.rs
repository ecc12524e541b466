//! Scorer-side CAD code for the open LibreCAD/DXF benchmark.
//!
//! This crate is trusted evaluator code: it knows nothing about the broker, HTTP or X11.
//! It owns the normalized 2D drawing model ([`model`]), DXF reading and writing ([`dxf_io`]),
//! the deterministic task corpus ([`corpus`]), the reference renderer ([`render`]) and the
//! similarity scorer ([`mod@score`]); for 3D parts, the sandboxed FreeCAD inspector ([`solid`]),
//! the seeded part generator ([`generate3d`]), gold builds and reference sheets
//! ([`part_task`]) and the 3D judge ([`score3d`]); [`validity`] checks both judges against
//! held-out perturbations of each task's gold. Every output is a pure function of its
//! inputs: no clock, no randomness outside the seeded generators, no hash-map iteration order.
#![forbid(unsafe_code)]

mod category;
pub mod corpus;
pub mod dxf_io;
mod dxf_raw;
mod dxf_write;
mod error;
mod generate;
pub mod generate3d;
mod greedy;
mod matching;
pub mod model;
mod normalize;
pub mod part_task;
pub mod render;
pub mod score;
pub mod score3d;
pub mod solid;
pub mod task_score;
pub mod validity;

pub use corpus::{
    ArtifactKind, Budgets, CONTRACT_VERSION, CORPUS_VERSION, CorpusVersion, DrawingType, Gold,
    Level, Split, Task, TaskId, generate_corpus, generate_corpus_version, gold_file, load_gold,
    load_task_gold, load_task_list, load_tasks, write_corpus, write_corpus_version,
};
pub use dxf_io::{Forbidden, ReadOutcome, read_dxf, read_dxf_bytes, write_dxf};
pub use error::CadError;
pub use model::{DimKind, Entity, Geometry, HatchPattern, Model, Point};
pub use render::overlay::{render_overlay_png, render_overlay_svg};
pub use render::{render_png, render_svg};
pub use score::{CategoryScore, ScoreReport, ZeroReason, score, score_model};
pub use task_score::{CategoryLine, TaskScore, score_task};
