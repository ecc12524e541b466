//! Writing HATCH and angular DIMENSION entities as raw pairs into a DXF the crate wrote.

use crate::model::Geometry;

/// Raw pairs for the entities the crate cannot write, to splice into the ENTITIES section; an
/// angular dimension names `block` (its anonymous block, written by the crate) in group 2.
pub(crate) fn write_pairs(
    layer: &str,
    linetype: Option<&str>,
    geometry: &Geometry,
    handle: u64,
    block: &str,
) -> Option<String> {
    let mut out = Vec::<(i32, String)>::new();
    let common = |out: &mut Vec<(i32, String)>, kind: &str| {
        out.push((0, kind.to_owned()));
        out.push((5, format!("{handle:X}")));
        out.push((100, "AcDbEntity".to_owned()));
        out.push((8, layer.to_owned()));
        if let Some(linetype) = linetype {
            out.push((6, linetype.to_owned()));
        }
    };
    let num = |v: f64| format!("{v}");
    match geometry {
        Geometry::Hatch { loops, pattern } => {
            common(&mut out, "HATCH");
            let solid = pattern.pattern == "SOLID";
            out.extend([
                (100, "AcDbHatch".to_owned()),
                (10, "0".to_owned()),
                (20, "0".to_owned()),
                (30, "0".to_owned()),
                (210, "0".to_owned()),
                (220, "0".to_owned()),
                (230, "1".to_owned()),
                (2, pattern.pattern.clone()),
                (70, if solid { "1" } else { "0" }.to_owned()),
                (71, "0".to_owned()),
                (91, loops.len().to_string()),
            ]);
            for (idx, points) in loops.iter().enumerate() {
                // Outer (1) for the first loop, otherwise a plain loop; polyline form (2).
                let flags = if idx == 0 { 3 } else { 2 };
                out.extend([
                    (92, flags.to_string()),
                    (72, "0".to_owned()),
                    (73, "1".to_owned()),
                    (93, points.len().to_string()),
                ]);
                for p in points {
                    out.push((10, num(p.x)));
                    out.push((20, num(p.y)));
                }
                out.push((97, "0".to_owned()));
            }
            out.extend([(75, "0".to_owned()), (76, "1".to_owned())]);
            if !solid {
                out.push((52, num(pattern.angle_deg)));
                out.push((41, num(pattern.scale)));
                out.push((77, "0".to_owned()));
                out.push((78, "0".to_owned()));
            }
            out.push((98, "0".to_owned()));
        }
        Geometry::AngularDim {
            line1,
            line2,
            arc_point,
        } => {
            common(&mut out, "DIMENSION");
            out.extend([
                (100, "AcDbDimension".to_owned()),
                (2, block.to_owned()),
                (10, num(line2.1.x)),
                (20, num(line2.1.y)),
                (30, "0".to_owned()),
                (11, num(arc_point.x)),
                (21, num(arc_point.y)),
                (31, "0".to_owned()),
                (70, "34".to_owned()),
                (3, "Standard".to_owned()),
                (100, "AcDb2LineAngularDimension".to_owned()),
            ]);
            for (code, p) in [
                (13, line1.0),
                (14, line1.1),
                (15, line2.0),
                (16, *arc_point),
            ] {
                out.push((code, num(p.x)));
                out.push((code + 10, num(p.y)));
                out.push((code + 20, "0".to_owned()));
            }
        }
        _ => return None,
    }
    let mut text = String::new();
    for (code, value) in out {
        text.push_str(&format!("{code:>3}\r\n{value}\r\n"));
    }
    Some(text)
}

/// Inserts `extra` (raw pairs) at the end of the ENTITIES section of the ASCII DXF `dxf`.
pub(crate) fn splice_entities(dxf: &str, extra: &str) -> Option<String> {
    let entities = dxf.find("\r\nENTITIES\r\n")?;
    let endsec = dxf[entities..].find("\r\nENDSEC\r\n")? + entities;
    // `endsec` points at the line break before `ENDSEC`; its code line `  0` precedes it.
    let code_line = dxf[..endsec].rfind("\r\n")? + 2;
    let mut out = String::with_capacity(dxf.len() + extra.len());
    out.push_str(&dxf[..code_line]);
    out.push_str(extra);
    out.push_str(&dxf[code_line..]);
    Some(out)
}

/// Gives every ENDBLK of the ASCII DXF `dxf` a handle of its own: the `dxf` crate writes a
/// block's ENDBLK with the BLOCK's handle, which other readers report as a duplicate. The new
/// handles count up from `base`, above anything the crate or the raw writer assigns.
pub(crate) fn unique_endblk_handles(dxf: &str, base: u64) -> String {
    let lines: Vec<&str> = dxf.split("\r\n").collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut in_endblk = false;
    let mut next = base;
    let mut idx = 0;
    while idx + 1 < lines.len() {
        let (code, value) = (lines[idx], lines[idx + 1]);
        let code_num = code.trim();
        if code_num == "0" {
            in_endblk = value == "ENDBLK";
        }
        out.push(code.to_owned());
        if in_endblk && code_num == "5" {
            out.push(format!("{next:X}"));
            next += 1;
        } else {
            out.push(value.to_owned());
        }
        idx += 2;
    }
    out.extend(lines[idx..].iter().map(|line| (*line).to_owned()));
    out.join("\r\n")
}
