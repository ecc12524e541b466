//! The FreeCAD recipe's constructive solid: a corpus part as primitives the Geometric
//! Primitives dialog can make (boxes, cylinders and cylinder sectors, each placed by a
//! position, a rotation axis and an angle), the union of the material minus the union of what
//! is cut away. Exact for the corpus families: no approximation of the gold's shape.

use desk_cad::generate3d::{
    Axis, Base, Feature, FinishKind, PartSpec, hub_profile, l_profile, rectangle_profile,
};

/// One parametric primitive with its placement (position, rotation axis and angle in degrees).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Primitive {
    /// Part Box: length (X), width (Y), height (Z).
    Box { size: [f64; 3] },
    /// Part Cylinder: radius, height (local Z) and sector angle (360 for a full one).
    Cylinder {
        radius: f64,
        height: f64,
        sector: f64,
    },
}

/// A primitive placed in the document.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Placed {
    pub primitive: Primitive,
    pub position: [f64; 3],
    pub axis: [f64; 3],
    pub angle: f64,
}

impl Placed {
    fn upright(primitive: Primitive, position: [f64; 3]) -> Self {
        Self {
            primitive,
            position,
            axis: [0.0, 0.0, 1.0],
            angle: 0.0,
        }
    }
}

/// The constructive solid: the union of `material` minus the union of `removed`.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Csg {
    pub material: Vec<Placed>,
    pub removed: Vec<Placed>,
}

/// The rotation (axis, degrees) that turns a cylinder's local +Z into `axis`.
fn axis_rotation(axis: Axis) -> ([f64; 3], f64) {
    match axis {
        Axis::Z => ([0.0, 0.0, 1.0], 0.0),
        Axis::NegZ => ([1.0, 0.0, 0.0], 180.0),
        Axis::X => ([0.0, 1.0, 0.0], 90.0),
        Axis::NegX => ([0.0, 1.0, 0.0], -90.0),
        Axis::Y => ([1.0, 0.0, 0.0], -90.0),
        Axis::NegY => ([1.0, 0.0, 0.0], 90.0),
    }
}

fn profile_is(profile: &[[f64; 2]], expected: &[[f64; 2]]) -> bool {
    profile.len() == expected.len()
        && profile
            .iter()
            .zip(expected)
            .all(|(a, b)| (a[0] - b[0]).abs() < 1e-9 && (a[1] - b[1]).abs() < 1e-9)
}

