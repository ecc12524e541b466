//! The oracle agent: solves a task from its gold through the same `computer_action` path a
//! model uses. A 2D task as a person at LibreCAD's command line and mouse would, following
//! `docs/librecad-recipes.md` exactly (this file); a 3D task through FreeCAD's Part and
//! TechDraw GUI, following `docs/freecad-recipes.md` ([`freecad`]).
//!
//! Every entity is a short deterministic keyboard batch that starts with `ctrl+m` (focus the
//! command line) and ends with two Escapes. Steps that depend on a dialog, a selection click or
//! a wait are one-action batches: layer creation through the Layer List dock, the circle click
//! of radius and diameter dimensions (through the documented view transform), and the Text
//! dialog. The script is fixed in advance from the gold; observations are not consulted.

use std::collections::VecDeque;

use desk_cad::generate3d::PartTask;
use desk_cad::model::{DimKind, Entity, Geometry, Model, Point};
use desk_contract::DisplaySize;
use serde_json::{Value, json};

use crate::agent::{
    Agent, AgentError, AgentInfo, BoxFuture, ModelSaid, Observation, TaskBrief, TokenUsage, Turn,
    TurnOutcome,
};

/// An empty canvas spot (drawing ≈ (352, 190)), outside every corpus entity.
const EMPTY_CANVAS: (i64, i64) = (1500, 150);

/// The scripted batches of a whole drawing, ending with Ctrl+S and `done`.
pub fn oracle_batches(gold: &Model) -> Vec<Vec<Value>> {
    let mut batches = vec![vec![click(EMPTY_CANVAS, "give the drawing window focus")]];
    // Layers made so far, with the linetype each was given.
    let mut created: Vec<(String, Option<String>)> = vec![("0".to_owned(), None)];
    let mut current_layer = "0".to_owned();
    let mut entity_idx = 0;
    while let Some(entity) = gold.entities.get(entity_idx) {
        if !entity.layer.eq_ignore_ascii_case(&current_layer) {
            layers::layer_batches(entity, &mut created, &mut batches);
            current_layer.clone_from(&entity.layer);
        }
        // A linetype its layer does not give: set the pen for this entity, then reset it.
        let by_layer = created
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(&entity.layer))
            .and_then(|(_, linetype)| linetype.clone());
        let own_linetype = (entity.linetype != by_layer).then_some(entity.linetype.as_deref());
        if let Some(linetype) = own_linetype {
            batches.push(drafting::pen_linetype(linetype));
        }
        // Consecutive connected lines on one layer become one `line` command.
        let mut chain = vec![entity];
        while let (Some(last), Some(next)) = (chain.last(), gold.entities.get(entity_idx + 1)) {
            match (&last.geometry, &next.geometry) {
                (Geometry::Line { b, .. }, Geometry::Line { a, .. })
                    if a == b && next.layer == entity.layer =>
                {
                    chain.push(next);
                    entity_idx += 1;
                }
                _ => break,
            }
        }
        entity_batches(&chain, &mut batches);
        if own_linetype.is_some() {
            batches.push(drafting::pen_linetype(None));
        }
        entity_idx += 1;
    }
    batches.push(vec![
        key(&["ctrl", "s"], "save the drawing in place"),
        wait(1000, "let the save finish"),
        json!({"type": "done", "intent": "the drawing matches the reference"}),
    ]);
    batches
}

fn entity_batches(chain: &[&Entity], batches: &mut Vec<Vec<Value>>) {
    let Some(first) = chain.first() else {
        return;
    };
    match &first.geometry {
        Geometry::Line { a, .. } => {
            let mut entries = vec![(pt(*a), "first point of the line")];
            for entity in chain {
                if let Geometry::Line { b, .. } = entity.geometry {
                    entries.push((pt(b), "next point of the line"));
                }
            }
            batches.push(command("line", &entries));
        }
        Geometry::Polyline { points, closed } => {
            let mut entries: Vec<(String, &str)> = points
                .iter()
                .map(|p| (pt(*p), "next polyline vertex"))
                .collect();
            if *closed {
                entries.push(("close".to_owned(), "close the polyline"));
            }
            batches.push(command("polyline", &entries));
        }
        Geometry::Circle { center, r } => batches.push(command(
            "circle",
            &[(pt(*center), "circle center"), (num(*r), "circle radius")],
        )),
        Geometry::Arc {
            center,
            r,
            start_deg,
            end_deg,
        } => batches.push(command(
            "arc",
            &[
                ("center".to_owned(), "switch the arc to center form"),
                (pt(*center), "arc center"),
                (num(*r), "arc radius"),
                (num(*start_deg), "start angle"),
                (num(*end_deg), "end angle (counter-clockwise)"),
            ],
        )),
        Geometry::LinearDim {
            p1,
            p2,
            dim_line_point,
            kind,
        } => {
            let name = match kind {
                DimKind::Horizontal => "dimhorizontal",
                DimKind::Vertical => "dimvertical",
                DimKind::Aligned => "dimaligned",
            };
            batches.push(command(
                name,
                &[
                    (pt(*p1), "first extension-line origin"),
                    (pt(*p2), "second extension-line origin"),
                    (pt(*dim_line_point), "dimension line location"),
                ],
            ));
        }
        Geometry::RadialDim {
            center,
            point_on_circle,
            diameter,
        } => radial_batches(*center, *point_on_circle, *diameter, batches),
        Geometry::Text {
            insert,
            height,
            value,
        } => text_batches(*insert, *height, value, batches),
        other => drafting::batches(other, batches),
    }
}

