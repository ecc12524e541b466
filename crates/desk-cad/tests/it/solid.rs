//! The sandboxed 3D inspector against files made by trusted headless FreeCAD: a true solid with
//! its exact volume, a mesh-only document, a Python feature (reported, never loaded), garbage.

use std::path::Path;
use std::process::Command;

use desk_cad::solid::{FcstdFacts, inspect_fcstd};

fn tools_available() -> bool {
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
"#,
        dir = dir.display(),
    );
    let path = dir.join("make.py");
    std::fs::write(&path, script).unwrap();
    let out = Command::new("freecadcmd")
        .arg(&path)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        dir.join("trap.FCStd").exists(),
        "fixtures not made: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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

    let FcstdFacts::Ok {
        python_features, ..
    } = inspect_fcstd(&dir.path().join("trap.FCStd")).unwrap()
    else {
        panic!("a Python feature document is readable");
    };
    assert_eq!(python_features, ["Trap"]);

    assert!(matches!(
        inspect_fcstd(&dir.path().join("garbage.FCStd")).unwrap(),
        FcstdFacts::Unreadable { .. }
    ));
}
