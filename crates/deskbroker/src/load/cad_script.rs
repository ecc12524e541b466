//! What each CAD desktop of `load --desktops` does and how its outcome is checked.
//!
//! LibreCAD runs the demo's figure (`demo::figure_script`): a 100x50 rectangle of lines and a
//! circle typed at its command line, and a line drawn with two mouse clicks; its checkpointed
//! DXF, read by desk-cad, must hold the four sides, the circle and a fifth line. FreeCAD builds
//! a 40x30x20 box the way the oracle builds its primitives (`desk-harness`'s
//! `oracle/freecad.rs`: the Part workbench, "Create primitives…", Box, its three parameters,
//! Create, Close); its checkpointed FCStd, inspected by desk-cad's sandboxed reader, must hold
//! exactly one part solid, a `Part::Box` of that volume and bounding box. Positions are the
//! oracle's, measured on the pinned `freecad` profile at 1920x1080.

use desk_cad::solid::FcstdFacts;
use desk_cad::{Geometry, Point};
use desk_contract::{Action, Button, DisplaySize};

/// FreeCAD's widgets, copied from the oracle's measured table (`oracle/freecad.rs`).
const WORKBENCH_COMBO: (i64, i64) = (580, 58);
const PART_PRIMITIVES: (i64, i64) = (480, 136);
const DLG_CREATE: (i64, i64) = (152, 232);
const DLG_CLOSE: (i64, i64) = (240, 232);
const DLG_TYPE: (i64, i64) = (145, 314);
const PARAM_X: i64 = 231;
const PARAM_ROW_0: i64 = 367;
const PARAM_ROW_PITCH: i64 = 33;

/// The box FreeCAD builds: length, width, height in mm.
pub(crate) const BOX_MM: [f64; 3] = [40.0, 30.0, 20.0];

/// The display the FreeCAD positions were measured on.
pub(crate) const FREECAD_DISPLAY: DisplaySize = DisplaySize {
    width: 1920,
    height: 1080,
};

fn key(keys: &[&str], intent: &str) -> Action {
    Action::Key {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        intent: intent.to_string(),
    }
}

fn click((x, y): (i64, i64), intent: &str) -> Action {
    Action::Click {
        x,
        y,
        button: Button::Left,
        modifiers: vec![],
        intent: intent.to_string(),
    }
}

fn text(text: &str, intent: &str) -> Action {
    Action::Type {
        text: text.to_string(),
        intent: intent.to_string(),
    }
}

fn wait(milliseconds: i64, intent: &str) -> Action {
    Action::Wait {
        milliseconds,
        intent: intent.to_string(),
    }
}

/// The actions of one desktop of `profile` (one of [`super::args::CAD_PROFILES`]).
pub(crate) fn script(profile: &str, display: DisplaySize) -> Vec<Action> {
    match profile {
        "freecad" => freecad_box(),
        _ => crate::demo::figure_script((display.width, display.height)),
    }
}

fn freecad_box() -> Vec<Action> {
    let mut steps = vec![
        click(WORKBENCH_COMBO, "open the workbench list"),
        wait(300, "let the list open"),
        text("Part", "find the Part workbench"),
        key(&["return"], "switch to Part"),
        wait(1500, "let the workbench load"),
        click(PART_PRIMITIVES, "open the Geometric Primitives dialog"),
        wait(1000, "let the dialog open"),
        click(DLG_TYPE, "open the primitive type list"),
        wait(300, "let the list open"),
        key(&["home"], "first type"),
        key(&["down"], "next type: Box"),
        key(&["return"], "choose Box"),
    ];
    for (row, (value, name)) in BOX_MM.iter().zip(["length", "width", "height"]).enumerate() {
        let y = PARAM_ROW_0 + row as i64 * PARAM_ROW_PITCH;
        steps.push(click((PARAM_X, y), &format!("focus the box {name} field")));
        steps.push(key(&["ctrl", "a"], "select the old value"));
        steps.push(text(&format!("{value}"), &format!("box {name}")));
    }
    steps.extend([
        click(DLG_CREATE, "Create the box"),
        wait(300, "let the document recompute"),
        click(DLG_CLOSE, "close the primitives dialog"),
        wait(500, "let the dialog close"),
        Action::Done {
            intent: "the box is built".to_string(),
        },
    ]);
    steps
}

const TOLERANCE_MM: f64 = 1e-6;

fn near(a: &Point, (x, y): (f64, f64)) -> bool {
    (a.x - x).abs() <= TOLERANCE_MM && (a.y - y).abs() <= TOLERANCE_MM
}

/// What is wrong with LibreCAD's saved DXF (empty: the figure is there).
pub(crate) fn check_dxf(bytes: &[u8]) -> Vec<String> {
    let outcome = match desk_cad::read_dxf_bytes(bytes) {
        Ok(outcome) => outcome,
        Err(message) => return vec![format!("the DXF does not parse: {message}")],
    };
    let lines: Vec<(&Point, &Point)> = outcome
        .model
        .entities
        .iter()
        .filter_map(|entity| match &entity.geometry {
            Geometry::Line { a, b } => Some((a, b)),
            _ => None,
        })
        .collect();
    let mut problems = Vec::new();
    let corners = [(0.0, 0.0), (100.0, 0.0), (100.0, 50.0), (0.0, 50.0)];
    for side in 0..4 {
        let (from, to) = (corners[side], corners[(side + 1) % 4]);
        let found = lines
            .iter()
            .any(|(a, b)| (near(a, from) && near(b, to)) || (near(a, to) && near(b, from)));
        if !found {
            problems.push(format!("no line {from:?}-{to:?}"));
        }
    }
    let circle = outcome.model.entities.iter().any(|entity| {
        matches!(&entity.geometry, Geometry::Circle { center, r }
            if near(center, (50.0, 25.0)) && (r - 20.0).abs() <= TOLERANCE_MM)
    });
    if !circle {
        problems.push("no circle r=20 at (50, 25)".to_string());
    }
    if lines.len() != 5 {
        problems.push(format!(
            "{} lines, expected 5 (four sides and the mouse line)",
            lines.len()
        ));
    }
    problems
}

