//! The FreeCAD recipe's sheet geometry: where each TechDraw view of a corpus part goes on the
//! `Layout1` page, which edges the recipe dimensions in it (the gold's rule: a horizontal and a
//! vertical straight edge and a full circle, where the view has them), and where those edges
//! are on screen.
//!
//! The page is TechDraw's default A4 at page scale 0.5. A new view appears centred on the page
//! at (148.5, 105) mm, its part's bounding-box centre there; the recipe then types the view's
//! X and Y to move it to its slot. Page millimetres map to screen pixels as the pinned profile
//! shows the page at 1920x1080: 4.08 px per mm about the page centre at (1087.5, 580).
//!
//! The slot rule: the gold lays its sheet out as a grid of two columns, row-major in the
//! task's view order (`build_part.py`: view `i` at column `i % 2`, row `i / 2`), and the judge
//! (`score3d/sheet/layout.rs`) holds every pair of views to the order of their rows and
//! columns. So a dimensioned view goes to the slot of its own cell ([`CELL_SLOTS`]), whatever
//! order the recipe makes it in, and the pictorial view stays where it appears, at the page
//! centre, which is below the top row and between the columns: it reads as either cell of the
//! bottom row, so a pictorial view in the top row is refused.

use desk_cad::generate3d::{Axis, Base, Feature, PartSpec, View};

/// Page scale the recipe types into the page's Scale property.
pub(crate) const PAGE_SCALE: f64 = 0.5;
/// Where a new view or annotation appears (page mm).
pub(crate) const PAGE_CENTRE: (f64, f64) = (148.5, 105.0);
/// Columns of the gold's grid.
const GRID_COLUMNS: usize = 2;
/// The slot (page mm) of each cell of the gold's grid, row-major: the view at sheet index `i`
/// goes to `CELL_SLOTS[i]`. The bottom-right slot sits above the title block.
pub(crate) const CELL_SLOTS: [(f64, f64); 4] =
    [(65.0, 160.0), (225.0, 160.0), (65.0, 80.0), (225.0, 95.0)];
/// Where the notes may go (page mm), in order of preference: the first whose box is clear of
/// every moved view. The annotation's box is about [`NOTE_HALF_EXTENTS`] about its X and Y.
const NOTE_SLOTS: [(f64, f64); 2] = [(65.0, 60.0), (240.0, 100.0)];
/// Measured: the three note lines with their label span about 67 x 35 page mm.
pub(crate) const NOTE_HALF_EXTENTS: (f64, f64) = (34.0, 18.0);
/// An empty spot on the page at every step (between the top slots, above the centre).
pub(crate) const EMPTY_PAGE: (f64, f64) = (148.5, 190.0);
/// Screen pixels per page millimetre and the page centre on screen.
const PX_PER_MM: f64 = 4.08;
const SCREEN_CENTRE: (f64, f64) = (1087.5, 580.0);

/// A TechDraw dimension tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DimTool {
    /// Horizontal Dimension (`DistanceX`).
    Horizontal,
    /// Vertical Dimension (`DistanceY`).
    Vertical,
    /// Diameter Dimension.
    Diameter,
}

/// One dimensioned view: its slot and, per dimension, the tool and a point on the edge (page
/// mm, with the view in its slot). The first point also selects the view while it is still at
/// the page centre: `grab`. A section view is made from its base plan view instead of the 3D
/// view: `section` says where to click the base (in its slot) and which orientation to press.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ViewPlan {
    pub view: View,
    pub slot: (f64, f64),
    pub grab: (f64, f64),
    pub dims: Vec<(DimTool, (f64, f64))>,
    pub section: Option<SectionStep>,
}

/// How the recipe makes the section A-A (a cut on Y = 0 seen along +Y) from a plan view.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SectionStep {
    /// A point on the base view's outline, the base in its slot.
    pub base_point: (f64, f64),
    /// The Section Orientation button: `Up` on a top view, `Down` on a bottom view (both make
    /// the section's direction -Y, TechDraw's `getSectionVector`).
    pub looking_up: bool,
    /// The identifier typed into the task panel (the task's "SECTION A-A" names it "A"); left
    /// empty, TechDraw 0.20.2 stores an empty `SectionSymbol`.
    pub symbol: &'static str,
}

