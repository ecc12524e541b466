//! What every 2D generator step writes with: the [`Builder`] that collects entities and the
//! prompt's sentences, the plate outline and its corner treatment, and points as the prompt
//! prints them.

use crate::model::{Entity, Geometry, Point, format_value};

/// Collects entities and the matching prompt sentences.
pub(super) struct Builder {
    pub(super) layers: bool,
    pub(super) entities: Vec<Entity>,
    pub(super) steps: Vec<String>,
}

/// A linetype for an entity the builder adds.
const CONTINUOUS: Option<&str> = None;

pub(super) fn fmt_point(p: Point) -> String {
    format!("({}, {})", format_value(p.x), format_value(p.y))
}

impl Builder {
    pub(super) fn add(&mut self, layer: &str, geometry: Geometry) {
        self.add_styled(layer, CONTINUOUS, geometry);
    }

    pub(super) fn add_styled(&mut self, layer: &str, linetype: Option<&str>, geometry: Geometry) {
        let layer = if self.layers { layer } else { "0" };
        let entity = Entity::on_layer(layer, geometry);
        self.entities.push(match linetype {
            Some(linetype) => entity.with_linetype(linetype),
            None => entity,
        });
    }

    pub(super) fn step(&mut self, sentence: String) {
        self.steps.push(sentence);
    }
}

/// The plate outline: a rectangle at (x0, y0) of size w x h.
#[derive(Clone, Copy)]
pub(super) struct Plate {
    pub(super) x0: f64,
    pub(super) y0: f64,
    pub(super) w: f64,
    pub(super) h: f64,
}

impl Plate {
    pub(super) fn x1(&self) -> f64 {
        self.x0 + self.w
    }
    pub(super) fn y1(&self) -> f64 {
        self.y0 + self.h
    }
}

/// How the outline's corner is treated.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Corner {
    Square,
    Rounded(f64),
    Chamfered(f64),
}
