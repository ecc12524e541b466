//! Judge validity: for one corpus task, the held-out perturbations of its gold, judged by the
//! task's own judge, each with the relation to the gold it must keep. The gold scores exactly
//! 1 against itself, and the same file the same report twice; a perturbed attempt (a moved,
//! removed, extra or scaled feature, a changed dimension or text, a wrong layer, a missing
//! view, the sheet under another name, no sheet) scores strictly between 0 and the gold; an
//! invalid file (empty, not the format, forbidden content, a mesh, a Python feature) scores
//! exactly 0 with the expected zero reason.
//!
//! 2D tasks ([`drawing`]): the perturbed [`Model`]s are written with desk-cad's DXF writer and
//! scored through the file path, as a candidate is. 3D tasks ([`part`]): every file is made by
//! trusted FreeCAD in the judge's sandbox (the gold builder for perturbed specs and sheets, our
//! own script for meshes and trap files); the judge never runs the candidate's code.
//!
//! Invariant: the cases and their scores are a pure function of the gold; only the `elapsed_ms`
//! timings (measurements, not scores) read the clock.

use std::path::Path;

use crate::generate3d::PartTask;
use crate::{CadError, Model};

mod cases;
pub mod drawing;
pub mod part;

pub use cases::{CaseResult, Expected, MARGIN_EPSILON, TaskValidity};

/// A task's gold, as validity takes it.
#[derive(Clone, Copy, Debug)]
pub enum ValidityGold<'a> {
    /// A 2D task's gold drawing.
    Drawing(&'a Model),
    /// A 3D task's generated part (its gold is built from it).
    Part(&'a PartTask),
}

/// Makes and judges every case of one task in `work` (an empty directory it may fill). An error
/// is the judge's own failure (no sandbox, a gold that does not build), not a failed case.
pub fn validate_task(
    task: &str,
    gold: ValidityGold<'_>,
    work: &Path,
) -> Result<TaskValidity, CadError> {
    match gold {
        ValidityGold::Drawing(model) => Ok(drawing::validate_drawing(task, model, work)),
        ValidityGold::Part(part) => part::validate_part(task, part, work),
    }
}

#[cfg(test)]
mod tests;
