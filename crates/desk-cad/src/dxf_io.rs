//! DXF reading and writing with the `dxf` crate.
//!
//! Writing produces the gold files: R2007 (LibreCAD's own save format), millimetre units,
//! every used layer in the LAYER table. Reading accepts any DXF the `dxf` crate parses and
//! normalizes model-space entities into a [`Model`]; paper-space entities, unsupported entity
//! types and non-anonymous block inserts are skipped with a note. Content the benchmark
//! forbids (raster images, OLE objects, underlays, external references) is reported in
//! [`ReadOutcome::forbidden`] so the scorer can give zero; detection combines the parsed
//! drawing with a raw scan of group-code-0 names, so entity types the `dxf` crate drops still
//! count.

use std::path::Path;

use dxf::Drawing;
use dxf::entities::{self as dx, EntityType};
use dxf::enums::DimensionType;
use serde::{Deserialize, Serialize};

pub use crate::dxf_write::write_dxf;
use crate::error::CadError;
use crate::model::{DimKind, Entity, Geometry, Model, Point, normalize_linetype};

/// Forbidden content found in a DXF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Forbidden {
    /// A raster IMAGE entity.
    Raster,
    /// An OLEFRAME or OLE2FRAME entity.
    Ole,
    /// A PDF, DWF or DGN underlay.
    Underlay,
    /// An external reference block.
    Xref,
}

/// The result of reading a DXF: the normalized model plus what could not be used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadOutcome {
    /// Model-space entities that the model can represent.
    pub model: Model,
    /// Forbidden content, sorted and deduplicated.
    pub forbidden: Vec<Forbidden>,
    /// Human-readable notes about skipped content, in file order.
    pub notes: Vec<String>,
}

/// Reads a DXF file into the model.
///
/// Fails only when the `dxf` crate cannot parse the file; forbidden content is reported in
/// the outcome, not as an error.
pub fn read_dxf(path: &Path) -> Result<ReadOutcome, CadError> {
    let bytes = std::fs::read(path).map_err(|source| CadError::Io {
        op: "read",
        path: path.to_owned(),
        source,
    })?;
    read_dxf_bytes(&bytes).map_err(|message| CadError::Dxf {
        op: "read",
        path: path.to_owned(),
        message,
    })
}

/// Reads DXF bytes into the model; the error is the parser's message.
pub fn read_dxf_bytes(bytes: &[u8]) -> Result<ReadOutcome, String> {
    let mut drawing =
        Drawing::load(&mut std::io::Cursor::new(bytes)).map_err(|err| err.to_string())?;
    if text::is_binary_dxf(bytes) {
        text::repair_binary_utf8(&mut drawing);
    }
    let mut outcome = ReadOutcome::default();
    outcome.forbidden.extend(raw_forbidden_scan(bytes));
    for block in drawing.blocks() {
        if block.is_xref() || block.is_xref_overlay() || !block.xref_path_name.is_empty() {
            outcome.forbidden.push(Forbidden::Xref);
        }
        for entity in &block.entities {
            if let Some(kind) = forbidden_kind(&entity.specific) {
                outcome.forbidden.push(kind);
            }
        }
    }
    let layers = LayerLinetypes::of(&drawing);
    for entity in drawing.entities() {
        convert_entity(&drawing, &layers, entity, &mut outcome);
    }
    let raw = crate::dxf_raw::scan(bytes);
    for entity in raw.entities {
        let linetype = layers.resolve(&entity.layer, entity.linetype.as_deref().unwrap_or(""));
        outcome.model.entities.push(Entity {
            layer: entity.layer,
            linetype,
            geometry: entity.geometry,
        });
    }
    outcome.notes.extend(raw.notes);
    outcome.forbidden.sort();
    outcome.forbidden.dedup();
    Ok(outcome)
}

fn forbidden_kind(specific: &EntityType) -> Option<Forbidden> {
    match specific {
        EntityType::Image(_) => Some(Forbidden::Raster),
        EntityType::OleFrame(_) | EntityType::Ole2Frame(_) => Some(Forbidden::Ole),
        EntityType::DgnUnderlay(_) | EntityType::DwfUnderlay(_) | EntityType::PdfUnderlay(_) => {
            Some(Forbidden::Underlay)
        }
        _ => None,
    }
}

