//! Seeded generation of the graded 2D tasks behind [`crate::corpus`].
//!
//! Invariants: no clock or OS randomness (a SplitMix64 stream seeded per task); every
//! coordinate lies on a 5 mm grid inside 0..300 x 0..200 (dimension label positions and
//! derived arc/diameter points excepted); feature sizes stay within 10..200 mm. Seven tasks
//! per level: L1 lines and rectangles, L2 adds circles and arcs, L3 adds linear and radial
//! dimensions, L4 adds text and named layers. With [`Drafting::On`] (corpus v3) the same
//! drawings also carry the drafting categories of [`drafting`]: leaders and callouts, angular
//! dimensions, centre and hidden linetypes, a hatched section view and a multi-line note.

use crate::corpus::Level;
use crate::model::{Geometry, Model, Point, format_value};

mod builder;
mod dims;
mod drafting;

use builder::{Builder, Corner, Plate, fmt_point};

/// Whether generated drawings carry the drafting categories (corpus v3 onwards).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drafting {
    Off,
    On,
}

/// Base seed of corpus v1.
const SEED: u64 = 0x00de_5cb0_cad0_0001;
/// Tasks per level.
pub(crate) const TASKS_PER_LEVEL: usize = 7;

/// A generated task before ids and splits are assigned.
pub(crate) struct Generated {
    pub(crate) level: Level,
    /// Prompt text with a `{reference}` placeholder for the reference image path.
    pub(crate) prompt: String,
    pub(crate) gold: Model,
}

/// SplitMix64: small, seedable and stable across platforms.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A multiple of 5 in `lo..=hi` (both multiples of 5).
    pub(crate) fn grid(&mut self, lo: i64, hi: i64) -> f64 {
        let n_steps = ((hi - lo) / 5).max(0) as u64 + 1;
        let step = (self.next_u64() % n_steps) as i64;
        (lo + 5 * step) as f64
    }

    pub(crate) fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

pub(crate) fn generate_all(drafting: Drafting) -> Vec<Generated> {
    let levels = [Level::L1, Level::L2, Level::L3, Level::L4];
    let mut out = Vec::new();
    for (level_idx, level) in levels.into_iter().enumerate() {
        for variant in 0..TASKS_PER_LEVEL {
            let task_idx = (level_idx * TASKS_PER_LEVEL + variant) as u64;
            let mut rng = Rng(SEED ^ task_idx.wrapping_mul(0x0100_0000_01b3));
            out.push(generate_one(level, variant, &mut rng, drafting));
        }
    }
    out
}

