//! Unit tests of the FreeCAD oracle's constructive solids: every corpus part decomposed into
//! primitives of its volume, chamfers, holes on each axis and bend rounds.

use desk_cad::generate3d::generate_part;

use super::*;

fn volume(placed: &Placed) -> f64 {
    match placed.primitive {
        Primitive::Box { size } => size[0] * size[1] * size[2],
        Primitive::Cylinder {
            radius,
            height,
            sector,
        } => std::f64::consts::PI * radius * radius * height * sector / 360.0,
    }
}

fn polygon_area(profile: &[[f64; 2]]) -> f64 {
    let n = profile.len();
    let twice: f64 = (0..n)
        .map(|i| {
            let (a, b) = (profile[i], profile[(i + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum();
    twice.abs() / 2.0
}

/// The spec's volume before its features are cut, from the spec alone.
fn base_volume(spec: &PartSpec) -> f64 {
    let pi = std::f64::consts::PI;
    let (raw, length) = match &spec.base {
        Base::ExtrudeXy { profile, height } => (polygon_area(profile) * height, *height),
        Base::ExtrudeXz { profile, depth } => (polygon_area(profile) * depth, *depth),
        Base::Revolve { profile } => {
            let (outer, thick, hub, total) =
                (profile[1][0], profile[2][1], profile[3][0], profile[4][1]);
            (
                pi * (outer * outer * thick + hub * hub * (total - thick)),
                0.0,
            )
        }
    };
    let finished = spec.finish.as_ref().map_or(0.0, |finish| {
        let c = finish.size;
        let per_corner = match finish.kind {
            FinishKind::Fillet => c * c * (1.0 - pi / 4.0),
            FinishKind::Chamfer => c * c / 2.0,
        };
        per_corner * length * finish.corners.len() as f64
    });
    raw - finished
}

/// The material's volume from the primitives: their sum, less the known overlaps (a filleted
/// plate's two boxes cross in a (w-2c)(d-2c) block and hold three quarters of each corner
/// disc; an L's legs cross in the bend; a hub stands on its disc), less the chamfer squares' corner triangles.
fn material_volume(spec: &PartSpec, csg: &Csg) -> f64 {
    let mut total: f64 = csg.material.iter().map(volume).sum();
    if let (Base::ExtrudeXy { profile, height }, Some(finish)) = (&spec.base, &spec.finish) {
        let (w, d, c) = (profile[2][0], profile[2][1], finish.size);
        match finish.kind {
            FinishKind::Fillet => {
                total -= (w - 2.0 * c) * (d - 2.0 * c) * height;
                total -= 4.0 * 0.75 * std::f64::consts::PI * c * c * height;
            }
            FinishKind::Chamfer => total -= 4.0 * c * c / 2.0 * height,
        }
    }
    if let Base::ExtrudeXz { profile, depth } = &spec.base {
        // The L's legs cross in the (t-r)² block of the bend.
        let t = profile[2][1];
        let r = spec.finish.as_ref().map_or(0.0, |finish| finish.size);
        total -= (t - r) * (t - r) * depth;
    }
    total
}

#[test]
fn every_corpus_part_decomposes_into_primitives_of_the_spec_s_material_volume() {
    for index in 0..29 {
        let part = generate_part(index);
        let csg = decompose(&part.spec).unwrap_or_else(|reason| panic!("part {index}: {reason}"));
        let (got, want) = (material_volume(&part.spec, &csg), base_volume(&part.spec));
        assert!(
            (got - want).abs() < 1e-6 * want,
            "part {index}: primitives {got}, spec {want}"
        );
        let features = part.spec.features.len();
        let chamfers = match &part.spec.finish {
            Some(finish) if finish.kind == FinishKind::Chamfer => 4,
            _ => 0,
        };
        assert_eq!(csg.removed.len(), features + chamfers, "part {index}");
        assert!(csg.removed.len() >= 2, "part {index}");
    }
}

#[test]
fn a_turned_square_centred_on_a_corner_cuts_legs_of_the_chamfer_size() {
    let part = (0..29)
        .map(generate_part)
        .find(|part| {
            part.spec
                .finish
                .as_ref()
                .is_some_and(|finish| finish.kind == FinishKind::Chamfer)
        })
        .expect("the corpus has a chamfered plate");
    let csg = decompose(&part.spec).expect("decomposes");
    let c = part
        .spec
        .finish
        .as_ref()
        .map(|finish| finish.size)
        .unwrap_or(0.0);
    let square = &csg.removed[csg.removed.len() - part.spec.features.len() - 4];
    let Primitive::Box { size } = square.primitive else {
        panic!("a box")
    };
    // The diamond's centre: the origin plus half the square's diagonal along +Y.
    let centre_y = square.position[1] + size[0] * std::f64::consts::FRAC_1_SQRT_2;
    assert!(
        (centre_y - 0.0).abs() < 1e-9,
        "centred on y = 0, got {centre_y}"
    );
    assert!((size[0] * std::f64::consts::FRAC_1_SQRT_2 - c).abs() < 1e-9);
    assert_eq!((square.axis, square.angle), ([0.0, 0.0, 1.0], 45.0));
}

/// Rodrigues' rotation of `v` about unit-free axis `k` by `degrees`.
fn rotate(v: [f64; 3], k: [f64; 3], degrees: f64) -> [f64; 3] {
    let len = (k[0] * k[0] + k[1] * k[1] + k[2] * k[2]).sqrt();
    let k = [k[0] / len, k[1] / len, k[2] / len];
    let (sin, cos) = degrees.to_radians().sin_cos();
    let cross = [
        k[1] * v[2] - k[2] * v[1],
        k[2] * v[0] - k[0] * v[2],
        k[0] * v[1] - k[1] * v[0],
    ];
    let dot = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    [0, 1, 2].map(|i| v[i] * cos + cross[i] * sin + k[i] * dot * (1.0 - cos))
}

fn assert_near(got: [f64; 3], want: [f64; 3], what: &str) {
    for i in 0..3 {
        assert!(
            (got[i] - want[i]).abs() < 1e-9,
            "{what}: {got:?} != {want:?}"
        );
    }
}

#[test]
fn a_hole_along_each_axis_turns_the_cylinder_onto_that_axis() {
    for (axis, want) in [
        (Axis::X, [1.0, 0.0, 0.0]),
        (Axis::Y, [0.0, 1.0, 0.0]),
        (Axis::Z, [0.0, 0.0, 1.0]),
        (Axis::NegX, [-1.0, 0.0, 0.0]),
        (Axis::NegY, [0.0, -1.0, 0.0]),
        (Axis::NegZ, [0.0, 0.0, -1.0]),
    ] {
        let (k, degrees) = axis_rotation(axis);
        assert_near(
            rotate([0.0, 0.0, 1.0], k, degrees),
            want,
            &format!("{axis:?}"),
        );
    }
}

#[test]
fn the_bend_round_s_quarter_cylinder_faces_the_outer_corner() {
    let part = generate_part(1);
    let csg = decompose(&part.spec).expect("decomposes");
    let quarter = csg
        .material
        .iter()
        .find(|placed| matches!(placed.primitive, Primitive::Cylinder { sector, .. } if sector == 90.0))
        .expect("a quarter cylinder");
    // Its sector runs from local +X to local +Y: both must point away from the L's inside.
    assert_near(
        rotate([1.0, 0.0, 0.0], quarter.axis, quarter.angle),
        [-1.0, 0.0, 0.0],
        "X",
    );
    assert_near(
        rotate([0.0, 1.0, 0.0], quarter.axis, quarter.angle),
        [0.0, 0.0, -1.0],
        "Y",
    );
    assert_near(
        rotate([0.0, 0.0, 1.0], quarter.axis, quarter.angle),
        [0.0, -1.0, 0.0],
        "Z",
    );
}