/// Decomposes a part into primitives, or says which shape the recipe does not know.
pub(crate) fn decompose(spec: &PartSpec) -> Result<Csg, String> {
    let mut csg = Csg::default();
    match &spec.base {
        Base::ExtrudeXy { profile, height } => {
            let (w, d) = (profile[2][0], profile[2][1]);
            if !profile_is(profile, &rectangle_profile(w, d)) {
                return Err("an XY profile that is not an origin rectangle".to_owned());
            }
            let t = *height;
            match &spec.finish {
                None => csg.material.push(Placed::upright(
                    Primitive::Box { size: [w, d, t] },
                    [0.0; 3],
                )),
                Some(finish) if finish.corners == [0, 1, 2, 3] => {
                    let c = finish.size;
                    let corners = [(0.0, 0.0), (w, 0.0), (w, d), (0.0, d)];
                    match finish.kind {
                        FinishKind::Fillet => {
                            csg.material.push(Placed::upright(
                                Primitive::Box {
                                    size: [w - 2.0 * c, d, t],
                                },
                                [c, 0.0, 0.0],
                            ));
                            csg.material.push(Placed::upright(
                                Primitive::Box {
                                    size: [w, d - 2.0 * c, t],
                                },
                                [0.0, c, 0.0],
                            ));
                            for (x, y) in corners {
                                let cx = if x == 0.0 { c } else { x - c };
                                let cy = if y == 0.0 { c } else { y - c };
                                csg.material.push(Placed::upright(
                                    Primitive::Cylinder {
                                        radius: c,
                                        height: t,
                                        sector: 360.0,
                                    },
                                    [cx, cy, 0.0],
                                ));
                            }
                        }
                        FinishKind::Chamfer => {
                            csg.material.push(Placed::upright(
                                Primitive::Box { size: [w, d, t] },
                                [0.0; 3],
                            ));
                            // A square of side c·√2 turned 45° about its origin is a diamond
                            // whose centre lies c above the origin: centred on a corner, it
                            // cuts the corner's triangle with legs c.
                            let side = c * std::f64::consts::SQRT_2;
                            for (x, y) in corners {
                                csg.removed.push(Placed {
                                    primitive: Primitive::Box {
                                        size: [side, side, t + 2.0],
                                    },
                                    position: [x, y - c, -1.0],
                                    axis: [0.0, 0.0, 1.0],
                                    angle: 45.0,
                                });
                            }
                        }
                    }
                }
                Some(_) => return Err("a plate finish on some corners only".to_owned()),
            }
        }
        Base::ExtrudeXz { profile, depth } => {
            let (length, t, height) = (profile[1][0], profile[2][1], profile[4][1]);
            if !profile_is(profile, &l_profile(length, t, height)) {
                return Err("an XZ profile that is not an L".to_owned());
            }
            let r = match &spec.finish {
                None => 0.0,
                Some(finish) if finish.kind == FinishKind::Fillet && finish.corners == [0] => {
                    finish.size
                }
                Some(_) => return Err("an L finish other than the outer bend round".to_owned()),
            };
            csg.material.push(Placed::upright(
                Primitive::Box {
                    size: [length - r, *depth, t],
                },
                [r, 0.0, 0.0],
            ));
            csg.material.push(Placed::upright(
                Primitive::Box {
                    size: [t, *depth, height - r],
                },
                [0.0, 0.0, r],
            ));
            if r > 0.0 {
                // A quarter cylinder about (r, ·, r) filling the bend toward -X and -Z: local
                // X → -X, Y → -Z, Z → -Y (a half turn about (0, 1, -1)), so it runs from
                // y = depth back to y = 0 and its sector spans -X..-Z.
                csg.material.push(Placed {
                    primitive: Primitive::Cylinder {
                        radius: r,
                        height: *depth,
                        sector: 90.0,
                    },
                    position: [r, *depth, r],
                    axis: [0.0, 1.0, -1.0],
                    angle: 180.0,
                });
            }
        }
        Base::Revolve { profile } => {
            let (outer, thick, hub, total) =
                (profile[1][0], profile[2][1], profile[3][0], profile[4][1]);
            if !profile_is(profile, &hub_profile(outer, thick, hub, total)) || spec.finish.is_some()
            {
                return Err("a revolved profile that is not a disc with a hub".to_owned());
            }
            // The hub stands on the disc (from z = thick), not inside it: a hub from z = 0
            // would leave a seam circle on the disc's bottom face, splitting the bottom line of
            // the section view at the hub's radius where the gold's refined part has one edge.
            for (radius, height, base) in [(outer, thick, 0.0), (hub, total - thick, thick)] {
                csg.material.push(Placed::upright(
                    Primitive::Cylinder {
                        radius,
                        height,
                        sector: 360.0,
                    },
                    [0.0, 0.0, base],
                ));
            }
        }
    }
    for feature in &spec.features {
        csg.removed.push(match feature {
            Feature::Hole {
                start,
                axis,
                diameter,
                depth,
            } => {
                let (rotation, angle) = axis_rotation(*axis);
                Placed {
                    primitive: Primitive::Cylinder {
                        radius: diameter / 2.0,
                        height: *depth,
                        sector: 360.0,
                    },
                    position: *start,
                    axis: rotation,
                    angle,
                }
            }
            Feature::Pocket { min, size } => Placed::upright(Primitive::Box { size: *size }, *min),
        });
    }
    if csg.removed.is_empty() || (csg.removed.len() == 1 && csg.material.len() > 1) {
        // The recipe's tree rows assume the cut-away union is listed after the material.
        return Err("a part with fewer than two cut-away shapes".to_owned());
    }
    Ok(csg)
}

#[cfg(test)]
mod tests;
