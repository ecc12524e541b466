//! 2D judge validity: perturbations of a gold [`Model`] (a moved circle, a removed entity, an
//! extra line, a scaled circle, a removed or changed dimension, changed text, a wrong layer,
//! and where the gold has them a moved or repatterned hatch, a changed angle, a moved leader,
//! a changed note and a lost linetype),
//! written as DXF by desk-cad's writer and scored through the file path, and invalid files
//! (empty, not DXF, a raster IMAGE, an external reference) that must score 0.
//!
//! Invariant: a geometry kind these transforms do not know is left as it is (every match ends
//! in a `_` arm), and a case whose gold has nothing to perturb (no dimension, no text, no
//! named layer) is skipped, not failed.

use std::path::Path;
use std::time::Instant;

mod drafting;
mod edits;

use edits::{changed_dimension, changed_text, first_index, moved, scaled, with_changed};

use dxf::entities::{self as dx, EntityType};

use super::cases::{Expected, TaskValidity, case, gold_cases, ms_since, reason_name, unmade};
use crate::corpus::DrawingType;
use crate::dxf_write::to_drawing;
use crate::model::{Entity, Geometry, Model, Point};
use crate::score::{ScoreReport, ZeroReason, score};
use crate::write_dxf;

/// Makes and judges every 2D case of `gold` in `work`.
pub fn validate_drawing(task: &str, gold: &Model, work: &Path) -> TaskValidity {
    let started = Instant::now();
    let gold_path = work.join("gold.dxf");
    let first = match write_dxf(gold, &gold_path) {
        Ok(()) => score(gold, &gold_path),
        Err(error) => ScoreReport::zero(ZeroReason::Unreadable, error.to_string(), Vec::new()),
    };
    let gold_score = first.score;
    let again = || Ok::<_, std::convert::Infallible>(score(gold, &gold_path));
    let Ok(mut cases) = gold_cases(started, &first, again, judged);
    for (name, model) in perturbations(gold) {
        let case_started = Instant::now();
        let path = work.join(format!("{}.dxf", name.replace(' ', "-")));
        cases.push(match write_dxf(&model, &path) {
            Ok(()) => case(
                name,
                Expected::BelowGold,
                judged(&score(gold, &path)),
                gold_score,
                case_started,
            ),
            Err(error) => unmade(name, Expected::BelowGold, error.to_string(), case_started),
        });
    }
    for (name, reason) in invalid_files(gold, work) {
        let case_started = Instant::now();
        let path = work.join(format!("{}.dxf", name.replace(' ', "-")));
        let expected = Expected::Zero {
            reason: reason_name(&reason),
        };
        let report = score(gold, &path);
        cases.push(case(
            name,
            expected,
            judged(&report),
            gold_score,
            case_started,
        ));
    }
    TaskValidity {
        task: task.to_owned(),
        kind: DrawingType::TwoD,
        gold_score,
        cases,
        elapsed_ms: ms_since(started),
    }
}

fn judged(report: &ScoreReport) -> (f64, Option<String>) {
    (report.score, report.zero_reason.as_ref().map(reason_name))
}

/// The held-out perturbations of `gold`; each is a real change of one scored item.
pub fn perturbations(gold: &Model) -> Vec<(&'static str, Model)> {
    let mut out = Vec::new();
    let circle = |g: &Geometry| matches!(g, Geometry::Circle { .. });
    let drawn = |g: &Geometry| {
        matches!(
            g,
            Geometry::Line { .. }
                | Geometry::Circle { .. }
                | Geometry::Arc { .. }
                | Geometry::Polyline { .. }
        )
    };
    let dimension = |g: &Geometry| g.measured_value().is_some();
    // A circle where the gold has one, else the first drawn entity.
    let target = first_index(gold, circle).or_else(|| first_index(gold, drawn));
    if let Some(moved) = target.and_then(|idx| with_changed(gold, idx, moved)) {
        out.push(("moved entity", moved));
    }
    if let Some(idx) = gold.entities.iter().rposition(|e| drawn(&e.geometry)) {
        let mut removed = gold.clone();
        removed.entities.remove(idx);
        out.push(("removed entity", removed));
    }
    let mut extra = gold.clone();
    let layer = gold.entities.first().map_or("0", |e| e.layer.as_str());
    extra.entities.push(Entity::on_layer(
        layer,
        Geometry::Line {
            a: Point::new(-37.25, -41.75),
            b: Point::new(-12.5, -29.25),
        },
    ));
    out.push(("extra line", extra));
    if let Some(scaled) = target.and_then(|idx| with_changed(gold, idx, scaled)) {
        out.push(("scaled entity", scaled));
    }
    if let Some(idx) = first_index(gold, dimension) {
        let mut removed = gold.clone();
        removed.entities.remove(idx);
        out.push(("removed dimension", removed));
        if let Some(changed) = with_changed(gold, idx, changed_dimension) {
            out.push(("changed dimension", changed));
        }
    }
    let text = |g: &Geometry| matches!(g, Geometry::Text { .. });
    if let Some(changed) =
        first_index(gold, text).and_then(|idx| with_changed(gold, idx, changed_text))
    {
        out.push(("changed text", changed));
    }
    out.extend(drafting::perturbations(gold));
    if gold.uses_named_layers()
        && let Some(entity) = gold.entities.first()
    {
        let mut wrong = gold.clone();
        wrong.entities[0].layer = if entity.layer == "WRONG" {
            "0"
        } else {
            "WRONG"
        }
        .to_owned();
        out.push(("wrong layer", wrong));
    }
    out
}

/// Writes the invalid files into `work`: (case name, the zero reason it must get). A file that
/// cannot be written is left absent, so its case fails on `missing`.
fn invalid_files(gold: &Model, work: &Path) -> Vec<(&'static str, ZeroReason)> {
    let at = |name: &str| work.join(format!("{}.dxf", name.replace(' ', "-")));
    let _ = std::fs::write(at("empty file"), b"");
    let _ = std::fs::write(at("not dxf"), b"\x89PNG\r\n\x1a\n not a drawing\n");
    let mut raster = to_drawing(gold);
    raster.add_entity(dx::Entity::new(EntityType::Image(dx::Image::default())));
    let _ = raster.save_file(at("raster image"));
    let mut xref = to_drawing(gold);
    let mut block = dxf::Block {
        name: "PARTS".to_owned(),
        xref_path_name: "parts.dxf".to_owned(),
        ..Default::default()
    };
    block.set_is_xref(true);
    xref.add_block(block);
    xref.add_entity(dx::Entity::new(EntityType::Insert(dx::Insert {
        name: "PARTS".to_owned(),
        ..Default::default()
    })));
    let _ = xref.save_file(at("xref"));
    vec![
        ("empty file", ZeroReason::Empty),
        ("not dxf", ZeroReason::Unreadable),
        ("raster image", ZeroReason::Raster),
        ("xref", ZeroReason::Xref),
        ("missing file", ZeroReason::Missing),
    ]
}