fn generate_one(level: Level, variant: usize, rng: &mut Rng, drafting: Drafting) -> Generated {
    let mut builder = Builder {
        layers: level == Level::L4,
        entities: Vec::new(),
        steps: Vec::new(),
    };
    let w = rng.grid(60, 200);
    let h = rng.grid(40, 130);
    let x0 = rng.grid(20, 270 - w as i64);
    let y0 = rng.grid(25, 165 - h as i64);
    let plate = Plate { x0, y0, w, h };
    let corner = match (level, variant % 3) {
        (Level::L1, _) => Corner::Square,
        (_, 1) => Corner::Rounded(rng.grid(10, 20)),
        (Level::L3 | Level::L4, 2) => Corner::Chamfered(rng.grid(10, 20)),
        _ => Corner::Square,
    };
    // An angular dimension picks the chamfer and the top edge as lines.
    let angled = drafting == Drafting::On && matches!(corner, Corner::Chamfered(_));
    let as_polyline = rng.coin() && !angled;
    outline(&mut builder, plate, corner, as_polyline);
    let mut holes_drawn = Vec::new();
    if level == Level::L1 {
        l1_extras(&mut builder, plate, variant, rng);
    } else {
        holes_drawn = holes(&mut builder, plate, corner, variant, rng);
        if level >= Level::L3 {
            dims::dimensions(&mut builder, plate, corner, &holes_drawn);
        }
    }
    if drafting == Drafting::On && level >= Level::L3 {
        drafting::add(&mut builder, level, plate, corner, &holes_drawn);
    }
    if level == Level::L4 {
        let title = format!(
            "PLATE {}-{}",
            char::from(b'A' + (variant as u8)),
            rng.grid(10, 95)
        );
        let insert = Point::new(plate.x0, plate.y1() + 15.0);
        builder.add(
            "TEXT",
            Geometry::Text {
                insert,
                height: 5.0,
                value: title.clone(),
            },
        );
        builder.step(format!(
            "Add the single-line text \"{title}\" with height 5 mm and insertion point {} (left baseline).",
            fmt_point(insert)
        ));
        builder.step(match drafting {
            Drafting::Off => "Put the outline on layer OUTLINE, the circles on layer HOLES, the \
                              dimensions on layer DIMS and the text on layer TEXT (create these \
                              layers)."
                .to_owned(),
            Drafting::On => drafting::LAYERS_STEP.to_owned(),
        });
    }
    let mut prompt = "Recreate the 2D drawing shown in the reference image ({reference}) in \
                      LibreCAD. Units are millimetres; all coordinates are absolute drawing \
                      coordinates in mm.\n"
        .to_owned();
    for step in &builder.steps {
        prompt.push_str("- ");
        prompt.push_str(step);
        prompt.push('\n');
    }
    prompt.push_str("Save the drawing (Ctrl+S) when finished.");
    Generated {
        level,
        prompt,
        gold: Model {
            entities: builder.entities,
        },
    }
}

/// Adds the plate outline, as one closed polyline or as separate lines (plus an arc for a
/// rounded corner).
fn outline(builder: &mut Builder, plate: Plate, corner: Corner, as_polyline: bool) {
    let (x0, y0, x1, y1) = (plate.x0, plate.y0, plate.x1(), plate.y1());
    let mut points = vec![Point::new(x0, y0), Point::new(x1, y0)];
    let mut arc = None;
    match corner {
        Corner::Square => points.push(Point::new(x1, y1)),
        Corner::Rounded(r) => {
            points.push(Point::new(x1, y1 - r));
            points.push(Point::new(x1 - r, y1));
            arc = Some((Point::new(x1 - r, y1 - r), r));
        }
        Corner::Chamfered(c) => {
            points.push(Point::new(x1, y1 - c));
            points.push(Point::new(x1 - c, y1));
        }
    }
    points.push(Point::new(x0, y1));
    let shape = format!(
        "{} x {} mm plate outline with its lower-left corner at {}",
        format_value(plate.w),
        format_value(plate.h),
        fmt_point(Point::new(x0, y0))
    );
    let corner_text = match corner {
        Corner::Square => String::new(),
        Corner::Rounded(r) => format!(
            "; its upper-right corner is rounded with an R{} arc centered at {}",
            format_value(r),
            fmt_point(Point::new(x1 - r, y1 - r))
        ),
        Corner::Chamfered(c) => format!(
            "; its upper-right corner is chamfered {} x {} mm",
            format_value(c),
            format_value(c)
        ),
    };
    // The segment that the arc replaces is not drawn as a line.
    let rounded_gap_idx = if arc.is_some() { Some(2) } else { None };
    let n_points = points.len();
    let segments: Vec<(usize, Point, Point)> = (0..n_points)
        .map(|idx| (idx, points[idx], points[(idx + 1) % n_points]))
        .filter(|(idx, _, _)| Some(*idx) != rounded_gap_idx)
        .collect();
    if as_polyline && arc.is_none() {
        builder.add(
            "OUTLINE",
            Geometry::Polyline {
                points,
                closed: true,
            },
        );
        builder.step(format!(
            "Draw the {shape}{corner_text} (a closed polyline or lines)."
        ));
    } else {
        for (_, a, b) in segments {
            builder.add("OUTLINE", Geometry::Line { a, b });
        }
        builder.step(format!(
            "Draw the {shape}{corner_text} (lines or a polyline for the straight edges)."
        ));
    }
    if let Some((center, r)) = arc {
        builder.add(
            "OUTLINE",
            Geometry::Arc {
                center,
                r,
                start_deg: 0.0,
                end_deg: 90.0,
            },
        );
    }
}

