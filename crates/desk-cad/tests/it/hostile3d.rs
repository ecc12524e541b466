//! The 3D judge stays bounded on hostile files (made by `hostile_fcstd.py` from a trusted gold):
//! 3,000 objects pointing at one shape, a 3 GiB shape member that declares its size or lies
//! about it, a UTF-16 `Document.xml` with and without a DOCTYPE, a plain `Part::Feature`
//! carrying a Python-object property, and FreeCAD's binary BREP storage (read, not refused).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use desk_cad::score3d::{SolidZeroReason, score_fcstd};

use crate::solid::{run_freecad_script, tools_available};

#[test]
fn hostile_files_end_quickly_with_their_reasons() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        r#"import FreeCAD, Part
from FreeCAD import Vector as V
g = Part.makeBox(40, 30, 10).cut(Part.makeCylinder(5, 10, V(20, 15, 0)))
d = FreeCAD.newDocument("gold"); d.addObject("Part::Feature", "Part").Shape = g
d.saveAs("{dir}/gold.FCStd")
# FreeCAD's binary BREP storage (the SaveBinaryBrep preference; HOME is the test's directory).
FreeCAD.ParamGet("User parameter:BaseApp/Preferences/Document").SetBool("SaveBinaryBrep", True)
b = FreeCAD.newDocument("binary"); b.addObject("Part::Feature", "Part").Shape = g
b.saveAs("{dir}/binary.FCStd")
"#,
        dir = dir.path().display()
    );
    run_freecad_script(dir.path(), &script, "binary.FCStd");
    let gold = dir.path().join("gold.FCStd");
    let maker = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/hostile_fcstd.py");
    let out = Command::new("python3")
        .arg(&maker)
        .arg(&gold)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cases = [
        ("many-objects", Some(SolidZeroReason::ResourceLimit)),
        ("bomb-honest", Some(SolidZeroReason::ResourceLimit)),
        // Python's zipfile stops at the declared size; the CRC then fails.
        ("bomb-lying", Some(SolidZeroReason::Unreadable)),
        ("utf16-doctype", Some(SolidZeroReason::Unreadable)),
        ("python-property", Some(SolidZeroReason::PythonContent)),
        ("utf16", None),
        ("binary", None),
    ];
    for (name, expected) in cases {
        let started = Instant::now();
        let report = score_fcstd(&gold, &dir.path().join(format!("{name}.FCStd"))).unwrap();
        let elapsed = started.elapsed();
        println!(
            "{name}: {} {:?} {:?} in {elapsed:?}",
            report.score, report.zero_reason, report.message
        );
        assert_eq!(report.zero_reason, expected, "{name}: {report:?}");
        if expected.is_none() {
            assert_eq!(report.score, 1.0, "{name}: {report:?}");
        }
        assert!(elapsed < Duration::from_secs(15), "{name} took {elapsed:?}");
    }
    let report = score_fcstd(&gold, &dir.path().join("utf16-doctype.FCStd")).unwrap();
    assert!(
        report.message.as_deref().unwrap_or("").contains("DOCTYPE"),
        "{report:?}"
    );
    let report = score_fcstd(&gold, &dir.path().join("python-property.FCStd")).unwrap();
    assert_eq!(report.message.as_deref(), Some("python content: Part.Trap"));
}