/// What is wrong with FreeCAD's saved FCStd, from desk-cad's inspector (empty: the box).
pub(crate) fn check_fcstd(facts: &FcstdFacts) -> Vec<String> {
    let part = match facts {
        FcstdFacts::Ok { part, .. } => part,
        other => return vec![format!("the FCStd is not readable: {other:?}")],
    };
    let [solid] = part.as_slice() else {
        return vec![format!("{} part solids, expected one box", part.len())];
    };
    let mut problems = Vec::new();
    if solid.kind != "Part::Box" || !solid.valid {
        problems.push(format!(
            "the solid is a {} (valid: {}), expected a valid Part::Box",
            solid.kind, solid.valid
        ));
    }
    let volume: f64 = BOX_MM.iter().product();
    if (solid.volume - volume).abs() > 1e-6 * volume {
        problems.push(format!("volume {} mm³, expected {volume}", solid.volume));
    }
    let bbox = [0.0, 0.0, 0.0, BOX_MM[0], BOX_MM[1], BOX_MM[2]];
    if solid
        .bbox
        .iter()
        .zip(bbox)
        .any(|(got, want)| (got - want).abs() > 1e-6)
    {
        problems.push(format!("bounding box {:?}, expected {bbox:?}", solid.bbox));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dxf(entities: &str) -> Vec<u8> {
        format!("  0\nSECTION\n  2\nENTITIES\n{entities}  0\nENDSEC\n  0\nEOF\n").into_bytes()
    }

    fn line(a: (f64, f64), b: (f64, f64)) -> String {
        format!(
            "  0\nLINE\n  8\n0\n 10\n{}\n 20\n{}\n 30\n0.0\n 11\n{}\n 21\n{}\n 31\n0.0\n",
            a.0, a.1, b.0, b.1
        )
    }

    fn figure(extra_line: bool, radius: f64) -> Vec<u8> {
        let mut entities = String::new();
        let corners = [(0.0, 0.0), (100.0, 0.0), (100.0, 50.0), (0.0, 50.0)];
        for side in 0..4 {
            entities.push_str(&line(corners[side], corners[(side + 1) % 4]));
        }
        entities.push_str(&format!(
            "  0\nCIRCLE\n  8\n0\n 10\n50.0\n 20\n25.0\n 30\n0.0\n 40\n{radius}\n"
        ));
        if extra_line {
            entities.push_str(&line((12.0, 3.0), (40.0, 20.0)));
        }
        dxf(&entities)
    }

    #[test]
    fn the_figure_passes_and_a_wrong_one_is_named() {
        assert_eq!(check_dxf(&figure(true, 20.0)), Vec::<String>::new());
        let problems = check_dxf(&figure(false, 21.0));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(check_dxf(b"not a dxf").len() == 1);
        assert_eq!(check_dxf(&dxf("")).len(), 6);
    }

    fn facts(kind: &str, volume: f64, bbox: [f64; 6]) -> FcstdFacts {
        FcstdFacts::Ok {
            objects: 1,
            solids: vec![],
            part: vec![desk_cad::solid::SolidFacts {
                object: "Box".to_string(),
                kind: kind.to_string(),
                valid: true,
                volume,
                area: 0.0,
                bbox,
            }],
            part_shapes: 1,
            meshes: vec![],
            linked: vec![],
            python_content: vec![],
            sheets: vec![],
            union: None,
        }
    }

    #[test]
    fn the_box_passes_and_another_solid_is_named() {
        let bbox = [0.0, 0.0, 0.0, 40.0, 30.0, 20.0];
        assert_eq!(
            check_fcstd(&facts("Part::Box", 24_000.0, bbox)),
            Vec::<String>::new()
        );
        assert_eq!(
            check_fcstd(&facts("Part::Cylinder", 24_000.0, bbox)).len(),
            1
        );
        assert_eq!(check_fcstd(&facts("Part::Box", 23_000.0, bbox)).len(), 1);
        let moved = [1.0, 0.0, 0.0, 41.0, 30.0, 20.0];
        assert_eq!(check_fcstd(&facts("Part::Box", 24_000.0, moved)).len(), 1);
        let unreadable = FcstdFacts::Unreadable {
            reason: "not a zip".to_string(),
        };
        assert_eq!(check_fcstd(&unreadable).len(), 1);
    }

    #[test]
    fn the_scripts_fit_their_displays() {
        let display = FREECAD_DISPLAY;
        for profile in super::super::args::CAD_PROFILES {
            let actions = script(profile, display);
            assert!(matches!(actions.last(), Some(Action::Done { .. })));
            for action in &actions {
                if let Action::Click { x, y, .. } = action {
                    assert!((0..i64::from(display.width)).contains(x));
                    assert!((0..i64::from(display.height)).contains(y));
                }
            }
        }
    }
}
