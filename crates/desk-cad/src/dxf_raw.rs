//! The entities the `dxf` crate cannot carry, read and written as raw ASCII group-code pairs:
//! `HATCH` (boundary loops, pattern, scale, angle) and angular `DIMENSION`s (two-line and
//! three-point). The crate silently drops both on read and has no type to write them, so the
//! reader scans the `ENTITIES` section itself and the writer splices pairs into it.
//!
//! Only ASCII DXF is scanned; a binary DXF's hatches and angular dimensions are not read (the
//! rest of it is, through the crate), and the outcome says so in a note.

use crate::model::{Geometry, HatchPattern, Point};

/// One raw model-space entity the crate cannot read, with its layer and own linetype.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RawEntity {
    pub(crate) layer: String,
    /// The entity's own linetype name (code 6), as written.
    pub(crate) linetype: Option<String>,
    pub(crate) geometry: Geometry,
}

/// What the raw scan found: entities, and notes about what it could not use.
#[derive(Debug, Default)]
pub(crate) struct RawScan {
    pub(crate) entities: Vec<RawEntity>,
    pub(crate) notes: Vec<String>,
}

type Pair = (i32, String);

/// Group-code pairs of an ASCII DXF, `None` when the text is not a sequence of pairs.
fn pairs(text: &str) -> Option<Vec<Pair>> {
    let mut lines = text.lines();
    let mut out = Vec::new();
    while let Some(code) = lines.next() {
        let code = code.trim();
        if code.is_empty() {
            continue;
        }
        let code: i32 = code.parse().ok()?;
        let value = lines.next()?.trim_end_matches('\r').trim().to_owned();
        out.push((code, value));
    }
    Some(out)
}

/// The entities of the ENTITIES section, each as its pairs (the `0` pair first).
fn entities_section(pairs: &[Pair]) -> Vec<&[Pair]> {
    let mut out = Vec::new();
    let Some(start) = pairs
        .windows(2)
        .position(|w| w[0] == (0, "SECTION".to_owned()) && w[1] == (2, "ENTITIES".to_owned()))
    else {
        return out;
    };
    let mut idx = start + 2;
    while idx < pairs.len() {
        if pairs[idx] == (0, "ENDSEC".to_owned()) {
            break;
        }
        let end = pairs[idx + 1..]
            .iter()
            .position(|(code, _)| *code == 0)
            .map_or(pairs.len(), |offset| idx + 1 + offset);
        out.push(&pairs[idx..end]);
        idx = end;
    }
    out
}

/// Scans an ASCII DXF for hatches and angular dimensions in model space.
pub(crate) fn scan(bytes: &[u8]) -> RawScan {
    let mut scan = RawScan::default();
    if bytes.starts_with(b"AutoCAD Binary DXF") {
        scan.notes.push(
            "binary DXF: hatches and angular dimensions are not read from binary files".to_owned(),
        );
        return scan;
    }
    let text = String::from_utf8_lossy(bytes);
    let Some(pairs) = pairs(&text) else {
        return scan;
    };
    for entity in entities_section(&pairs) {
        let kind = entity[0].1.as_str();
        if kind != "HATCH" && kind != "DIMENSION" {
            continue;
        }
        if value(entity, 67).is_some_and(|v| v.trim() == "1") {
            continue;
        }
        let geometry = match kind {
            "HATCH" => hatch(entity),
            _ => match angular(entity) {
                Some(geometry) => Ok(geometry),
                None => continue,
            },
        };
        match geometry {
            Ok(geometry) => scan.entities.push(RawEntity {
                layer: value(entity, 8)
                    .filter(|l| !l.is_empty())
                    .unwrap_or("0")
                    .to_owned(),
                linetype: value(entity, 6).map(str::to_owned),
                geometry,
            }),
            Err(why) => scan.notes.push(format!("skipped a {kind}: {why}")),
        }
    }
    scan
}

/// The first value of `code` in the entity.
fn value(entity: &[Pair], code: i32) -> Option<&str> {
    entity
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, v)| v.as_str())
}

/// A cursor over an entity's pairs that reads values by code, in order.
struct Cursor<'a> {
    pairs: &'a [Pair],
    at: usize,
}

impl Cursor<'_> {
    /// The next pair's value if its code is `code` (the cursor moves past it).
    fn take(&mut self, code: i32) -> Result<&str, String> {
        match self.pairs.get(self.at) {
            Some((c, v)) if *c == code => {
                self.at += 1;
                Ok(v.as_str())
            }
            Some((c, v)) => Err(format!("expected group {code}, found {c} ({v:?})")),
            None => Err(format!("expected group {code}, found the end")),
        }
    }

    fn take_f64(&mut self, code: i32) -> Result<f64, String> {
        let raw = self.take(code)?;
        raw.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("group {code} is not a number: {raw:?}"))
    }

    fn take_count(&mut self, code: i32) -> Result<usize, String> {
        let raw = self.take(code)?;
        raw.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= 100_000)
            .ok_or_else(|| format!("group {code} is not a count: {raw:?}"))
    }

    fn take_point(&mut self, x: i32) -> Result<Point, String> {
        Ok(Point::new(self.take_f64(x)?, self.take_f64(x + 10)?))
    }

    /// Skips pairs until the next one with `code`.
    fn seek(&mut self, code: i32) -> Result<(), String> {
        match self.pairs[self.at..].iter().position(|(c, _)| *c == code) {
            Some(offset) => {
                self.at += offset;
                Ok(())
            }
            None => Err(format!("no group {code}")),
        }
    }
}

