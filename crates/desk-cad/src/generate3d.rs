//! Seeded generation of 3D part tasks: a [`PartSpec`] (what the trusted gold builder makes),
//! the drawing views the public reference shows, and the task text with every dimension a
//! human needs.
//!
//! Invariants: no clock or OS randomness (a SplitMix64 stream seeded per task index); sizes on
//! a 5 mm grid (hole diameters and fillets on whole mm); every feature lies inside the part so
//! the gold is one valid solid. Three families: a plate (holes, blind hole, pocket, rounded or
//! chamfered corners), an L-bracket (holes in both legs, a rounded bend) and a revolved flange
//! (hub, bore, bolt circle). Views are chosen per task, not always front/top/side.

use serde::{Deserialize, Serialize};

use crate::generate::Rng;
use crate::model::format_value;

/// Base seed of the 3D generator.
const SEED: u64 = 0x00de_5cb0_cad0_3d01;

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
        };
        format!("{} ({from})", self.label())
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

/// Generates 3D task number `index` (0-based); a pure function of `index`.
pub fn generate_part(index: u64) -> PartTask {
    let mut rng = Rng(SEED ^ index.wrapping_mul(0x0100_0000_01b3));
    let mut steps = Vec::new();
    let (spec, views) = match index % 3 {
        0 => plate(&mut rng, &mut steps),
        1 => bracket(&mut rng, &mut steps),
        _ => flange(&mut rng, &mut steps),
    };
    let names: Vec<String> = views.iter().map(|view| view.describe()).collect();
    let mut prompt = format!(
        "Model the part shown in the reference image ({{reference}}) in FreeCAD as one true \
         solid. Units are millimetres. The reference shows {} (visible edges solid, hidden \
         edges dashed, all views at one scale). Keep that orientation; the position of the part \
         does not matter.\n",
        names.join(", ")
    );
    for step in &steps {
        prompt.push_str("- ");
        prompt.push_str(step);
        prompt.push('\n');
    }
    let material = pick(
        &mut rng,
        &["ALUMINIUM 6061-T6", "STEEL S235", "BRASS CW614N"],
    );
    let notes = vec![
        format!("MATERIAL: {material}"),
        "UNITS: MM".to_owned(),
        "BREAK SHARP EDGES".to_owned(),
    ];
    prompt.push_str(&format!(
        "Then add a TechDraw page labelled {SHEET_NAME} showing the same views of the solid \
         (same directions); in each orthographic view, a horizontal dimension of its longest \
         horizontal straight edge, a vertical dimension of its longest vertical straight edge \
         and a diameter dimension of its largest full circle, where the view has them; and one \
         note with the lines: {}.\n",
        notes.join(" / ")
    ));
    prompt.push_str("Save the document (Ctrl+S) when finished.");
    let sheet = SheetSpec {
        name: SHEET_NAME.to_owned(),
        views: views.clone(),
        notes,
    };
    PartTask {
        prompt,
        views,
        spec,
        sheet,
    }
}

fn mm(value: f64) -> String {
    format_value(value)
}

/// A whole-mm value in `lo..=hi`.
fn whole(rng: &mut Rng, lo: u64, hi: u64) -> f64 {
    (lo + rng.next_u64() % (hi - lo + 1)) as f64
}

fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[(rng.next_u64() % items.len() as u64) as usize]
}

fn plate(rng: &mut Rng, steps: &mut Vec<String>) -> (PartSpec, Vec<View>) {
    let (w, d, t) = (rng.grid(100, 160), rng.grid(60, 100), rng.grid(10, 20));
    let corner = whole(rng, 5, 8);
    let finish_kind = pick(rng, &[FinishKind::Fillet, FinishKind::Chamfer]);
    steps.push(format!(
        "A {} x {} x {} mm plate (X by Y by Z) whose four vertical corner edges are {} {} mm.",
        mm(w),
        mm(d),
        mm(t),
        if finish_kind == FinishKind::Fillet {
            "rounded R"
        } else {
            "chamfered"
        },
        mm(corner)
    ));
    let hole = whole(rng, 6, 10);
    let inset = corner + 8.0;
    let mut features = Vec::new();
    for (x, y) in [
        (inset, inset),
        (w - inset, inset),
        (w - inset, d - inset),
        (inset, d - inset),
    ] {
        features.push(Feature::Hole {
            start: [x, y, -1.0],
            axis: Axis::Z,
            diameter: hole,
            depth: t + 2.0,
        });
    }
    steps.push(format!(
        "Four through holes of diameter {} mm along Z, centred {} mm in from both edges at each corner.",
        mm(hole),
        mm(inset)
    ));
    // The pocket stays clear of the corner holes in X, and of the blind hole's top in Z.
    let pocket_depth = (t / 2.0).floor();
    let max_pw = w - 2.0 * (inset + hole / 2.0 + 3.0);
    let (pw, pd) = (
        rng.grid(20, (max_pw / 5.0).floor() as i64 * 5),
        rng.grid(20, d as i64 - 30),
    );
    let (px, py) = ((w - pw) / 2.0, (d - pd) / 2.0);
    features.push(Feature::Pocket {
        min: [px, py, t - pocket_depth],
        size: [pw, pd, pocket_depth + 1.0],
    });
    steps.push(format!(
        "A centred rectangular pocket {} x {} mm, {} mm deep, in the top face.",
        mm(pw),
        mm(pd),
        mm(pocket_depth)
    ));
    if rng.coin() {
        let blind = whole(rng, 5, 8);
        let blind_depth = t - pocket_depth - 3.0;
        features.push(Feature::Hole {
            start: [w / 2.0, d / 2.0, -1.0],
            axis: Axis::Z,
            diameter: blind,
            depth: blind_depth + 1.0,
        });
        steps.push(format!(
            "A blind hole of diameter {} mm, {} mm deep, drilled up from the centre of the bottom face.",
            mm(blind),
            mm(blind_depth)
        ));
    }
    let spec = PartSpec {
        base: Base::ExtrudeXy {
            profile: vec![[0.0, 0.0], [w, 0.0], [w, d], [0.0, d]],
            height: t,
        },
        finish: Some(Finish {
            kind: finish_kind,
            size: corner,
            corners: vec![0, 1, 2, 3],
        }),
        features,
    };
    let plan = pick(rng, &[View::Top, View::Bottom]);
    let side = pick(rng, &[View::Front, View::Right, View::Back]);
    (spec, vec![plan, side, View::Isometric])
}

