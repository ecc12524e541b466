//! The `fcstd` validator against a real FreeCAD file (the oracle's GUI-built part with its
//! TechDraw sheet), Debian's FreeCAD files when installed, the profile's reset document, and
//! hand-made hostile archives.

use base64::Engine as _;

use super::{MAX_DOCUMENT_XML, validate_fcstd};
use crate::error::BrokerError;

const REAL: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../desk-cad/tests/fixtures/oracle-task-034.FCStd"
));

/// A zip written by hand: (name, method, stored bytes, declared size) per member; CRCs zero.
fn zip(members: &[(&str, u16, &[u8], usize)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, method, data, declared) in members {
        let offset = out.len() as u32;
        let header = |signature: u32, central: bool| {
            let mut h = signature.to_le_bytes().to_vec();
            if central {
                h.extend_from_slice(&20u16.to_le_bytes());
            }
            h.extend_from_slice(&20u16.to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            h.extend_from_slice(&method.to_le_bytes());
            h.extend_from_slice(&[0; 4]);
            h.extend_from_slice(&0u32.to_le_bytes());
            h.extend_from_slice(&(data.len() as u32).to_le_bytes());
            h.extend_from_slice(&(*declared as u32).to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            if central {
                h.extend_from_slice(&[0; 10]);
                h.extend_from_slice(&offset.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        out.extend(header(0x0403_4b50, false));
        out.extend_from_slice(data);
        central.extend(header(0x0201_4b50, true));
    }
    let start = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(members.len() as u16).to_le_bytes());
    out.extend_from_slice(&(members.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn stored<'a>(name: &'a str, data: &'a [u8]) -> (&'a str, u16, &'a [u8], usize) {
    (name, 0, data, data.len())
}

const SHAPE_DOC: &[u8] = br#"<?xml version='1.0' encoding='utf-8'?><Document><Objects Count="1"><Object type="Part::Feature" name="Part"/></Objects><ObjectData Count="1"><Object name="Part"><Properties Count="1"><Property name="Shape" type="Part::PropertyPartShape" status="1"><Part file="PartShape.brp"/></Property></Properties></Object></ObjectData></Document>"#;

fn assert_invalid(bytes: &[u8], what: &str) {
    match validate_fcstd(bytes) {
        Err(BrokerError::ArtifactInvalid(message)) => {
            assert!(message.starts_with("save not proven"), "{what}: {message}");
        }
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn a_real_freecad_file_passes_and_its_truncations_fail() {
    validate_fcstd(REAL).unwrap();
    for cut in [0, 10, REAL.len() / 3, REAL.len() / 2, REAL.len() - 5] {
        assert_invalid(&REAL[..cut], &format!("cut at {cut}"));
    }
    assert_invalid(b"not a zip at all", "garbage");
    // Debian's FreeCAD test files, when installed: a solid box passes.
    let debian = std::path::Path::new("/usr/share/freecad/Mod/Fem/femtest/data/calculix/box.FCStd");
    match std::fs::read(debian) {
        Ok(bytes) => validate_fcstd(&bytes).unwrap(),
        Err(_) => println!("skipped: {} not installed", debian.display()),
    }
}

#[test]
fn the_reset_document_is_not_a_proven_save() {
    let profile = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../desk-desktop/profiles/freecad.toml"
    ));
    let encoded = profile
        .split("template_base64 = \"\"\"")
        .nth(1)
        .and_then(|tail| tail.split("\"\"\"").next())
        .unwrap();
    let encoded: String = encoded.split_whitespace().collect();
    let reset = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert!(reset.starts_with(b"PK"));
    assert_invalid(&reset, "the empty reset document");
}

#[test]
fn hostile_and_incomplete_archives_fail() {
    let brep = b"DBRep_DrawableShape\nCASCADE Topology V1\n";
    validate_fcstd(&zip(&[
        stored("Document.xml", SHAPE_DOC),
        stored("PartShape.brp", brep),
    ]))
    .unwrap();
    // The shape member named by the document is missing or empty.
    assert_invalid(&zip(&[stored("Document.xml", SHAPE_DOC)]), "no member");
    assert_invalid(
        &zip(&[
            stored("Document.xml", SHAPE_DOC),
            stored("PartShape.brp", b""),
        ]),
        "empty member",
    );
    // No Document.xml; a document with neither shape nor page.
    assert_invalid(&zip(&[stored("PartShape.brp", brep)]), "no Document.xml");
    let empty =
        br#"<?xml version='1.0' encoding='utf-8'?><Document><Objects Count="0"/></Document>"#;
    assert_invalid(&zip(&[stored("Document.xml", empty)]), "no object");
    // A TechDraw page alone is a proven save (the sheet changed).
    let page = br#"<Document><Objects Count="1"><Object type="TechDraw::DrawPage" name="Page"/></Objects></Document>"#;
    validate_fcstd(&zip(&[stored("Document.xml", page)])).unwrap();
    // A deflated Document.xml that lies about its size: 40 MiB of spaces declared as its
    // real length (over the limit) and as 300 bytes (inflation stops at the limit).
    let mut big = SHAPE_DOC.to_vec();
    big.resize(MAX_DOCUMENT_XML + (8 << 20), b' ');
    let bomb = miniz_oxide::deflate::compress_to_vec(&big, 6);
    for declared in [big.len(), 300] {
        assert_invalid(
            &zip(&[
                ("Document.xml", 8, &bomb, declared),
                stored("PartShape.brp", brep),
            ]),
            &format!("bomb declared {declared}"),
        );
    }
    // The same document deflated honestly passes.
    let deflated = miniz_oxide::deflate::compress_to_vec(SHAPE_DOC, 6);
    validate_fcstd(&zip(&[
        ("Document.xml", 8, &deflated, SHAPE_DOC.len()),
        stored("PartShape.brp", brep),
    ]))
    .unwrap();
    // A central directory pointing past the end, an unknown method, a UTF-16 document.
    let mut broken = zip(&[
        stored("Document.xml", SHAPE_DOC),
        stored("PartShape.brp", brep),
    ]);
    let at = broken.len() - 6;
    broken[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_invalid(&broken, "central directory out of bounds");
    assert_invalid(
        &zip(&[
            ("Document.xml", 12, SHAPE_DOC, SHAPE_DOC.len()),
            stored("PartShape.brp", brep),
        ]),
        "bzip2",
    );
    let utf16: Vec<u8> = String::from_utf8_lossy(SHAPE_DOC)
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    assert_invalid(
        &zip(&[
            stored("Document.xml", &utf16),
            stored("PartShape.brp", brep),
        ]),
        "UTF-16",
    );
}
