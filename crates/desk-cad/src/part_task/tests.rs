//! The reference sheet's dimension choices and its determinism, on hand-made projections.

use super::dims::{largest_circle, longest};
use super::*;

fn view(visible: Vec<Vec<[f64; 2]>>) -> ProjectedView {
    ProjectedView {
        name: "FRONT".to_owned(),
        orthographic: true,
        visible,
        hidden: Vec::new(),
        cut: Vec::new(),
        cutting_plane: Some(10.0),
    }
}

fn circle(cx: f64, cy: f64, r: f64) -> Vec<[f64; 2]> {
    (0..=32)
        .map(|step| {
            let angle = std::f64::consts::TAU * f64::from(step) / 32.0;
            [cx + r * angle.cos(), cy + r * angle.sin()]
        })
        .collect()
}

#[test]
fn dimensions_join_split_edges_and_prefer_the_outer_ones() {
    // A 100 x 20 outline whose bottom edge is split in two by hidden-line removal, with an
    // inner vertical edge as long as the outer ones.
    let outline = view(vec![
        vec![[0.0, 0.0], [40.0, 0.0]],
        vec![[40.0, 0.0], [100.0, 0.0]],
        vec![[0.0, 20.0], [90.0, 20.0]],
        vec![[0.0, 0.0], [0.0, 20.0]],
        vec![[50.0, 0.0], [50.0, 20.0]],
        vec![[100.0, 20.0], [100.0, 0.0]],
        circle(30.0, 10.0, 4.0),
        circle(70.0, 10.0, 6.0),
    ]);
    assert_eq!(longest(&outline, true), Some(([0.0, 0.0], [100.0, 0.0])));
    assert_eq!(
        longest(&outline, false),
        Some(([100.0, 0.0], [100.0, 20.0]))
    );
    let (center, r) = largest_circle(&outline).unwrap();
    assert!((center[0] - 70.0).abs() < 1e-9 && (center[1] - 10.0).abs() < 1e-9);
    assert!((r - 6.0).abs() < 1e-9);
    // A gap between collinear pieces is not joined; an open arc is not a circle.
    let gapped = view(vec![
        vec![[0.0, 0.0], [40.0, 0.0]],
        vec![[45.0, 0.0], [100.0, 0.0]],
        circle(0.0, 0.0, 5.0)[..20].to_vec(),
    ]);
    assert_eq!(longest(&gapped, true), Some(([45.0, 0.0], [100.0, 0.0])));
    assert_eq!(longest(&gapped, false), None);
    assert_eq!(largest_circle(&gapped), None);
}

#[test]
fn the_sheet_svg_is_a_pure_function_of_the_views() {
    let views = vec![
        view(vec![
            vec![[0.0, 0.0], [100.0, 0.0]],
            circle(50.0, 10.0, 5.0),
        ]),
        ProjectedView {
            name: "ISOMETRIC".to_owned(),
            orthographic: false,
            visible: vec![vec![[0.0, 0.0], [10.0, 10.0]]],
            hidden: vec![vec![[0.0, 10.0], [10.0, 0.0]]],
            cut: vec![vec![vec![[0.0, 0.0], [10.0, 0.0], [10.0, 10.0]]]],
            cutting_plane: None,
        },
    ];
    let notes = ["UNITS: MM <&>".to_owned()];
    let svg = render_views_svg(&views, &notes);
    assert_eq!(svg, render_views_svg(&views, &notes));
    assert!(
        svg.contains(">100</text>"),
        "the horizontal dimension is drawn"
    );
    assert!(svg.contains(">\u{d8}10</text>"), "the diameter is drawn");
    assert!(svg.contains("UNITS: MM &lt;&amp;&gt;"), "notes are escaped");
    assert!(svg.contains("stroke-dasharray"), "hidden edges are dashed");
    assert!(
        svg.contains("fill=\"url(#hatch)\""),
        "cut faces are hatched"
    );
}
