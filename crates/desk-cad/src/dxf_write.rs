//! DXF writing of gold drawings.
//!
//! Output is R2007 (LibreCAD's own save format) in millimetres with every used layer in the
//! LAYER table and every used linetype in the LTYPE table. Hatches and angular dimensions,
//! which the `dxf` crate has no type for, are spliced in as raw pairs by
//! [`crate::dxf_raw`]. Invariant: the bytes depend only on the model: the header's
//! clock-derived dates and random GUIDs are pinned to fixed values.

use std::path::Path;

use dxf::entities::{self as dx, EntityType};
use dxf::enums::{AcadVersion, DimensionType, Units};
use dxf::{Drawing, LwPolylineVertex};

use crate::error::CadError;
use crate::model::{DimKind, Geometry, Model, Point, dash_pattern};

/// Writes `model` as a DXF R2007 file in millimetres.
pub fn write_dxf(model: &Model, path: &Path) -> Result<(), CadError> {
    let failed = |message: String| CadError::Dxf {
        op: "write",
        path: path.to_owned(),
        message,
    };
    let drawing = to_drawing(model);
    let mut bytes = Vec::new();
    drawing
        .save(&mut bytes)
        .map_err(|err| failed(err.to_string()))?;
    let mut raw = String::new();
    for (idx, entity) in model.entities.iter().enumerate() {
        if let Some(pairs) = crate::dxf_raw::write_pairs(
            &entity.layer,
            entity.linetype.as_deref(),
            &entity.geometry,
            RAW_HANDLE_BASE + idx as u64,
            &dimension_block_name(idx),
        ) {
            raw.push_str(&pairs);
        }
    }
    if !raw.is_empty() {
        let text = String::from_utf8(bytes).map_err(|err| failed(err.to_string()))?;
        let text = crate::dxf_raw::unique_endblk_handles(&text, ENDBLK_HANDLE_BASE);
        bytes = crate::dxf_raw::splice_entities(&text, &raw)
            .ok_or_else(|| failed("no ENTITIES section to extend".to_owned()))?
            .into_bytes();
    }
    std::fs::write(path, bytes).map_err(|source| CadError::Io {
        op: "write",
        path: path.to_owned(),
        source,
    })
}

/// Handles of raw-written entities start here, far above what the crate assigns.
const RAW_HANDLE_BASE: u64 = 0xD000_0000;

/// Handles of the ENDBLK records of a drawing with raw-written entities start here.
const ENDBLK_HANDLE_BASE: u64 = 0xE000_0000;

/// Builds the `dxf` drawing for `model`.
pub(crate) fn to_drawing(model: &Model) -> Drawing {
    let mut drawing = Drawing::new();
    drawing.header.version = AcadVersion::R2007;
    drawing.header.default_drawing_units = Units::Millimeters;
    pin_header_stamps(&mut drawing.header);
    for name in model.layers() {
        if name != "0" {
            drawing.add_layer(dxf::tables::Layer {
                name,
                ..Default::default()
            });
        }
    }
    for name in model.linetypes() {
        let Some(pattern) = dash_pattern(&name) else {
            continue;
        };
        drawing.add_line_type(dxf::tables::LineType {
            name,
            element_count: pattern.len() as i32,
            total_pattern_length: pattern.iter().map(|v| v.abs()).sum(),
            dash_dot_space_lengths: pattern.to_vec(),
            complex_line_type_element_types: vec![0; pattern.len()],
            alignment_code: i32::from(b'A'),
            ..Default::default()
        });
    }
    for entity in &model.entities {
        let Some(specific) = to_specific(&entity.geometry) else {
            continue;
        };
        drawing.add_entity(dx::Entity {
            common: dx::EntityCommon {
                layer: entity.layer.clone(),
                line_type_name: entity
                    .linetype
                    .clone()
                    .unwrap_or_else(|| "BYLAYER".to_owned()),
                ..Default::default()
            },
            specific,
        });
    }
    // After the entities, so the blocks' handles (and their entities', assigned at save)
    // follow every handle already taken.
    for (idx, entity) in model.entities.iter().enumerate() {
        if let Some(block) = dimension_block(idx, &entity.geometry) {
            drawing.add_block(block);
        }
    }
    drawing
}