/// The 3D view's frame for FreeCAD's standard views: screen right and screen up.
fn camera(view: View) -> Option<([f64; 3], [f64; 3])> {
    Some(match view {
        View::Front => ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        View::Top => ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        View::Right => ([0.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
        View::Back => ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        View::Bottom => ([1.0, 0.0, 0.0], [0.0, -1.0, 0.0]),
        View::Left => ([0.0, -1.0, 0.0], [0.0, 0.0, 1.0]),
        // The section looks along +Y like a front view.
        View::Section => ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        View::Isometric => return None,
    })
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn along(point: [f64; 3], direction: [f64; 3], length: f64) -> [f64; 3] {
    [0, 1, 2].map(|i| point[i] + direction[i] * length)
}

/// The part's bounding box (min, max).
fn bounds(spec: &PartSpec) -> ([f64; 3], [f64; 3]) {
    match &spec.base {
        Base::ExtrudeXy { profile, height } => ([0.0; 3], [profile[2][0], profile[2][1], *height]),
        Base::ExtrudeXz { profile, depth } => ([0.0; 3], [profile[1][0], *depth, profile[4][1]]),
        Base::Revolve { profile } => {
            let outer = profile[1][0];
            ([-outer, -outer, 0.0], [outer, outer, profile[4][1]])
        }
    }
}

/// The first hole along `axes` as (centre on its start, radius).
fn hole(spec: &PartSpec, axes: &[Axis]) -> Option<([f64; 3], f64)> {
    spec.features.iter().find_map(|feature| match feature {
        Feature::Hole {
            start,
            axis,
            diameter,
            ..
        } if axes.contains(axis) => Some((*start, diameter / 2.0)),
        _ => None,
    })
}

/// Model points on the edges the view dimensions, by family.
fn edge_points(spec: &PartSpec, view: View, right: [f64; 3]) -> Vec<(DimTool, [f64; 3])> {
    let (_, max) = bounds(spec);
    let along_z = matches!(view, View::Top | View::Bottom);
    let along_x = matches!(view, View::Right | View::Left);
    let mut points = Vec::new();
    match &spec.base {
        Base::ExtrudeXy { .. } => {
            let [w, d, t] = max;
            if along_z {
                points.push((DimTool::Horizontal, [w / 2.0, 0.0, t]));
                points.push((DimTool::Vertical, [0.0, d / 2.0, t]));
            } else if along_x {
                points.push((DimTool::Horizontal, [w, d / 2.0, t]));
                points.push((DimTool::Vertical, [w, 0.0, t / 2.0]));
            } else {
                points.push((DimTool::Horizontal, [w / 2.0, 0.0, t]));
                points.push((DimTool::Vertical, [0.0, 0.0, t / 2.0]));
            }
            if along_z && let Some((centre, radius)) = hole(spec, &[Axis::Z, Axis::NegZ]) {
                points.push((DimTool::Diameter, along(centre, right, radius)));
            }
        }
        Base::ExtrudeXz { profile, .. } => {
            let [length, width, height] = max;
            let t = profile[2][1];
            let r = spec.finish.as_ref().map_or(0.0, |finish| finish.size);
            if along_z {
                points.push((DimTool::Horizontal, [(t + length) / 2.0, 0.0, height]));
                points.push((DimTool::Vertical, [length, width / 2.0, t]));
                if let Some((centre, radius)) = hole(spec, &[Axis::Z, Axis::NegZ]) {
                    points.push((DimTool::Diameter, along(centre, right, radius)));
                }
            } else if along_x {
                points.push((DimTool::Horizontal, [0.0, width / 2.0, height]));
                points.push((DimTool::Vertical, [0.0, 0.0, (t + height) / 2.0]));
                if let Some((centre, radius)) = hole(spec, &[Axis::X, Axis::NegX]) {
                    points.push((DimTool::Diameter, along(centre, [0.0, 0.0, 1.0], radius)));
                }
            } else {
                points.push((DimTool::Horizontal, [(r + length) / 2.0, 0.0, 0.0]));
                points.push((DimTool::Vertical, [0.0, 0.0, (r + height) / 2.0]));
            }
        }
        Base::Revolve { profile } => {
            let (outer, thick, hub, total) =
                (profile[1][0], profile[2][1], profile[3][0], profile[4][1]);
            if along_z {
                points.push((DimTool::Diameter, along([0.0; 3], right, -outer)));
            } else {
                if view == View::Section {
                    // The gold's section is a true cut (the half behind Y = 0, as the reference
                    // shows it): its longest vertical edge is the bore's wall, its longest
                    // horizontal one of the cut's lines ([`section_horizontal`]).
                    let bore = hole(spec, &[Axis::Z]).map_or(0.0, |(_, radius)| radius);
                    points.push((
                        DimTool::Horizontal,
                        section_horizontal(spec, outer, thick, hub, total).1,
                    ));
                    points.push((
                        DimTool::Vertical,
                        along([0.0, 0.0, total / 2.0], right, -bore),
                    ));
                } else {
                    // The gold dimensions the longest edges of the part's outline: vertical,
                    // the taller of the hub's and the rim's sides, picked on the -right side;
                    // horizontal, the rim's outline (a circle seen edge-on, split where its
                    // seam at +X projects), picked on the rim's top beyond the hub on the
                    // other side, clear of the first dimension.
                    let (side, height) = if total - thick > thick {
                        (hub, (thick + total) / 2.0)
                    } else {
                        (outer, thick / 2.0)
                    };
                    points.push((DimTool::Vertical, along([0.0, 0.0, height], right, -side)));
                    let rim_top = along([0.0, 0.0, thick], right, (hub + outer) / 2.0);
                    points.push((DimTool::Horizontal, rim_top));
                }
            }
        }
    }
    points
}

/// The length of the longest horizontal edge of a flange's section and a point in its middle on Y = 0 seen
/// along +Y (the gold's pick): the disc's bottom (z = 0) and top beyond the hub (z = thick) and
/// the hub's top (z = total), each split where a Z hole that crosses the plane has its walls
/// (a hole's far wall shows inside it as an edge of its own). On a tie, the one furthest to +X.
fn section_horizontal(
    spec: &PartSpec,
    outer: f64,
    thick: f64,
    hub: f64,
    total: f64,
) -> (f64, [f64; 3]) {
    let lines = [
        (0.0, -outer, outer),
        (thick, hub, outer),
        (thick, -outer, -hub),
        (total, -hub, hub),
    ];
    let mut best: Option<(f64, f64, f64)> = None;
    for (z, lo, hi) in lines {
        let mut cuts = vec![lo, hi];
        for feature in &spec.features {
            let Feature::Hole {
                start,
                axis: Axis::Z,
                diameter,
                depth,
            } = feature
            else {
                continue;
            };
            let radius = diameter / 2.0;
            if start[1].abs() >= radius || z < start[2] || z > start[2] + depth {
                continue;
            }
            let half = (radius * radius - start[1] * start[1]).sqrt();
            cuts.extend(
                [start[0] - half, start[0] + half]
                    .into_iter()
                    .filter(|x| *x > lo && *x < hi),
            );
        }
        cuts.sort_by(f64::total_cmp);
        for pair in cuts.windows(2) {
            let (length, middle) = (pair[1] - pair[0], (pair[0] + pair[1]) / 2.0);
            let longer = best.is_none_or(|(l, m, _)| {
                length > l + 1e-9 || (length > l - 1e-9 && middle > m + 1e-9)
            });
            if length > 1e-9 && longer {
                best = Some((length, middle, z));
            }
        }
    }
    let (length, x, z) = best.unwrap_or((0.0, 0.0, 0.0));
    (length, [x, 0.0, z])
}

/// The plans of a part's dimensioned views: the standard views in sheet order, then a section
/// (after the plan view it is cut from), each in the slot of its cell of the gold's grid; the
/// pictorial view gets none (it stays at the page centre). `None` when a view has no cell, a
/// pictorial view is in the top row, or a section has no plan view to start from.
pub(crate) fn view_plans(spec: &PartSpec, views: &[View]) -> Option<Vec<ViewPlan>> {
    let (min, max) = bounds(spec);
    let centre = [0, 1, 2].map(|i| (min[i] + max[i]) / 2.0);
    let indexed = || views.iter().copied().enumerate();
    let ordered = indexed()
        .filter(|(_, view)| *view != View::Section)
        .chain(indexed().filter(|(_, view)| *view == View::Section));
    let mut plans: Vec<ViewPlan> = Vec::new();
    for (view_idx, view) in ordered {
        let slot = *CELL_SLOTS.get(view_idx)?;
        let Some((right, up)) = camera(view) else {
            if view_idx < GRID_COLUMNS {
                return None;
            }
            continue;
        };
        let place = |at: (f64, f64), point: [f64; 3]| on_page(at, (right, up), centre, point);
        let points = edge_points(spec, view, right);
        let grab = place(PAGE_CENTRE, points.first()?.1);
        let dims = points
            .into_iter()
            .map(|(tool, point)| (tool, place(slot, point)))
            .collect();
        let section = if view == View::Section {
            let base = plans
                .iter()
                .find(|plan| matches!(plan.view, View::Top | View::Bottom))?;
            Some(SectionStep {
                base_point: base_outline_point(spec, base, centre)?,
                looking_up: base.view == View::Top,
                symbol: view.section_symbol()?,
            })
        } else {
            None
        };
        plans.push(ViewPlan {
            view,
            slot,
            grab,
            dims,
            section,
        });
    }
    Some(plans)
}

/// Room (page mm) kept around a view's box for its dimensions and label.
const DIMENSION_ROOM: f64 = 12.0;

/// The part's page footprint in a view: half extents (page mm) of its projected box; for the
/// pictorial view, of the part's bounding sphere.
pub(crate) fn half_extents(spec: &PartSpec, view: View) -> (f64, f64) {
    let (min, max) = bounds(spec);
    let size = [0, 1, 2].map(|i| max[i] - min[i]);
    match camera(view) {
        Some((right, up)) => (
            PAGE_SCALE * dot(size, right.map(f64::abs)) / 2.0,
            PAGE_SCALE * dot(size, up.map(f64::abs)) / 2.0,
        ),
        None => {
            let radius = PAGE_SCALE * dot(size, size).sqrt() / 2.0;
            (radius, radius)
        }
    }
}

/// Where the notes go: the first of [`NOTE_SLOTS`] whose box is clear of every moved view
/// (with room for its dimensions) and of the pictorial view left at the page centre.
pub(crate) fn note_slot(spec: &PartSpec, views: &[View], plans: &[ViewPlan]) -> Option<(f64, f64)> {
    let boxes: Vec<((f64, f64), (f64, f64))> = views
        .iter()
        .filter_map(|view| {
            let (hx, hy) = half_extents(spec, *view);
            match plans.iter().find(|plan| plan.view == *view) {
                Some(plan) => Some((plan.slot, (hx + DIMENSION_ROOM, hy + DIMENSION_ROOM))),
                None => (camera(*view).is_none()).then_some((PAGE_CENTRE, (hx, hy))),
            }
        })
        .collect();
    let (nx, ny) = NOTE_HALF_EXTENTS;
    NOTE_SLOTS.into_iter().find(|(x, y)| {
        boxes
            .iter()
            .all(|((bx, by), (hx, hy))| (x - bx).abs() >= nx + hx || (y - by).abs() >= ny + hy)
    })
}

/// A point on a revolved part's outer circle in its plan view, opposite the diameter
/// dimension's pick so the dimension does not cover it.
fn base_outline_point(spec: &PartSpec, base: &ViewPlan, centre: [f64; 3]) -> Option<(f64, f64)> {
    let Base::Revolve { profile } = &spec.base else {
        return None;
    };
    let frame = camera(base.view)?;
    let point = along([0.0; 3], frame.0, profile[1][0]);
    Some(on_page(base.slot, frame, centre, point))
}

/// Where model `point` lies on the page when a view with camera `frame` (right, up) has the
/// part's box centre `centre` at page point `at`.
fn on_page(
    at: (f64, f64),
    (right, up): ([f64; 3], [f64; 3]),
    centre: [f64; 3],
    point: [f64; 3],
) -> (f64, f64) {
    (
        at.0 + PAGE_SCALE * (dot(point, right) - dot(centre, right)),
        at.1 + PAGE_SCALE * (dot(point, up) - dot(centre, up)),
    )
}

/// Page millimetres to screen pixels.
pub(crate) fn to_screen((x, y): (f64, f64)) -> (i64, i64) {
    let sx = SCREEN_CENTRE.0 + PX_PER_MM * (x - PAGE_CENTRE.0);
    let sy = SCREEN_CENTRE.1 - PX_PER_MM * (y - PAGE_CENTRE.1);
    // Page points stay on the 1920x1080 screen: the casts cannot truncate.
    #[allow(clippy::cast_possible_truncation)]
    (sx.round() as i64, sy.round() as i64)
}

#[cfg(test)]
mod tests;
