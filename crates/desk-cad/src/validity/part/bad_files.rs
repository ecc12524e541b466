//! The invalid 3D files of judge validity and the zero reason each must get. The FreeCAD-made
//! ones (a mesh of the gold, a Python feature trap, a lone face, the sheet with its solid
//! hidden, a shape member failing its CRC) come from our own script (`bad_files.py`) run by
//! trusted freecadcmd in the judge's sandbox with only the gold bound in; the rest (an empty
//! file, a garbage zip, a symlink to the gold, no file) are written here. The same script makes
//! the sheet perturbations ([`SHEET_FILES`]), which must score below the gold, not zero.

use std::path::Path;

use crate::CadError;
use crate::score3d::SolidZeroReason;
use crate::solid::sandbox;

const SCRIPT: &str = include_str!("bad_files.py");

/// Every invalid file's case name and the zero reason it must get.
pub const BAD_FILES: [(&str, SolidZeroReason); 10] = [
    ("mesh", SolidZeroReason::MeshOnly),
    ("python feature", SolidZeroReason::PythonContent),
    ("face only", SolidZeroReason::NoSolid),
    ("sheet only", SolidZeroReason::NoSolid),
    ("corrupt member", SolidZeroReason::Unreadable),
    ("garbage zip", SolidZeroReason::Unreadable),
    ("symlink", SolidZeroReason::Unreadable),
    ("empty file", SolidZeroReason::Empty),
    ("missing file", SolidZeroReason::Missing),
    ("not a zip", SolidZeroReason::Unreadable),
];

/// The gold with its `Layout1` perturbed, made by the same script: the first two views' places
/// exchanged, every view at the page's centre, the first view at twice its scale, the first
/// dimension's reference moved to the same-named edge of another view, the first dimension
/// showing a wrong value (on another edge of its view measuring over 5 % differently, else an
/// arbitrary text 25 % off), every view drawing its hidden edges (`HardHidden`; no gold shows
/// them, so only `presentation` sees the dashed lines), a centre line added to the first view
/// (`callouts`: no gold has one). Each must score strictly below the gold.
pub const SHEET_FILES: [&str; 7] = [
    "views swapped",
    "views stacked",
    "view rescaled",
    "dimension moved",
    "dimension value",
    "hidden shown",
    "centre line added",
];

/// Sheet perturbations made only when the gold has a section view: its cut surface no longer
/// hatched; its symbol changed ("A" to "B", `callouts`). Each must score strictly below the
/// gold.
pub const SECTION_FILES: [&str; 2] = ["hatch removed", "symbol changed"];

/// The file a case is written to: its name with dashes, `.FCStd`.
pub fn file_name(case: &str) -> String {
    format!("{}.FCStd", case.replace(' ', "-"))
}

/// Writes every file of [`BAD_FILES`] but the missing one, every [`SHEET_FILES`] one and,
/// when the gold has a section view, every [`SECTION_FILES`] one, into `dir`, from `gold`.
pub fn make_bad_files(dir: &Path, gold: &Path) -> Result<(), CadError> {
    let out_dir = dir.join("made");
    create(&out_dir)?;
    let stdout = sandbox::run_freecad(SCRIPT, &[(gold, "/in/gold.FCStd")], Some(&out_dir))?;
    let _: serde_json::Value = sandbox::parse_report(&stdout.finished()?)?;
    let made_here = [
        "mesh",
        "python feature",
        "face only",
        "sheet only",
        "corrupt member",
    ];
    for name in made_here
        .into_iter()
        .chain(SHEET_FILES)
        .chain(SECTION_FILES)
    {
        let made = out_dir.join(file_name(name));
        if SECTION_FILES.contains(&name) && !made.exists() {
            // The gold has no section.
            continue;
        }
        let path = dir.join(file_name(name));
        std::fs::rename(&made, &path).map_err(|source| CadError::Io {
            op: "move",
            path: made.clone(),
            source,
        })?;
    }
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(file_name(name));
        std::fs::write(&path, bytes).map_err(|source| CadError::Io {
            op: "write",
            path,
            source,
        })
    };
    write("garbage zip", b"PK\x03\x04 not really a zip")?;
    write("empty file", b"")?;
    write("not a zip", b"0\nSECTION\n2\nENTITIES\n0\nENDSEC\n0\nEOF\n")?;
    let link = dir.join(file_name("symlink"));
    std::os::unix::fs::symlink(gold, &link).map_err(|source| CadError::Io {
        op: "symlink",
        path: link,
        source,
    })
}

fn create(dir: &Path) -> Result<(), CadError> {
    std::fs::create_dir_all(dir).map_err(|source| CadError::Io {
        op: "create directory",
        path: dir.to_owned(),
        source,
    })
}
