//! The DWG validator against constructed byte fixtures: a minimal AutoCAD 2018 file header
//! (`AC1032`, zeros, the encrypted file id; not a drawing AutoCAD wrote, which this machine has
//! no way to make) passes; other versions, other files, short files and a header that does not
//! decrypt are refused. The pad is checked against the bytes published for the format, so the
//! fixture and the validator do not merely agree with each other.

use desk_desktop::ArtifactFormat;

use super::{fixture_dwg, header_pad, validate_dwg};
use crate::artifact::validate;
use crate::error::BrokerError;

fn refusal(bytes: &[u8]) -> String {
    match validate(ArtifactFormat::Dwg, bytes) {
        Err(BrokerError::ArtifactInvalid(message)) => message,
        other => panic!("expected artifact_invalid, got {other:?}"),
    }
}

#[test]
fn the_header_pad_is_the_published_sequence() {
    // The first 16 bytes of the R2004 file header's XOR pad as the DWG format documentation
    // lists them.
    let published = [
        0x29, 0x23, 0xBE, 0x84, 0xE1, 0x6C, 0xD6, 0xAE, 0x52, 0x90, 0x49, 0xF1, 0xF1, 0xBB, 0xE9,
        0xEB,
    ];
    assert_eq!(header_pad(16), published);
}

#[test]
fn an_autocad_2018_header_passes() {
    validate_dwg(&fixture_dwg(1)).unwrap();
    validate(ArtifactFormat::Dwg, &fixture_dwg(2)).unwrap();
    assert_ne!(fixture_dwg(1), fixture_dwg(2));
}

#[test]
fn another_dwg_version_is_refused_by_name() {
    let mut bytes = fixture_dwg(1);
    bytes[..6].copy_from_slice(b"AC1027");
    let message = refusal(&bytes);
    assert!(
        message.contains("AC1027") && message.contains("AC1032"),
        "{message}"
    );
}

#[test]
fn a_file_that_is_not_a_dwg_is_refused_without_quoting_it() {
    let dxf = desk_desktop::fake_dxf::fixture_dxf(1);
    for bytes in [dxf.as_bytes(), b"SECRET-TEXT-0123456789", b"", b"AC10"] {
        let message = refusal(bytes);
        assert!(
            message.contains("not a DWG") || message.contains("fewer than"),
            "{message}"
        );
        assert!(!message.contains("SECRET"), "{message}");
        // Any format accepts the same bytes: the refusal is the DWG validator's.
        validate(ArtifactFormat::Any, bytes).unwrap();
    }
}

#[test]
fn a_short_or_undecryptable_header_is_refused() {
    let whole = fixture_dwg(1);
    let message = refusal(&whole[..0x90]);
    assert!(
        message.contains("fewer than a DWG file header"),
        "{message}"
    );
    let mut zeroed = whole.clone();
    zeroed[0x80..0xEC].fill(0);
    let message = refusal(&zeroed);
    assert!(message.contains("does not decrypt"), "{message}");
    let mut flipped = whole;
    flipped[0x85] ^= 0x01;
    assert!(refusal(&flipped).contains("does not decrypt"));
}
