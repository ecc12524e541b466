//! Scoring a rollout's retrieved artifact with the judge of its task's kind, and the renders
//! the report shows beside the score (2D: the candidate and the overlay on the gold; 3D: both
//! sheets and both parts as the judge drew them in the scoring run).

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
    if let Gold::Part(gold) = gold {
        let (report, pictures) = desk_cad::score3d::score_fcstd_pictured(gold, &path)?;
        record.score = TaskScore::Part(report);
        return write_judge_pictures(&pictures, dir, record);
    }
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

/// Writes the 3D judge's renders into the rollout directory `dir` (gold and candidate sheet,
/// gold and candidate part) and records the ones it could draw in `record.paths`.
pub fn write_judge_pictures(
    pictures: &desk_cad::solid::pictures::JudgePictures,
    dir: &Path,
    record: &mut RolloutRecord,
) -> Result<(), HarnessError> {
    // A render that fails leaves its picture out of the report; the score stands.
    let [gold_sheet, candidate_sheet, gold_part, candidate_part] = match pictures.render_pngs() {
        Ok(pngs) => pngs,
        Err(error) => {
            tracing::warn!(%error, "the 3D judge's pictures could not be rendered");
            return Ok(());
        }
    };
    let paths = &mut record.paths;
    for (png, name, slot) in [
        (gold_sheet, "gold-sheet.png", &mut paths.gold_sheet),
        (
            candidate_sheet,
            "candidate.png",
            &mut paths.candidate_render,
        ),
        (gold_part, "gold-part.png", &mut paths.gold_part),
        (
            candidate_part,
            "candidate-part.png",
            &mut paths.candidate_part,
        ),
    ] {
        if let Some(png) = png {
            write_file(&dir.join(name), &png)?;
            *slot = Some(name.to_owned());
        }
    }
    Ok(())
}
