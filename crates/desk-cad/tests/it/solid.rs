//! The sandboxed 3D inspector against files made by trusted headless FreeCAD: a true solid with
//! its exact volume, a mesh-only document, a Python feature (reported, never loaded), garbage.

use std::path::Path;
use std::process::Command;

use desk_cad::score3d::score_fcstd;
use desk_cad::solid::{FcstdFacts, inspect_fcstd};

pub(crate) fn tools_available() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v freecadcmd && command -v bwrap"])
        .output()
        .map(|out| out.status.success())
        .unwrap_or(false);
    if !found {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "freecadcmd/bwrap not found but DESK_REQUIRE_XVFB=1"
        );
        println!("skipped: freecadcmd or bwrap not found");
    }
    found
}

/// Runs `script` with trusted freecadcmd in `dir` and checks that it made `dir/expected`.
pub(crate) fn run_freecad_script(dir: &Path, script: &str, expected: &str) {
    let path = dir.join("make.py");
    std::fs::write(&path, script).unwrap();
    let out = Command::new("freecadcmd")
        .arg(&path)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        dir.join(expected).exists(),
        "{expected} not made: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes the fixtures with trusted freecadcmd.
fn make_fixtures(dir: &Path) {
    let script = format!(
        r#"import FreeCAD, Part, Mesh
d = FreeCAD.newDocument("gold")
f = d.addObject("Part::Feature", "Part")
f.Shape = Part.makeBox(40, 30, 10).cut(Part.makeCylinder(5, 10, FreeCAD.Vector(20, 15, 0)))
d.recompute()
d.saveAs("{dir}/gold.FCStd")
m = FreeCAD.newDocument("mesh")
m.addObject("Mesh::Feature", "Mesh").Mesh = Mesh.Mesh(Part.makeBox(1, 1, 1).tessellate(0.1))
m.saveAs("{dir}/mesh.FCStd")
class Trap:
    def __init__(self, obj):
        obj.Proxy = self
p = FreeCAD.newDocument("trap")
Trap(p.addObject("Part::FeaturePython", "Trap"))
p.saveAs("{dir}/trap.FCStd")
# The same part as gold, moved, built as a PartDesign body (every feature stores a shape).
import PartDesign
b = FreeCAD.newDocument("body")
body = b.addObject("PartDesign::Body", "Body")
box = b.addObject("PartDesign::AdditiveBox", "Box"); body.addObject(box)
box.Length = 40; box.Width = 30; box.Height = 10
hole = b.addObject("PartDesign::SubtractiveCylinder", "Hole"); body.addObject(hole)
hole.Radius = 5; hole.Height = 10; hole.Placement.Base = FreeCAD.Vector(20, 15, 0)
body.Placement.Base = FreeCAD.Vector(100, -7, 3)
b.recompute()
b.saveAs("{dir}/body.FCStd")
# A second body built on the first consumes it; a hidden scrap box is not part of the result.
based = b.addObject("PartDesign::Body", "Based")
based.BaseFeature = body
scrap = b.addObject("Part::Box", "Scrap")
scrap.Visibility = False
b.recompute()
b.saveAs("{dir}/based.FCStd")
# The same part in the Part workbench: a Cut consumes its Box and Cylinder.
c = FreeCAD.newDocument("cut")
pbox = c.addObject("Part::Box", "Box"); pbox.Length = 40; pbox.Width = 30; pbox.Height = 10
cyl = c.addObject("Part::Cylinder", "Cylinder"); cyl.Radius = 5; cyl.Height = 10
cyl.Placement.Base = FreeCAD.Vector(20, 15, 0)
cut = c.addObject("Part::Cut", "Cut"); cut.Base = pbox; cut.Tool = cyl
c.recompute()
c.saveAs("{dir}/cut.FCStd")
"#,
        dir = dir.display(),
    );
    run_freecad_script(dir, &script, "trap.FCStd");
    std::fs::write(dir.join("garbage.FCStd"), b"not a zip").unwrap();
}

#[test]
fn the_inspector_measures_solids_and_flags_meshes_python_and_garbage() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    make_fixtures(dir.path());

    let FcstdFacts::Ok { solids, meshes, .. } =
        inspect_fcstd(&dir.path().join("gold.FCStd")).unwrap()
    else {
        panic!("gold must be readable");
    };
    assert_eq!(solids.len(), 1);
    let expected = 40.0 * 30.0 * 10.0 - std::f64::consts::PI * 25.0 * 10.0;
    assert!((solids[0].volume - expected).abs() < 1e-6, "{solids:?}");
    assert!(solids[0].valid);
    assert_eq!(solids[0].bbox, [0.0, 0.0, 0.0, 40.0, 30.0, 10.0]);
    assert!(meshes.is_empty());
    // Deterministic: the same file gives the same facts.
    assert_eq!(
        inspect_fcstd(&dir.path().join("gold.FCStd")).unwrap(),
        inspect_fcstd(&dir.path().join("gold.FCStd")).unwrap()
    );

    let FcstdFacts::Ok { solids, meshes, .. } =
        inspect_fcstd(&dir.path().join("mesh.FCStd")).unwrap()
    else {
        panic!("a mesh document is readable");
    };
    assert!(solids.is_empty(), "a mesh is not a solid");
    assert_eq!(meshes, ["Mesh"]);

    let FcstdFacts::Ok { python_content, .. } =
        inspect_fcstd(&dir.path().join("trap.FCStd")).unwrap()
    else {
        panic!("a Python feature document is readable");
    };
    // The object and its pickled proxy property.
    assert_eq!(python_content, ["Trap", "Trap.Proxy"]);

    assert!(matches!(
        inspect_fcstd(&dir.path().join("garbage.FCStd")).unwrap(),
        FcstdFacts::Unreadable { .. }
    ));

    // A PartDesign body stores a shape on the body and on each feature: three solids, one part.
    let FcstdFacts::Ok { solids, part, .. } =
        inspect_fcstd(&dir.path().join("body.FCStd")).unwrap()
    else {
        panic!("a body document is readable");
    };
    assert_eq!(solids.len(), 3, "{solids:?}");
    assert_eq!(part.len(), 1, "{part:?}");
    assert_eq!(part[0].object, "Body");
    assert!((part[0].volume - expected).abs() < 1e-6, "{part:?}");
    assert_eq!(part[0].bbox, [100.0, -7.0, 3.0, 140.0, 23.0, 13.0]);

    let FcstdFacts::Ok { part, .. } = inspect_fcstd(&dir.path().join("based.FCStd")).unwrap()
    else {
        panic!("a document of two bodies is readable");
    };
    assert_eq!(part.len(), 1, "{part:?}");
    assert_eq!(part[0].object, "Based");
    assert!((part[0].volume - expected).abs() < 1e-6, "{part:?}");

    // In the Part workbench the Cut is the part; its Box and Cylinder are consumed inputs.
    let FcstdFacts::Ok { solids, part, .. } = inspect_fcstd(&dir.path().join("cut.FCStd")).unwrap()
    else {
        panic!("a Part document is readable");
    };
    assert_eq!(solids.len(), 3, "{solids:?}");
    assert_eq!(part.len(), 1, "{part:?}");
    assert_eq!(part[0].object, "Cut");
    assert!((part[0].volume - expected).abs() < 1e-6, "{part:?}");

    // The judge chooses the same parts: both score the gold's maximum.
    for name in ["body.FCStd", "cut.FCStd", "gold.FCStd"] {
        let report = score_fcstd(&dir.path().join("gold.FCStd"), &dir.path().join(name)).unwrap();
        assert_eq!(report.score, 1.0, "{name}: {report:?}");
    }
}
