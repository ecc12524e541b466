//! Unit tests of the raw DXF scanner: hostile hatches, written hatches and angles read back,
//! and ENDBLK handles.

use super::*;

/// An ASCII DXF whose ENTITIES section holds `pairs` (code, value).
fn dxf(pairs: &[(i32, &str)]) -> Vec<u8> {
    let mut text = String::from("  0\r\nSECTION\r\n  2\r\nENTITIES\r\n");
    for (code, value) in pairs {
        text.push_str(&format!("{code:>3}\r\n{value}\r\n"));
    }
    text.push_str("  0\r\nENDSEC\r\n  0\r\nEOF\r\n");
    text.into_bytes()
}

#[test]
fn hostile_hatches_are_notes_never_panics() {
    let head = [
        (0, "HATCH"),
        (8, "0"),
        (100, "AcDbHatch"),
        (2, "ANSI31"),
        (70, "0"),
    ];
    let cases: Vec<Vec<(i32, &str)>> = vec![
        // A loop count far beyond what follows.
        vec![(91, "99999"), (92, "2"), (72, "0"), (73, "1"), (93, "3")],
        // A count over the cap, a negative count, a non-number.
        vec![(91, "100000000")],
        vec![(91, "-1")],
        vec![(91, "1"), (92, "2"), (72, "0"), (73, "1"), (93, "x")],
        // A coordinate that is not finite.
        vec![
            (91, "1"),
            (92, "2"),
            (72, "0"),
            (73, "1"),
            (93, "1"),
            (10, "NaN"),
            (20, "1"),
        ],
        // A spline edge, which is not read.
        vec![(91, "1"), (92, "0"), (93, "1"), (72, "4")],
        // Truncated right after the subclass.
        vec![],
    ];
    for tail in cases {
        let mut pairs = head.to_vec();
        pairs.extend(tail.iter().copied());
        let scan = scan(&dxf(&pairs));
        assert!(scan.entities.is_empty(), "{tail:?}: {:?}", scan.entities);
        assert_eq!(scan.notes.len(), 1, "{tail:?}");
    }
    // Odd line counts and garbage are not pairs: nothing is read, nothing fails.
    assert!(scan(b"  0\r\nSECTION\r\n  2").entities.is_empty());
    assert!(scan(&[0xff, 0xfe, 0x00]).entities.is_empty());
}

#[test]
fn a_written_hatch_and_angle_read_back() {
    let hatch = Geometry::Hatch {
        loops: vec![vec![
            Point::new(0.0, 0.0),
            Point::new(10.0, 0.0),
            Point::new(10.0, 5.0),
        ]],
        pattern: HatchPattern {
            pattern: "ANSI31".to_owned(),
            scale: 2.0,
            angle_deg: 30.0,
        },
    };
    let angle = Geometry::AngularDim {
        line1: (Point::new(0.0, 0.0), Point::new(10.0, 0.0)),
        line2: (Point::new(0.0, 0.0), Point::new(5.0, 5.0)),
        arc_point: Point::new(8.0, 2.0),
    };
    let mut raw = String::new();
    for (idx, geometry) in [&hatch, &angle].into_iter().enumerate() {
        raw.push_str(&write_pairs("L", Some("CENTER"), geometry, idx as u64 + 1, "*D1").unwrap());
    }
    let empty = String::from_utf8(dxf(&[])).unwrap();
    let spliced = splice_entities(&empty, &raw).unwrap();
    let scan = scan(spliced.as_bytes());
    assert!(scan.notes.is_empty(), "{:?}", scan.notes);
    let read: Vec<&Geometry> = scan.entities.iter().map(|e| &e.geometry).collect();
    assert_eq!(read, [&hatch, &angle]);
    assert!(scan.entities.iter().all(|e| e.layer == "L"));
    assert!(
        scan.entities
            .iter()
            .all(|e| e.linetype.as_deref() == Some("CENTER"))
    );
}

#[test]
fn endblk_records_get_handles_of_their_own() {
    let dxf = "  0\r\nBLOCK\r\n  5\r\n1F\r\n  2\r\n*D1\r\n  0\r\nENDBLK\r\n  5\r\n1F\r\n\
               100\r\nAcDbBlockEnd\r\n  0\r\nLINE\r\n  5\r\n20\r\n  0\r\nEOF\r\n";
    let fixed = unique_endblk_handles(dxf, 0xE000_0000);
    assert_eq!(
        fixed,
        "  0\r\nBLOCK\r\n  5\r\n1F\r\n  2\r\n*D1\r\n  0\r\nENDBLK\r\n  5\r\nE0000000\r\n\
         100\r\nAcDbBlockEnd\r\n  0\r\nLINE\r\n  5\r\n20\r\n  0\r\nEOF\r\n"
    );
}