/// Arc edges of a hatch boundary become polygon vertices every few degrees.
const ARC_STEP_DEG: f64 = 5.0;

fn hatch(entity: &[Pair]) -> Result<Geometry, String> {
    let marker = entity
        .iter()
        .position(|pair| *pair == (100, "AcDbHatch".to_owned()))
        .ok_or("no AcDbHatch subclass")?;
    let mut cursor = Cursor {
        pairs: entity,
        at: marker,
    };
    cursor.seek(2)?;
    let pattern = cursor.take(2)?.trim().to_ascii_uppercase();
    cursor.seek(70)?;
    let solid = cursor.take(70)?.trim() == "1";
    cursor.seek(91)?;
    let n_loops = cursor.take_count(91)?;
    let mut loops = Vec::with_capacity(n_loops);
    for _ in 0..n_loops {
        let flags: u32 = cursor
            .take(92)?
            .trim()
            .parse()
            .map_err(|_| "bad loop flags (92)")?;
        let points = if flags & 2 != 0 {
            polyline_loop(&mut cursor)?
        } else {
            edge_loop(&mut cursor)?
        };
        if cursor.pairs.get(cursor.at).is_some_and(|(c, _)| *c == 97) {
            let n_sources = cursor.take_count(97)?;
            for _ in 0..n_sources {
                cursor.take(330)?;
            }
        }
        loops.push(points);
    }
    let rest = &entity[cursor.at..];
    let number = |code: i32| {
        rest.iter()
            .find(|(c, _)| *c == code)
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
    };
    Ok(Geometry::Hatch {
        loops,
        pattern: HatchPattern {
            pattern: if solid { "SOLID".to_owned() } else { pattern },
            scale: if solid {
                1.0
            } else {
                number(41).unwrap_or(1.0)
            },
            angle_deg: if solid {
                0.0
            } else {
                number(52).unwrap_or(0.0)
            },
        },
    })
}

fn polyline_loop(cursor: &mut Cursor<'_>) -> Result<Vec<Point>, String> {
    let has_bulge = cursor.take(72)?.trim() != "0";
    cursor.take(73)?;
    let n_vertices = cursor.take_count(93)?;
    let mut points = Vec::with_capacity(n_vertices);
    for _ in 0..n_vertices {
        points.push(cursor.take_point(10)?);
        if has_bulge && cursor.pairs.get(cursor.at).is_some_and(|(c, _)| *c == 42) {
            let bulge = cursor.take_f64(42)?;
            if bulge.abs() > 1e-12 {
                return Err("bulged hatch boundaries are not read".to_owned());
            }
        }
    }
    Ok(points)
}

fn edge_loop(cursor: &mut Cursor<'_>) -> Result<Vec<Point>, String> {
    let n_edges = cursor.take_count(93)?;
    let mut points = Vec::new();
    for _ in 0..n_edges {
        match cursor.take(72)?.trim() {
            "1" => {
                points.push(cursor.take_point(10)?);
                cursor.take_point(11)?;
            }
            "2" => {
                let center = cursor.take_point(10)?;
                let r = cursor.take_f64(40)?;
                let start = cursor.take_f64(50)?;
                let end = cursor.take_f64(51)?;
                let ccw = cursor.take(73)?.trim() != "0";
                let sweep = crate::render::arc_sweep(start, end);
                let steps = ((sweep / ARC_STEP_DEG).ceil() as usize).max(1);
                for step in 0..steps {
                    let t = sweep * step as f64 / steps as f64;
                    let angle = if ccw { start + t } else { -(start + t) };
                    points.push(center.polar(r, angle));
                }
            }
            other => return Err(format!("hatch edge type {other} is not read")),
        }
    }
    Ok(points)
}

fn angular(entity: &[Pair]) -> Option<Geometry> {
    let two_line = entity
        .iter()
        .any(|(c, v)| *c == 100 && v == "AcDb2LineAngularDimension");
    let three_point = entity
        .iter()
        .any(|(c, v)| *c == 100 && v == "AcDb3PointAngularDimension");
    if !two_line && !three_point {
        return None;
    }
    let point = |x: i32| -> Option<Point> {
        let get = |code| {
            value(entity, code)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite())
        };
        Some(Point::new(get(x)?, get(x + 10)?))
    };
    if two_line {
        Some(Geometry::AngularDim {
            line1: (point(13)?, point(14)?),
            line2: (point(15)?, point(10)?),
            arc_point: point(16)?,
        })
    } else {
        let vertex = point(15)?;
        Some(Geometry::AngularDim {
            line1: (vertex, point(13)?),
            line2: (vertex, point(14)?),
            arc_point: point(10)?,
        })
    }
}

mod write;

pub(crate) use write::{splice_entities, unique_endblk_handles, write_pairs};

#[cfg(test)]
mod tests;
