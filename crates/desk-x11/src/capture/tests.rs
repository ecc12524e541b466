//! Unit tests for raw frames: pixel access, change counting and PNG encoding.

use super::*;

fn solid(width: u32, height: u32, bgrx: [u8; 4]) -> RawFrame {
    let pixels = bgrx.repeat(usize::try_from(width * height).unwrap());
    RawFrame::from_bgrx(width, height, pixels).unwrap()
}

#[test]
fn rgb_at_reads_bgrx() {
    let frame = solid(4, 3, [0xcc, 0x66, 0x33, 0]);
    assert_eq!(frame.rgb_at(3, 2), Some((0x33, 0x66, 0xcc)));
    assert_eq!(frame.rgb_at(4, 0), None);
}

#[test]
fn changed_pixels_ignores_padding_byte() {
    let a = solid(4, 4, [1, 2, 3, 0]);
    let mut b_pixels = [1, 2, 3, 0xff].repeat(16);
    b_pixels[5 * 4] = 9;
    let b = RawFrame::from_bgrx(4, 4, b_pixels).unwrap();
    assert_eq!(a.changed_pixels(&b), 1);
    assert_eq!(a.changed_pixels(&a.clone()), 0);
    assert_eq!(a.changed_pixels(&solid(2, 2, [1, 2, 3, 0])), 16);
}

#[test]
fn from_bgrx_rejects_wrong_length() {
    assert!(RawFrame::from_bgrx(2, 2, vec![0; 15]).is_none());
}

#[test]
fn png_round_trips() {
    let frame = solid(8, 5, [0xcc, 0x66, 0x33, 0]);
    let png = frame.encode_png().unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    assert_eq!((info.width, info.height), (8, 5));
    assert_eq!(&buffer[..3], &[0x33, 0x66, 0xcc]);
}

#[test]
fn sha256_is_lowercase_hex() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