/// Replaces the clock- and random-derived header fields so gold files are byte-stable.
fn pin_header_stamps(header: &mut dxf::Header) {
    use chrono::{NaiveDate, TimeZone};
    if let Some(naive) = NaiveDate::from_ymd_opt(2025, 1, 1).and_then(|d| d.and_hms_opt(0, 0, 0)) {
        if let Some(local) = chrono::Local.from_local_datetime(&naive).earliest() {
            header.creation_date = local;
            header.update_date = local;
        }
        let universal = chrono::Utc.from_utc_datetime(&naive);
        header.creation_date_universal = universal;
        header.update_date_universal = universal;
    }
    header.fingerprint_guid = uuid::Uuid::nil();
    header.version_guid = uuid::Uuid::nil();
    header.time_in_drawing = std::time::Duration::ZERO;
    header.user_elapsed_timer = std::time::Duration::ZERO;
}

/// The name of the anonymous block holding the drawn form of the raw-written angular
/// dimension that is entity `idx` of the model. Other readers (ezdxf, AutoCAD) delete a
/// DIMENSION whose group 2 names no block.
pub(crate) fn dimension_block_name(idx: usize) -> String {
    format!("*D{}", idx + 1)
}

/// The anonymous block of an angular dimension: its arc through the arc point in the sector
/// it picks and the angle's text at the arc's middle. `None` for any other geometry (the
/// crate's own dimensions) and for parallel lines.
fn dimension_block(idx: usize, geometry: &Geometry) -> Option<dxf::Block> {
    let Geometry::AngularDim { arc_point, .. } = geometry else {
        return None;
    };
    let angle = geometry.angle()?;
    let radius = angle.vertex.dist(*arc_point);
    let middle = (angle.start_deg + angle.sweep_deg / 2.0).to_radians();
    let arc = dx::Arc::new(
        dxf_point(angle.vertex),
        radius,
        angle.start_deg,
        (angle.start_deg + angle.sweep_deg).rem_euclid(360.0),
    );
    let mut text = dx::Text {
        location: dxf_point(Point::new(
            angle.vertex.x + radius * middle.cos(),
            angle.vertex.y + radius * middle.sin(),
        )),
        text_height: 2.5,
        value: format!("{}%%d", round_angle(angle.sweep_deg)),
        ..Default::default()
    };
    text.second_alignment_point = text.location.clone();
    let entity = |specific| dx::Entity {
        common: dx::EntityCommon {
            layer: "0".to_owned(),
            ..Default::default()
        },
        specific,
    };
    let mut block = dxf::Block {
        name: dimension_block_name(idx),
        entities: vec![entity(EntityType::Arc(arc)), entity(EntityType::Text(text))],
        ..Default::default()
    };
    block.set_is_anonymous(true);
    Some(block)
}

