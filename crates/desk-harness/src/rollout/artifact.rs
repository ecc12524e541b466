//! Scoring a rollout's retrieved artifact with the judge of its task's kind, and the renders
//! the report shows beside the score (2D: the candidate and the overlay on the gold).

use std::path::Path;

use desk_cad::{Gold, TaskScore, score_task};

use crate::error::{HarnessError, write_file};
use crate::record::RolloutRecord;

/// Scores the retrieved artifact (the record keeps its missing-file zero when there is none)
/// and, for a drawing, renders the candidate and the overlay.
///
/// The 3D judge's own failures (no sandbox, a bad gold) are errors, never a candidate's zero.
pub(super) fn score_artifact(
    gold: &Gold,
    dir: &Path,
    record: &mut RolloutRecord,
) -> Result<(), HarnessError> {
    let Some(artifact) = &record.artifact else {
        return Ok(());
    };
    let path = dir.join(&artifact.path);
    record.score = score_task(gold, &path)?;
    if let (Gold::Drawing(gold), TaskScore::Drawing(_)) = (gold, &record.score)
        && let Ok(outcome) = desk_cad::read_dxf(&path)
    {
        if let Ok(png) = desk_cad::render_png(&outcome.model) {
            write_file(&dir.join("candidate.png"), &png)?;
            record.paths.candidate_render = Some("candidate.png".to_owned());
        }
        if let Ok(png) = desk_cad::render_overlay_png(gold, &outcome.model) {
            write_file(&dir.join("overlay.png"), &png)?;
            record.paths.overlay = Some("overlay.png".to_owned());
        }
    }
    Ok(())
}