/// Scans an ASCII DXF's group-code-0 names for forbidden entity and object types.
///
/// Binary DXF is left to the structural check.
fn raw_forbidden_scan(bytes: &[u8]) -> Vec<Forbidden> {
    let text = String::from_utf8_lossy(bytes);
    let mut found = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(code) = lines.next() {
        let Some(value) = lines.next() else { break };
        if code != "0" {
            continue;
        }
        let name = value.to_ascii_uppercase();
        let kind = match name.as_str() {
            "IMAGE" | "IMAGEDEF" => Some(Forbidden::Raster),
            "OLEFRAME" | "OLE2FRAME" => Some(Forbidden::Ole),
            "XREF" => Some(Forbidden::Xref),
            _ if name.ends_with("UNDERLAY") || name.ends_with("UNDERLAYDEFINITION") => {
                Some(Forbidden::Underlay)
            }
            _ => None,
        };
        found.extend(kind);
    }
    found
}

/// Each layer's linetype, to resolve an entity's `ByLayer`.
struct LayerLinetypes(Vec<(String, Option<String>)>);

impl LayerLinetypes {
    fn of(drawing: &Drawing) -> Self {
        Self(
            drawing
                .layers()
                .map(|layer| {
                    (
                        layer.name.to_ascii_uppercase(),
                        normalize_linetype(&layer.line_type_name),
                    )
                })
                .collect(),
        )
    }

    /// The effective linetype of an entity on `layer` whose own linetype is `own`.
    fn resolve(&self, layer: &str, own: &str) -> Option<String> {
        let own = own.trim();
        if own.is_empty() || own.eq_ignore_ascii_case("BYLAYER") {
            let layer = layer.to_ascii_uppercase();
            self.0
                .iter()
                .find(|(name, _)| *name == layer)
                .and_then(|(_, linetype)| linetype.clone())
        } else {
            normalize_linetype(own)
        }
    }
}

fn model_point(p: &dxf::Point) -> Point {
    Point::new(p.x, p.y)
}

fn convert_entity(
    drawing: &Drawing,
    layers: &LayerLinetypes,
    entity: &dx::Entity,
    outcome: &mut ReadOutcome,
) {
    let layer = if entity.common.layer.is_empty() {
        "0".to_owned()
    } else {
        entity.common.layer.clone()
    };
    let linetype = layers.resolve(&layer, &entity.common.line_type_name);
    if let Some(kind) = forbidden_kind(&entity.specific) {
        outcome.forbidden.push(kind);
        return;
    }
    if entity.common.is_in_paper_space {
        outcome
            .notes
            .push("skipped a paper-space entity; only model space is scored".to_owned());
        return;
    }
    let mut push = |geometry: Geometry| {
        outcome.model.entities.push(Entity {
            layer: layer.clone(),
            linetype: linetype.clone(),
            geometry,
        });
    };
    match &entity.specific {
        EntityType::Line(line) => push(Geometry::Line {
            a: model_point(&line.p1),
            b: model_point(&line.p2),
        }),
        EntityType::Circle(circle) => push(Geometry::Circle {
            center: model_point(&circle.center),
            r: circle.radius,
        }),
        EntityType::Arc(arc) => push(Geometry::Arc {
            center: model_point(&arc.center),
            r: arc.radius,
            start_deg: arc.start_angle,
            end_deg: arc.end_angle,
        }),
        EntityType::LwPolyline(poly) => {
            let vertices: Vec<(Point, f64)> = poly
                .vertices
                .iter()
                .map(|v| (Point::new(v.x, v.y), v.bulge))
                .collect();
            for geometry in polyline_pieces(&vertices, poly.is_closed()) {
                push(geometry);
            }
        }
        EntityType::Polyline(poly) => {
            if poly.flags & 16 != 0 || poly.is_polyface_mesh() {
                outcome
                    .notes
                    .push("skipped a polygon or polyface mesh".to_owned());
                return;
            }
            let vertices: Vec<(Point, f64)> = poly
                .vertices()
                .map(|v| (model_point(&v.location), v.bulge))
                .collect();
            for geometry in polyline_pieces(&vertices, poly.is_closed()) {
                push(geometry);
            }
        }
        EntityType::Text(text) => push(Geometry::Text {
            insert: model_point(&text.location),
            height: text.text_height,
            value: decode_text(&text.value),
        }),
        EntityType::MText(mtext) => {
            let mut raw = mtext.extended_text.concat();
            raw.push_str(&mtext.text);
            push(Geometry::MText {
                insert: model_point(&mtext.insertion_point),
                height: mtext.initial_text_height,
                value: strip_mtext(&decode_text(&raw)),
            });
        }
        EntityType::Leader(leader) => push(Geometry::Leader {
            points: leader.vertices.iter().map(model_point).collect(),
        }),
        // Read from the raw pairs by `crate::dxf_raw`, in both forms.
        EntityType::AngularThreePointDimension(_) => {}
        EntityType::RotatedDimension(dim) => push(linear_dimension(dim)),
        EntityType::RadialDimension(dim) => push(Geometry::RadialDim {
            center: model_point(&dim.dimension_base.definition_point_1),
            point_on_circle: model_point(&dim.definition_point_2),
            diameter: false,
        }),
        EntityType::DiameterDimension(dim) => {
            let far = model_point(&dim.dimension_base.definition_point_1);
            let near = model_point(&dim.definition_point_2);
            push(Geometry::RadialDim {
                center: far.mid(near),
                point_on_circle: near,
                diameter: true,
            });
        }
        EntityType::Insert(insert) => {
            let is_xref = drawing
                .blocks()
                .any(|b| b.name == insert.name && (b.is_xref() || b.is_xref_overlay()));
            if is_xref {
                outcome.forbidden.push(Forbidden::Xref);
            } else {
                outcome.notes.push(format!(
                    "ignored INSERT of block {:?}; block references are not expanded",
                    insert.name
                ));
            }
        }
        other => outcome.notes.push(format!(
            "skipped unsupported entity {}",
            entity_type_name(other)
        )),
    }
}

