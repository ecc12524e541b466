//! The drafting kinds' perturbations (corpus v3): a moved or repatterned hatch, a changed
//! angle, a moved leader, a changed note and a lost linetype, each where the gold has one.

use super::edits::{changed_dimension, changed_text, first_index, moved, with_changed};
use crate::model::{Geometry, Model};

/// A drafting perturbation: its name, which geometry it applies to, and the change.
type DraftingCase = (
    &'static str,
    fn(&Geometry) -> bool,
    fn(&Geometry) -> Option<Geometry>,
);

/// The drafting categories' perturbations, each where the gold has the kind.
pub(super) fn perturbations(gold: &Model) -> Vec<(&'static str, Model)> {
    let mut out = Vec::new();
    let hatch = |g: &Geometry| matches!(g, Geometry::Hatch { .. });
    let angular = |g: &Geometry| matches!(g, Geometry::AngularDim { .. });
    let leader = |g: &Geometry| matches!(g, Geometry::Leader { .. });
    let note = |g: &Geometry| matches!(g, Geometry::MText { .. });
    let cases: [DraftingCase; 5] = [
        ("moved hatch", hatch, moved),
        ("repatterned hatch", hatch, repatterned),
        ("changed angle", angular, changed_dimension),
        ("moved leader", leader, moved),
        ("changed note", note, changed_text),
    ];
    for (name, wanted, change) in cases {
        if let Some(changed) =
            first_index(gold, wanted).and_then(|idx| with_changed(gold, idx, change))
        {
            out.push((name, changed));
        }
    }
    if let Some(idx) = gold.entities.iter().position(|e| e.linetype.is_some()) {
        let mut continuous = gold.clone();
        continuous.entities[idx].linetype = None;
        out.push(("lost linetype", continuous));
    }
    out
}

fn repatterned(geometry: &Geometry) -> Option<Geometry> {
    match geometry.clone() {
        Geometry::Hatch { loops, mut pattern } => {
            pattern.pattern = if pattern.pattern == "ANSI37" {
                "ANSI31"
            } else {
                "ANSI37"
            }
            .to_owned();
            Some(Geometry::Hatch { loops, pattern })
        }
        _ => None,
    }
}