/// An angle as a dimension shows it: at most two decimals, no trailing zeros.
fn round_angle(deg: f64) -> String {
    let text = format!("{deg:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn dxf_point(p: Point) -> dxf::Point {
    dxf::Point::new(p.x, p.y, 0.0)
}

/// The crate's entity for `geometry`; `None` for what [`crate::dxf_raw`] writes.
fn to_specific(geometry: &Geometry) -> Option<EntityType> {
    let measured = geometry.measured_value().unwrap_or(0.0);
    Some(match geometry {
        Geometry::Line { a, b } => EntityType::Line(dx::Line::new(dxf_point(*a), dxf_point(*b))),
        Geometry::Circle { center, r } => {
            EntityType::Circle(dx::Circle::new(dxf_point(*center), *r))
        }
        Geometry::Arc {
            center,
            r,
            start_deg,
            end_deg,
        } => EntityType::Arc(dx::Arc::new(dxf_point(*center), *r, *start_deg, *end_deg)),
        Geometry::Polyline { points, closed } => {
            let mut poly = dx::LwPolyline::default();
            poly.set_is_closed(*closed);
            poly.vertices = points
                .iter()
                .map(|p| LwPolylineVertex {
                    x: p.x,
                    y: p.y,
                    ..Default::default()
                })
                .collect();
            EntityType::LwPolyline(poly)
        }
        Geometry::Hatch { .. } | Geometry::AngularDim { .. } => return None,
        Geometry::Leader { points } => {
            let mut leader = dx::Leader {
                dimension_style_name: "Standard".to_owned(),
                use_arrowheads: true,
                ..Default::default()
            };
            leader.vertices = points.iter().map(|p| dxf_point(*p)).collect();
            leader.vertex_count = points.len() as i32;
            EntityType::Leader(leader)
        }
        Geometry::MText {
            insert,
            height,
            value,
        } => EntityType::MText(dx::MText {
            insertion_point: dxf_point(*insert),
            initial_text_height: *height,
            attachment_point: dxf::enums::AttachmentPoint::TopLeft,
            text: value.replace('\n', "\\P"),
            text_style_name: "Standard".to_owned(),
            ..Default::default()
        }),
        Geometry::Text {
            insert,
            height,
            value,
        } => EntityType::Text(dx::Text {
            location: dxf_point(*insert),
            text_height: *height,
            value: value.clone(),
            ..Default::default()
        }),
        Geometry::LinearDim {
            p1,
            p2,
            dim_line_point,
            kind,
        } => {
            let mut dim = dx::RotatedDimension::default();
            dim.dimension_base.definition_point_1 = dxf_point(*dim_line_point);
            dim.dimension_base.text_mid_point = dxf_point(*dim_line_point);
            dim.dimension_base.actual_measurement = measured;
            dim.dimension_base.dimension_style_name = "Standard".to_owned();
            dim.definition_point_2 = dxf_point(*p1);
            dim.definition_point_3 = dxf_point(*p2);
            match kind {
                DimKind::Horizontal => {
                    dim.dimension_base.dimension_type = DimensionType::RotatedHorizontalOrVertical;
                    dim.rotation_angle = 0.0;
                }
                DimKind::Vertical => {
                    dim.dimension_base.dimension_type = DimensionType::RotatedHorizontalOrVertical;
                    dim.rotation_angle = 90.0;
                }
                DimKind::Aligned => dim.dimension_base.dimension_type = DimensionType::Aligned,
            }
            EntityType::RotatedDimension(dim)
        }
        Geometry::RadialDim {
            center,
            point_on_circle,
            diameter,
        } => {
            if *diameter {
                let far = Point::new(
                    2.0 * center.x - point_on_circle.x,
                    2.0 * center.y - point_on_circle.y,
                );
                let mut dim = dx::DiameterDimension::default();
                dim.dimension_base.dimension_type = DimensionType::Diameter;
                dim.dimension_base.definition_point_1 = dxf_point(far);
                dim.dimension_base.text_mid_point = dxf_point(*point_on_circle);
                dim.dimension_base.actual_measurement = measured;
                dim.dimension_base.dimension_style_name = "Standard".to_owned();
                dim.definition_point_2 = dxf_point(*point_on_circle);
                EntityType::DiameterDimension(dim)
            } else {
                let mut dim = dx::RadialDimension::default();
                dim.dimension_base.dimension_type = DimensionType::Radius;
                dim.dimension_base.definition_point_1 = dxf_point(*center);
                dim.dimension_base.text_mid_point = dxf_point(*point_on_circle);
                dim.dimension_base.actual_measurement = measured;
                dim.dimension_base.dimension_style_name = "Standard".to_owned();
                dim.definition_point_2 = dxf_point(*point_on_circle);
                EntityType::RadialDimension(dim)
            }
        }
    })
}