fn entity_type_name(specific: &EntityType) -> String {
    let debug = format!("{specific:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("unknown")
        .to_owned()
}

fn linear_dimension(dim: &dx::RotatedDimension) -> Geometry {
    let kind = if dim.dimension_base.dimension_type == DimensionType::Aligned {
        DimKind::Aligned
    } else {
        let angle = dim.rotation_angle.rem_euclid(180.0);
        if angle < 1e-6 || (180.0 - angle) < 1e-6 {
            DimKind::Horizontal
        } else if (angle - 90.0).abs() < 1e-6 {
            DimKind::Vertical
        } else {
            DimKind::Aligned
        }
    };
    Geometry::LinearDim {
        p1: model_point(&dim.definition_point_2),
        p2: model_point(&dim.definition_point_3),
        dim_line_point: model_point(&dim.dimension_base.definition_point_1),
        kind,
    }
}

/// Splits polyline vertices with bulges into straight runs and arc pieces.
fn polyline_pieces(vertices: &[(Point, f64)], closed: bool) -> Vec<Geometry> {
    if vertices.iter().all(|(_, bulge)| bulge.abs() < 1e-12) {
        return vec![Geometry::Polyline {
            points: vertices.iter().map(|(p, _)| *p).collect(),
            closed,
        }];
    }
    let n_vertices = vertices.len();
    let n_segments = if closed {
        n_vertices
    } else {
        n_vertices.saturating_sub(1)
    };
    let mut pieces = Vec::new();
    for segment_idx in 0..n_segments {
        let (start, bulge) = vertices[segment_idx];
        let (end, _) = vertices[(segment_idx + 1) % n_vertices];
        if bulge.abs() < 1e-12 {
            pieces.push(Geometry::Line { a: start, b: end });
        } else if let Some(arc) = bulge_arc(start, end, bulge) {
            pieces.push(arc);
        }
    }
    pieces
}

/// The arc from `start` to `end` with DXF bulge `bulge` (tan of a quarter of the sweep).
fn bulge_arc(start: Point, end: Point, bulge: f64) -> Option<Geometry> {
    let chord = start.dist(end);
    if chord < 1e-12 {
        return None;
    }
    let sweep = 4.0 * bulge.atan();
    let offset = (chord / 2.0) / (sweep / 2.0).tan();
    let mid = start.mid(end);
    let normal = Point::new(-(end.y - start.y) / chord, (end.x - start.x) / chord);
    let center = Point::new(mid.x + normal.x * offset, mid.y + normal.y * offset);
    let r = center.dist(start);
    let angle = |p: Point| (p.y - center.y).atan2(p.x - center.x).to_degrees();
    let (from, to) = if bulge > 0.0 {
        (start, end)
    } else {
        (end, start)
    };
    Some(Geometry::Arc {
        center,
        r,
        start_deg: angle(from).rem_euclid(360.0),
        end_deg: angle(to).rem_euclid(360.0),
    })
}

mod text;

use text::{decode_text, strip_mtext};

#[cfg(test)]
mod tests;