fn radial_batches(center: Point, edge: Point, diameter: bool, batches: &mut Vec<Vec<Value>>) {
    let name = if diameter { "dimdiameter" } else { "dimradius" };
    batches.push(vec![
        key(&["ctrl", "m"], "focus the command line"),
        type_text(name, &format!("start the {name} command")),
        key(&["return"], "confirm the command"),
    ]);
    batches.push(vec![click(
        drawing_to_screen(edge),
        "select the circle or arc by its edge",
    )]);
    let angle = (edge.y - center.y).atan2(edge.x - center.x).to_degrees();
    let placement = if diameter {
        // A typed point sets the diameter's direction (recipes, section 5).
        let r = center.dist(edge);
        (pt(center.polar(r + 10.0, angle)), "dimension line position")
    } else {
        (num(angle), "dimension angle")
    };
    batches.push(vec![
        key(
            &["ctrl", "m"],
            "the click took focus; back to the command line",
        ),
        type_text(&placement.0, placement.1),
        key(&["return"], "confirm the entry"),
        key(&["escape"], "finish the command"),
        key(&["escape"], "back to idle"),
    ]);
}

fn text_batches(insert: Point, height: f64, value: &str, batches: &mut Vec<Vec<Value>>) {
    open_dialog("text", "Text", batches);
    batches.push(vec![
        key(&["ctrl", "a"], "select the old text"),
        type_text(&typeable(value), "the text"),
        key(&["tab"], "to the Height field"),
        key(&["ctrl", "a"], "select the old height"),
        type_text(&num(height), "text height"),
        key(&["tab"], "to the Angle field"),
        key(&["ctrl", "a"], "select the old angle"),
        type_text("0", "text angle"),
        key(&["return"], "OK: close the dialog"),
    ]);
    place_after_dialog(insert, "insertion point (left baseline)", &[], batches);
}

/// Plays [`oracle_batches`] of a gold drawing, one batch per turn.
pub struct OracleAgent {
    batches: VecDeque<Vec<Value>>,
    /// Why this oracle cannot play its task (it fails at start, before any input).
    unsolved: Option<String>,
}

impl OracleAgent {
    /// An oracle for `gold` (read from the scorer-private gold directory by the caller).
    pub fn new(gold: &Model) -> Self {
        Self {
            batches: oracle_batches(gold).into(),
            unsolved: None,
        }
    }

    /// An oracle for a 3D task: the FreeCAD recipe of [`freecad::part_batches`], or
    /// [`OracleAgent::unsolved`] when the recipe cannot make the part.
    pub fn for_part(part: &PartTask) -> Self {
        match freecad::part_batches(part) {
            Ok(batches) => Self {
                batches: batches.into(),
                unsolved: None,
            },
            Err(reason) => Self::unsolved(&format!("the FreeCAD recipe cannot make {reason}")),
        }
    }

    /// An oracle for a task it has no recipe for: it fails at start with `reason` and sends
    /// nothing, so the rollout ends `agent_failed` and the untouched attempt is judged as it is
    /// (never a made-up score).
    pub fn unsolved(reason: &str) -> Self {
        Self {
            batches: VecDeque::new(),
            unsolved: Some(reason.to_owned()),
        }
    }
}

impl Agent for OracleAgent {
    fn info(&self) -> AgentInfo {
        AgentInfo {
            agent: "oracle".to_owned(),
            model: None,
        }
    }

    fn start<'a>(&'a mut self, brief: &'a TaskBrief) -> BoxFuture<'a, Result<(), AgentError>> {
        // The dock positions and the view transform were measured at 1920x1080 only.
        let result = if let Some(reason) = &self.unsolved {
            Err(AgentError {
                agent: "oracle".to_owned(),
                message: reason.clone(),
            })
        } else if brief.display == DisplaySize::FULL_HD {
            Ok(())
        } else {
            Err(AgentError {
                agent: "oracle".to_owned(),
                message: format!(
                    "the oracle's recipes assume a 1920x1080 display, not {}",
                    brief.display
                ),
            })
        };
        Box::pin(async move { result })
    }

    fn turn<'a>(
        &'a mut self,
        observation: &'a Observation,
    ) -> BoxFuture<'a, Result<Turn, AgentError>> {
        let outcome = match self.batches.pop_front() {
            Some(actions) => TurnOutcome::Actions {
                call_id: format!("oracle-{}", observation.turn),
                actions,
            },
            None => TurnOutcome::NoToolCall {
                text: "the oracle script is finished".to_owned(),
            },
        };
        Box::pin(async move {
            Ok(Turn {
                outcome,
                usage: TokenUsage::default(),
                acknowledged_safety_checks: Vec::new(),
                said: ModelSaid::default(),
            })
        })
    }
}

mod drafting;
mod freecad;
mod layers;
mod steps;

pub use steps::drawing_to_screen;
use steps::{
    click, command, key, num, open_dialog, place_after_dialog, pt, type_text, typeable, wait,
};

#[cfg(test)]
mod tests;
