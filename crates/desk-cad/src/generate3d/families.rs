//! The part families of [`super`]: a plate, an L-bracket and a revolved flange, each a
//! [`PartSpec`] with the task sentences that give every dimension and the views its drawing
//! shows. Sizes keep every feature inside the part and clear of the others.

use super::spec::{
    Axis, Base, Feature, Finish, FinishKind, PartSpec, View, hub_profile, l_profile,
    rectangle_profile,
};
use crate::generate::Rng;
use crate::model::format_value;

fn mm(value: f64) -> String {
    format_value(value)
}

/// A whole-mm value in `lo..=hi`.
fn whole(rng: &mut Rng, lo: u64, hi: u64) -> f64 {
    (lo + rng.next_u64() % (hi - lo + 1)) as f64
}

pub(super) fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[(rng.next_u64() % items.len() as u64) as usize]
}

pub(super) fn plate(rng: &mut Rng, steps: &mut Vec<String>) -> (PartSpec, Vec<View>) {
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
            profile: rectangle_profile(w, d),
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

pub(super) fn bracket(rng: &mut Rng, steps: &mut Vec<String>) -> (PartSpec, Vec<View>) {
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
            profile: l_profile(length, t, height),
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

pub(super) fn flange(rng: &mut Rng, steps: &mut Vec<String>) -> (PartSpec, Vec<View>) {
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
            profile: hub_profile(outer, thick, hub, total),
        },
        finish: None,
        features,
    };
    // The flange is centred on the axis, so the section on Y = 0 cuts through it.
    let side = pick(rng, &[View::Front, View::Right, View::Section]);
    let plan = pick(rng, &[View::Top, View::Bottom]);
    (spec, vec![side, plan, View::Isometric])
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}