/// Level-1 extras: an inner rectangle, a diagonal or center lines.
fn l1_extras(builder: &mut Builder, plate: Plate, variant: usize, rng: &mut Rng) {
    let (cx, cy) = (
        plate.x0 + (plate.w / 10.0).round() * 5.0,
        plate.y0 + (plate.h / 10.0).round() * 5.0,
    );
    match variant % 3 {
        0 => {
            let inset = rng.grid(10, 15);
            let a = Point::new(plate.x0 + inset, plate.y0 + inset);
            let b = Point::new(plate.x1() - inset, plate.y1() - inset);
            builder.add(
                "OUTLINE",
                Geometry::Polyline {
                    points: vec![a, Point::new(b.x, a.y), b, Point::new(a.x, b.y)],
                    closed: true,
                },
            );
            builder.step(format!(
                "Draw an inner rectangle from {} to {}.",
                fmt_point(a),
                fmt_point(b)
            ));
        }
        1 => {
            let a = Point::new(plate.x0, plate.y0);
            let b = Point::new(plate.x1(), plate.y1());
            builder.add("OUTLINE", Geometry::Line { a, b });
            builder.step(format!(
                "Draw a diagonal line from {} to {}.",
                fmt_point(a),
                fmt_point(b)
            ));
        }
        _ => {
            let h = (Point::new(plate.x0, cy), Point::new(plate.x1(), cy));
            let v = (Point::new(cx, plate.y0), Point::new(cx, plate.y1()));
            for (a, b) in [h, v] {
                builder.add("OUTLINE", Geometry::Line { a, b });
            }
            builder.step(format!(
                "Draw a horizontal line from {} to {} and a vertical line from {} to {}.",
                fmt_point(h.0),
                fmt_point(h.1),
                fmt_point(v.0),
                fmt_point(v.1)
            ));
        }
    }
}

/// Adds one to three holes on a row inside the plate; returns (center, radius) of each.
fn holes(
    builder: &mut Builder,
    plate: Plate,
    corner: Corner,
    variant: usize,
    rng: &mut Rng,
) -> Vec<(Point, f64)> {
    let corner_size = match corner {
        Corner::Square => 0.0,
        Corner::Rounded(size) | Corner::Chamfered(size) => size,
    };
    let n_holes = 1 + variant % 3;
    let max_r =
        ((plate.h / 2.0 - 5.0).min(plate.w / (2.0 * n_holes as f64) - 5.0) / 5.0).floor() * 5.0;
    let r = rng.grid(5, (max_r as i64).clamp(5, 20));
    let cy = plate.y0 + (plate.h / 10.0).round() * 5.0;
    let usable_w = plate.w - corner_size;
    let pitch = ((usable_w / n_holes as f64) / 5.0).floor() * 5.0;
    let first_x = plate.x0 + ((pitch / 2.0) / 5.0).floor() * 5.0;
    let mut out = Vec::new();
    for hole_idx in 0..n_holes {
        let center = Point::new(first_x + pitch * hole_idx as f64, cy);
        builder.add("HOLES", Geometry::Circle { center, r });
        out.push((center, r));
    }
    let centers: Vec<String> = out.iter().map(|(c, _)| fmt_point(*c)).collect();
    builder.step(format!(
        "Draw {} circle{} of diameter {} mm centered at {}.",
        n_holes,
        if n_holes == 1 { "" } else { "s" },
        format_value(2.0 * r),
        centers.join(", ")
    ));
    out
}
