//! One view of a part as the gold builder projected it: its label, kind and edges.

use serde::Deserialize;

/// One projected view: polylines in view coordinates (mm, x right, y up).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectedView {
    /// The view's label.
    pub name: String,
    /// An orthographic view (dimensioned, hidden edges shown), not the pictorial one.
    pub orthographic: bool,
    /// Visible edges.
    pub visible: Vec<Vec<[f64; 2]>>,
    /// Hidden edges.
    pub hidden: Vec<Vec<[f64; 2]>>,
    /// A section view's cut faces, each a list of closed loops (outer and holes).
    pub cut: Vec<Vec<Vec<[f64; 2]>>>,
    /// In the view a section is cut from: the cutting plane's view y (a horizontal line).
    pub cutting_plane: Option<f64>,
}
