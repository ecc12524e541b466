//! The trusted 3D inspector: facts about a candidate or gold `.FCStd`, read by headless FreeCAD
//! (`freecadcmd`) inside a bubblewrap sandbox of its own: no network or other namespaces, a
//! read-only `/usr` and `/etc`, an empty tmpfs home, the file bound read-only at
//! `/in/candidate.FCStd`, killed with its parent and after [`JUDGE_TIMEOUT`].
//!
//! The candidate is untrusted input and its code never runs: an `.FCStd` can name Python
//! feature classes that `openDocument` would import and restore, so the inspector script
//! (`solid/inspect_fcstd.py`, ours) never opens it as a document. It reads the zip with
//! `zipfile`, refuses a `Document.xml` with a DOCTYPE (entity expansion), lists object types
//! from the XML, and loads each Part shape from its BREP member with OCCT's reader. Python
//! features, meshes and links are reported, never loaded.
//!
//! The part is chosen the way a judge must (`solid/fcstd_read.py`): a PartDesign body stores a
//! shape on every feature, so the body's shape (or its tip's) stands for them and its features
//! are never extra parts; bodies and other shape objects count when visible and consumed by no
//! other shape object (a Part Cut's Base and Tool, an Extrusion's Base, a body's BaseFeature).

use std::path::Path;

use serde::Deserialize;

use crate::CadError;

pub(crate) mod sandbox;

pub use sandbox::{
    CPU_SECONDS, FILE_SIZE_LIMIT, JUDGE_TIMEOUT, MEMORY_LIMIT, PROCESS_LIMIT, TMP_SIZE,
};

/// The shared reader: document objects, BREP shapes and the choice of the part's solids.
pub(crate) const READER: &str = include_str!("solid/fcstd_read.py");
const INSPECT: &str = include_str!("solid/inspect_fcstd.py");

/// One solid found in a Part shape.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolidFacts {
    /// The document object holding it.
    pub object: String,
    /// That object's FreeCAD type, e.g. `PartDesign::Body`'s tip `PartDesign::Pad`.
    #[serde(rename = "type")]
    pub kind: String,
    /// OCCT's validity check.
    pub valid: bool,
    /// Volume in mm³.
    pub volume: f64,
    /// Surface area in mm².
    pub area: f64,
    /// `[xmin, ymin, zmin, xmax, ymax, zmax]` in mm.
    pub bbox: [f64; 6],
}

/// The part's union: its solids fused (touching or overlapping solids merge, shared faces and
/// volume count once), or their compound when the fuse fails.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnionFacts {
    /// Volume of the union in mm³.
    pub volume: f64,
    /// Surface area of the union in mm² (a face shared by two touching solids is inside).
    pub area: f64,
}

/// One TechDraw view on a page.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SheetView {
    /// `part` (a part or projection-group view), `section` or `detail`.
    pub kind: String,
    /// The view direction (toward the viewer) as stored.
    pub direction: [f64; 3],
    /// Its stored `X`, `Y` on the page in mm (a projection-group item's plus its group's);
    /// none when not stored or not finite.
    #[serde(default)]
    pub position: Option<[f64; 2]>,
    /// Its stored `Scale` (the page's when its `ScaleType` is `Page`, as FreeCAD keeps it).
    #[serde(default)]
    pub scale: Option<f64>,
}

/// One TechDraw dimension on a page.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SheetDimension {
    /// Its type (`DistanceX`, `Diameter`, ...; `Unknown` when unreadable).
    #[serde(rename = "type")]
    pub kind: String,
    /// The page view (index into [`SheetFacts::views`]) its first `References2D` link names;
    /// none when it names no view of the page.
    pub view: Option<usize>,
}

/// One TechDraw page, read from `Document.xml` (views are never recomputed).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SheetFacts {
    /// The page's label (what the GUI shows and the task names, e.g. `Layout1`).
    pub label: String,
    /// Its views, including a projection group's items.
    pub views: Vec<SheetView>,
    /// Its template's stored `Width` and `Height` in mm.
    #[serde(default)]
    pub page_size: Option<[f64; 2]>,
    /// Its dimensions, sorted by type. Their values are not stored in the file and are not
    /// read.
    pub dimensions: Vec<SheetDimension>,
    /// Hatches of its views.
    pub hatches: usize,
    /// Note texts (annotations and rich annotations), whitespace collapsed.
    pub notes: Vec<String>,
}

/// What the inspector found in one file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum FcstdFacts {
    /// Not an FCStd archive, or its document XML is unusable.
    Unreadable {
        /// Why.
        reason: String,
    },
    /// Over one of the reader's caps (shape data, solids, `Document.xml` size) or out of
    /// memory in the sandbox.
    ResourceLimit {
        /// Which.
        reason: String,
    },
    /// A readable document.
    Ok {
        /// Number of document objects.
        objects: usize,
        /// Solids of every stored Part shape, in document order (a PartDesign body's
        /// features each store one, so this over-counts the part).
        solids: Vec<SolidFacts>,
        /// The part's solids: of the visible shape objects outside bodies that no other
        /// shape object consumes (a body counts with its own shape, or its tip's).
        part: Vec<SolidFacts>,
        /// How many part objects have a non-empty shape, solid or not (sketches, faces).
        part_shapes: usize,
        /// Mesh objects (a mesh is not a solid).
        meshes: Vec<String>,
        /// Link objects and external files they name.
        linked: Vec<String>,
        /// Objects, properties (`Object.Property`) and extensions whose type names Python,
        /// e.g. `Part::FeaturePython` or an `App::PropertyPythonObject` (never loaded).
        python_content: Vec<String>,
        /// TechDraw pages, in document order.
        sheets: Vec<SheetFacts>,
        /// The union of the part's solids (none without a part solid).
        #[serde(default)]
        union: Option<UnionFacts>,
    },
}

/// Inspects `path` with sandboxed headless FreeCAD.
pub fn inspect_fcstd(path: &Path) -> Result<FcstdFacts, CadError> {
    let script = format!("{READER}\n{INSPECT}");
    let stdout = sandbox::run_freecad(&script, &[(path, "/in/candidate.FCStd")], None)?;
    sandbox::parse_report(&stdout.finished()?)
}
