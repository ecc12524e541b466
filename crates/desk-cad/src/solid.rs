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

pub mod pictures;
pub(crate) mod sandbox;

pub use sandbox::{
    CPU_SECONDS, FILE_SIZE_LIMIT, JUDGE_TIMEOUT, MEMORY_LIMIT, PROCESS_LIMIT, TMP_SIZE,
};

/// The shared reader: document objects, BREP shapes and the choice of the part's solids.
pub(crate) const READER: &str = include_str!("solid/fcstd_read.py");
const INSPECT: &str = include_str!("solid/inspect_fcstd.py");
/// The recomputation of the `Layout1` page (after the reader): its drawing and dimension
/// values.
const SHEET_DRAW: &str = include_str!("solid/sheet_draw.py");

/// The reader followed by the page recomputation for `Layout1`.
pub(crate) fn reader_with_drawing() -> String {
    format!(
        "{READER}\nDRAW_LABEL = {:?}\n{SHEET_DRAW}\n",
        crate::generate3d::SHEET_NAME
    )
}

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
    /// A section's `SectionSymbol` or a detail's `Reference`, as stored; none for other views
    /// or when not stored (read since scorer v7).
    #[serde(default)]
    pub symbol: Option<String>,
    /// Entries of its `CenterLines` list.
    #[serde(default)]
    pub centre_lines: usize,
    /// Entries of its `CosmeticEdges` list.
    #[serde(default)]
    pub cosmetic_edges: usize,
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
    /// The value it shows (mm or degrees), from the judge's recomputed page
    /// (`solid/sheet_draw.py`); none when the page was not recomputed (the inspector, a page
    /// other than `Layout1`) or the dimension could not be measured.
    #[serde(default)]
    pub value: Option<f64>,
}

/// A page point in mm: origin at the page's lower left, Y up.
pub type PagePoint = [f64; 2];

/// One recomputed view of a drawn page.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawnView {
    /// The view it draws (index into [`SheetFacts::views`]).
    pub view: Option<usize>,
    /// Visible edges as polylines.
    pub visible: Vec<Vec<PagePoint>>,
    /// Hidden edges (only when the view shows them) as polylines.
    pub hidden: Vec<Vec<PagePoint>>,
    /// A section's hatched cut faces, each its loops (the outer one first).
    pub cut: Vec<Vec<Vec<PagePoint>>>,
}

/// One dimension of a drawn page.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawnDimension {
    /// The view its first reference names (index into [`SheetFacts::views`]).
    pub view: Option<usize>,
    /// Its type (`DistanceX`, `Diameter`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The value it shows.
    pub value: Option<f64>,
    /// A linear dimension's line ends.
    pub line: Option<Vec<PagePoint>>,
    /// Its stored label position (its view's position plus its own offset).
    pub at: Option<PagePoint>,
}

/// One note of a drawn page.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawnNote {
    /// Its position.
    pub at: PagePoint,
    /// Its text size in mm.
    pub size: f64,
    /// Its lines.
    pub lines: Vec<String>,
}

/// What the judge drew of a page: `Layout1` recomputed headless from its stored facts
/// (`solid/sheet_draw.py`), in page mm.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SheetDrawing {
    /// The views that could be recomputed.
    pub views: Vec<DrawnView>,
    /// Every dimension of the page.
    pub dimensions: Vec<DrawnDimension>,
    /// The annotations.
    pub notes: Vec<DrawnNote>,
    /// The drawing stopped at its point budget.
    pub truncated: bool,
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
    /// Its dimensions, sorted by type. Their values are not stored in the file; the judge
    /// measures them on its recomputed `Layout1`.
    pub dimensions: Vec<SheetDimension>,
    /// Hatches of its views.
    pub hatches: usize,
    /// Note texts (annotations and rich annotations), whitespace collapsed.
    pub notes: Vec<String>,
    /// The judge's drawing of the page (`Layout1` only, none from the inspector).
    #[serde(default)]
    pub drawing: Option<SheetDrawing>,
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

/// Inspects `path` like [`inspect_fcstd`] and also recomputes its `Layout1` page as the judge
/// does: the sheet's [`SheetFacts::drawing`] and its dimensions' values.
pub fn inspect_fcstd_drawn(path: &Path) -> Result<FcstdFacts, CadError> {
    let script = format!("{}INSPECT_DRAW = True\n{INSPECT}", reader_with_drawing());
    let stdout = sandbox::run_freecad(&script, &[(path, "/in/candidate.FCStd")], None)?;
    sandbox::parse_report(&stdout.finished()?)
}