fn bracket(rng: &mut Rng, steps: &mut Vec<String>) -> (PartSpec, Vec<View>) {
    let (length, height, width) = (rng.grid(60, 120), rng.grid(40, 90), rng.grid(30, 60));
    let t = rng.grid(10, 15);
    let bend = whole(rng, 4, (t as u64) - 2);
    steps.push(format!(
        "An L-bracket extruded {} mm along +Y: a horizontal leg {} mm long in X and a vertical \
         leg {} mm high in Z, both {} mm thick, the vertical leg at the low-X end; the outer \
         bend edge is rounded R{} mm.",
        mm(width),
        mm(length),
        mm(height),
        mm(t),
        mm(bend)
    ));
    let hole = whole(rng, 6, 10);
    let mut features = vec![Feature::Hole {
        start: [t + (length - t) / 2.0, width / 2.0, -1.0],
        axis: Axis::Z,
        diameter: hole,
        depth: t + 2.0,
    }];
    steps.push(format!(
        "A through hole of diameter {} mm in the horizontal leg, centred between the inner face \
         of the vertical leg and the end, and across the width.",
        mm(hole)
    ));
    let n_upright = 1 + rng.next_u64() % 2;
    let z = t + (height - t) / 2.0;
    let ys: Vec<f64> = if n_upright == 1 {
        vec![width / 2.0]
    } else {
        vec![width / 4.0, 3.0 * width / 4.0]
    };
    let upright = whole(rng, 5, 8);
    for y in &ys {
        features.push(Feature::Hole {
            start: [-1.0, *y, z],
            axis: Axis::X,
            diameter: upright,
            depth: t + 2.0,
        });
    }
    steps.push(format!(
        "{} through hole{} of diameter {} mm in the vertical leg, along X, at height {} mm, at \
         Y = {} mm.",
        if n_upright == 1 { "One" } else { "Two" },
        if n_upright == 1 { "" } else { "s" },
        mm(upright),
        mm(z),
        ys.iter().map(|y| mm(*y)).collect::<Vec<_>>().join(" and ")
    ));
    let spec = PartSpec {
        base: Base::ExtrudeXz {
            profile: vec![
                [0.0, 0.0],
                [length, 0.0],
                [length, t],
                [t, t],
                [t, height],
                [0.0, height],
            ],
            depth: width,
        },
        finish: Some(Finish {
            kind: FinishKind::Fillet,
            size: bend,
            corners: vec![0],
        }),
        features,
    };
    let profile = pick(rng, &[View::Front, View::Back]);
    let side = pick(rng, &[View::Left, View::Right]);
    (spec, vec![profile, View::Top, side, View::Isometric])
}

fn flange(rng: &mut Rng, steps: &mut Vec<String>) -> (PartSpec, Vec<View>) {
    let outer = rng.grid(40, 60);
    let thick = rng.grid(10, 15);
    let hub = rng.grid(15, outer as i64 - 20);
    let hub_height = rng.grid(10, 30);
    let bore = 2.0 * (hub - 5.0).min(whole(rng, 6, 15));
    steps.push(format!(
        "A flange: a disc of diameter {} mm and thickness {} mm (Z from 0) with a coaxial hub of \
         diameter {} mm rising {} mm above it, axis along Z.",
        mm(2.0 * outer),
        mm(thick),
        mm(2.0 * hub),
        mm(hub_height)
    ));
    let total = thick + hub_height;
    let mut features = vec![Feature::Hole {
        start: [0.0, 0.0, -1.0],
        axis: Axis::Z,
        diameter: bore,
        depth: total + 2.0,
    }];
    steps.push(format!(
        "A through bore of diameter {} mm on the axis.",
        mm(bore)
    ));
    let n_bolts = pick(rng, &[3u32, 4, 6]);
    let pcd_radius = ((hub + outer) / 2.0).round();
    let bolt = whole(rng, 5, 8);
    for bolt_idx in 0..n_bolts {
        let angle = std::f64::consts::TAU * f64::from(bolt_idx) / f64::from(n_bolts);
        let (x, y) = (pcd_radius * angle.cos(), pcd_radius * angle.sin());
        features.push(Feature::Hole {
            start: [round3(x), round3(y), -1.0],
            axis: Axis::Z,
            diameter: bolt,
            depth: thick + 2.0,
        });
    }
    steps.push(format!(
        "{} through holes of diameter {} mm equally spaced on a {} mm bolt circle, the first on \
         the +X axis.",
        n_bolts,
        mm(bolt),
        mm(2.0 * pcd_radius)
    ));
    let spec = PartSpec {
        base: Base::Revolve {
            profile: vec![
                [0.0, 0.0],
                [outer, 0.0],
                [outer, thick],
                [hub, thick],
                [hub, total],
                [0.0, total],
            ],
        },
        finish: None,
        features,
    };
    let side = pick(rng, &[View::Front, View::Right]);
    let plan = pick(rng, &[View::Top, View::Bottom]);
    (spec, vec![side, plan, View::Isometric])
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}
