//! The judge's pictures of a 3D task for the report: both `Layout1` sheets as the judge drew
//! them (`solid/sheet_draw.py`, the same drawings the `presentation` part compares) and an
//! isometric line drawing of each part (`solid/part_draw.py`), all from the one sandboxed
//! judge run that scores the candidate ([`crate::score3d::score_fcstd_pictured`]), drawn by the
//! trusted 2D renderer. Nothing here comes from the agent's screenshots.
//!
//! The part drawing is the union of the part's solids, refined (no seam edges, as on the
//! sheet), seen from the front-right-top (+X, -Y, +Z) with Z up, projected by OCCT's
//! hidden-line removal: visible edges continuous, hidden ones dashed. It is printed after the
//! judge's report, so drawing it can never change a score.

use serde::Deserialize;

use crate::CadError;
use crate::generate3d::SHEET_NAME;
use crate::model::{Entity, Geometry, Model, Point};
use crate::render::render_png;
use crate::score3d::render_sheet_png;
use crate::solid::{FcstdFacts, SheetDrawing};

/// The picture script, put between the reader and the judge when pictures are asked for.
pub(crate) const SCRIPT: &str = include_str!("part_draw.py");
/// The prefix of the picture script's output line.
const PREFIX: &str = "DESKPICTURES ";

/// One part drawn as lines in the isometric view's plane, in mm.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartDrawing {
    /// Visible edges (sharp, smooth and outline) as polylines.
    pub visible: Vec<Vec<[f64; 2]>>,
    /// Hidden edges as polylines.
    pub hidden: Vec<Vec<[f64; 2]>>,
    /// The drawing stopped at its point budget.
    pub truncated: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PictureLine {
    gold: Option<PartDrawing>,
    candidate: Option<PartDrawing>,
}

/// What the judge drew of the gold and the candidate (each `None` when it could not be drawn:
/// no `Layout1`, no solid, a zero before the judge ran, a drawing that failed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgePictures {
    /// The gold's `Layout1` as the judge recomputed it.
    pub gold_sheet: Option<SheetDrawing>,
    /// The candidate's `Layout1` as the judge recomputed it.
    pub candidate_sheet: Option<SheetDrawing>,
    /// The gold part, isometric.
    pub gold_part: Option<PartDrawing>,
    /// The candidate part, isometric.
    pub candidate_part: Option<PartDrawing>,
}

fn layout_drawing(facts: &FcstdFacts) -> Option<SheetDrawing> {
    match facts {
        FcstdFacts::Ok { sheets, .. } => sheets
            .iter()
            .find(|sheet| sheet.label == SHEET_NAME)
            .and_then(|sheet| sheet.drawing.clone()),
        _ => None,
    }
}

impl JudgePictures {
    /// The pictures of one judge run: the sheets from both sides' facts, the parts from the
    /// picture line of its output (absent when the run stopped before it).
    pub(crate) fn read(gold: &FcstdFacts, candidate: &FcstdFacts, stdout: &str) -> Self {
        let parts = stdout
            .lines()
            .find_map(|line| line.strip_prefix(PREFIX))
            .and_then(|json| serde_json::from_str::<PictureLine>(json).ok());
        let (gold_part, candidate_part) = match parts {
            Some(line) => (line.gold, line.candidate),
            None => (None, None),
        };
        Self {
            gold_sheet: layout_drawing(gold),
            candidate_sheet: layout_drawing(candidate),
            gold_part,
            candidate_part,
        }
    }

    /// The four renders as PNG bytes, in the order gold sheet, candidate sheet, gold part,
    /// candidate part; `None` for a drawing that is absent or has no line.
    pub fn render_pngs(&self) -> Result<[Option<Vec<u8>>; 4], CadError> {
        let sheet = |drawing: &Option<SheetDrawing>| -> Result<Option<Vec<u8>>, CadError> {
            match drawing {
                Some(drawing) if !drawing.views.is_empty() => render_sheet_png(drawing).map(Some),
                _ => Ok(None),
            }
        };
        let part = |drawing: &Option<PartDrawing>| -> Result<Option<Vec<u8>>, CadError> {
            match drawing {
                Some(drawing) if !drawing.visible.is_empty() => render_part_png(drawing).map(Some),
                _ => Ok(None),
            }
        };
        Ok([
            sheet(&self.gold_sheet)?,
            sheet(&self.candidate_sheet)?,
            part(&self.gold_part)?,
            part(&self.candidate_part)?,
        ])
    }
}

fn polyline(points: &[[f64; 2]]) -> Option<Geometry> {
    let points: Vec<Point> = points
        .iter()
        .filter(|p| p[0].is_finite() && p[1].is_finite())
        .map(|p| Point::new(p[0], p[1]))
        .collect();
    (points.len() >= 2).then_some(Geometry::Polyline {
        points,
        closed: false,
    })
}

/// The part drawing as a 2D model: visible edges continuous, hidden ones `HIDDEN`.
pub fn part_model(drawing: &PartDrawing) -> Model {
    let mut entities: Vec<Entity> = drawing
        .visible
        .iter()
        .filter_map(|line| polyline(line))
        .map(Entity::new)
        .collect();
    for line in &drawing.hidden {
        if let Some(geometry) = polyline(line) {
            let mut entity = Entity::new(geometry);
            entity.linetype = Some("HIDDEN".to_owned());
            entities.push(entity);
        }
    }
    Model { entities }
}

/// The trusted render of a part drawing as PNG bytes (1600x1200, fitted to its content).
pub fn render_part_png(drawing: &PartDrawing) -> Result<Vec<u8>, CadError> {
    render_png(&part_model(drawing))
}
