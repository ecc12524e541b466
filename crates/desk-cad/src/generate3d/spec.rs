//! What a 3D task asks for: the part's base, features and finish (a [`PartSpec`] the trusted
//! gold builder makes), the drawing views, the sheet and the task, with the profiles the
//! families draw their bases from.

use serde::{Deserialize, Serialize};

/// The solid the features are cut from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Base {
    /// A closed polygon in the XY plane extruded along +Z from z = 0.
    ExtrudeXy {
        /// Profile vertices (x, y) in mm.
        profile: Vec<[f64; 2]>,
        /// Extrusion height in mm.
        height: f64,
    },
    /// A closed polygon in the XZ plane extruded along +Y from y = 0.
    ExtrudeXz {
        /// Profile vertices (x, z) in mm.
        profile: Vec<[f64; 2]>,
        /// Extrusion depth in mm.
        depth: f64,
    },
    /// A closed (r, z) polygon revolved a full turn about the Z axis.
    Revolve {
        /// Profile vertices (radius, z) in mm.
        profile: Vec<[f64; 2]>,
    },
}

/// The plate's profile: the rectangle `w` x `d` from the origin.
pub fn rectangle_profile(w: f64, d: f64) -> Vec<[f64; 2]> {
    vec![[0.0, 0.0], [w, 0.0], [w, d], [0.0, d]]
}

/// The L-bracket's (x, z) profile: a leg `length` long in X and one `height` high in Z, both
/// `t` thick, the upright at the low-X end.
pub fn l_profile(length: f64, t: f64, height: f64) -> Vec<[f64; 2]> {
    vec![
        [0.0, 0.0],
        [length, 0.0],
        [length, t],
        [t, t],
        [t, height],
        [0.0, height],
    ]
}

/// The flange's (r, z) profile: a disc of radius `outer` and thickness `thick` under a hub of
/// radius `hub` up to `total`.
pub fn hub_profile(outer: f64, thick: f64, hub: f64, total: f64) -> Vec<[f64; 2]> {
    vec![
        [0.0, 0.0],
        [outer, 0.0],
        [outer, thick],
        [hub, thick],
        [hub, total],
        [0.0, total],
    ]
}

/// Rounded or chamfered edges along the extrusion direction at some profile corners.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finish {
    /// `fillet` or `chamfer`.
    pub kind: FinishKind,
    /// Fillet radius or chamfer length in mm.
    pub size: f64,
    /// Indices of the profile vertices whose edges are finished.
    pub corners: Vec<usize>,
}

/// The edge finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishKind {
    /// A round.
    Fillet,
    /// A 45° chamfer.
    Chamfer,
}

/// A direction along a coordinate axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// +X.
    X,
    /// +Y.
    Y,
    /// +Z.
    Z,
    /// -X.
    NegX,
    /// -Y.
    NegY,
    /// -Z.
    NegZ,
}

/// A feature cut from the base.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Feature {
    /// A cylindrical hole from `start` along `axis` (through holes start and end outside).
    Hole {
        /// Centre of the hole's start face.
        start: [f64; 3],
        /// Drilling direction.
        axis: Axis,
        /// Diameter in mm.
        diameter: f64,
        /// Length of the cut in mm.
        depth: f64,
    },
    /// A rectangular pocket (an axis-aligned box removed).
    Pocket {
        /// The box's minimum corner.
        min: [f64; 3],
        /// The box's size.
        size: [f64; 3],
    },
}

/// A parametric part: base, optional finish, then features cut in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartSpec {
    /// The base solid.
    pub base: Base,
    /// Edge finish applied to the base before the cuts.
    pub finish: Option<Finish>,
    /// Holes and pockets.
    pub features: Vec<Feature>,
}

/// A drawing view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// Looking along +Y (from the front, -Y side).
    Front,
    /// Looking along -Y.
    Back,
    /// Looking down -Z.
    Top,
    /// Looking up +Z.
    Bottom,
    /// Looking along -X (from the +X side).
    Right,
    /// Looking along +X.
    Left,
    /// From (+X, -Y, +Z).
    Isometric,
    /// A full section on the plane Y = 0, looking along +Y (the material in front removed),
    /// its cut faces hatched.
    Section,
}

impl View {
    /// The label drawn under the view.
    pub fn label(self) -> &'static str {
        match self {
            View::Front => "FRONT",
            View::Back => "BACK",
            View::Top => "TOP",
            View::Bottom => "BOTTOM",
            View::Right => "RIGHT",
            View::Left => "LEFT",
            View::Isometric => "ISOMETRIC",
            View::Section => "SECTION A-A",
        }
    }

    /// The view's label and where it looks from, for the task text.
    pub fn describe(self) -> String {
        let from = match self {
            View::Front => "looking along +Y",
            View::Back => "looking along -Y",
            View::Top => "looking down -Z",
            View::Bottom => "looking up +Z",
            View::Right => "looking along -X",
            View::Left => "looking along +X",
            View::Isometric => "from +X, -Y, +Z",
            View::Section => "cut on the plane Y = 0 and looking along +Y, cut faces hatched",
        };
        format!("{} ({from})", self.label())
    }

    /// Whether the view is orthographic (dimensioned, hidden edges shown unless a section).
    pub fn orthographic(self) -> bool {
        self != View::Isometric
    }

    /// The section's identifier (its label's "A" of "SECTION A-A"), which the gold stores as
    /// the view's `SectionSymbol` and the task text shows: every gold section is "A" by
    /// construction (one section per sheet at most).
    pub fn section_symbol(self) -> Option<&'static str> {
        (self == View::Section).then_some("A")
    }

    /// The plane Y = c a section view cuts on.
    pub fn section_plane_y(self) -> Option<f64> {
        (self == View::Section).then_some(0.0)
    }

    /// The direction toward the viewer and the view's right direction, in model coordinates.
    pub fn frame(self) -> ([f64; 3], [f64; 3]) {
        let s = std::f64::consts::FRAC_1_SQRT_2;
        match self {
            View::Front => ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0]),
            View::Back => ([0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]),
            View::Top => ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
            View::Bottom => ([0.0, 0.0, -1.0], [1.0, 0.0, 0.0]),
            View::Right => ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
            View::Left => ([-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]),
            View::Isometric => ([1.0, -1.0, 1.0], [s, s, 0.0]),
            View::Section => ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0]),
        }
    }
}

/// The presentation sheet a task asks for (and the gold carries).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SheetSpec {
    /// The TechDraw page's label.
    pub name: String,
    /// Its views; each orthographic one carries a horizontal and a vertical dimension of its
    /// longest horizontal and vertical straight edges and a diameter dimension of its largest
    /// full circle, where it has them.
    pub views: Vec<View>,
    /// Note lines.
    pub notes: Vec<String>,
}

/// The sheet name the benchmark contract requires.
pub const SHEET_NAME: &str = "Layout1";

/// A generated 3D task before ids and splits are assigned.
#[derive(Clone, Debug, PartialEq)]
pub struct PartTask {
    /// Task text with a `{reference}` placeholder for the reference image path.
    pub prompt: String,
    /// The views the reference shows, in drawing order.
    pub views: Vec<View>,
    /// What the gold builder makes (scorer-private).
    pub spec: PartSpec,
    /// The presentation sheet.
    pub sheet: SheetSpec,
}
