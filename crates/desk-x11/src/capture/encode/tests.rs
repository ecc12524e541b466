//! Unit tests for the banded PNG encoder: exact round trips through two independent decoders
//! (the `png` crate with checksums verified, and miniz_oxide's strict zlib inflate) for random
//! and UI-like frames of several sizes and band counts, and the Adler-32 combination.

use super::super::cache::EncodeCache;
use super::super::deflate::{ADLER_MOD, adler_combine};
use super::*;

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, bound: u32) -> u32 {
        u32::try_from(self.next() % u64::from(bound)).unwrap()
    }
}

fn random_frame(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..width * height * 4)
        .map(|_| u8::try_from(rng.next() >> 56).unwrap())
        .collect()
}

/// A UI-like frame: a flat background, filled rectangles, thin lines, a few noisy "text" areas,
/// runs of identical rows and a pad byte that is not always zero.
fn ui_frame(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut pixels = [0xef, 0xeb, 0xe7, 0].repeat(usize::try_from(width * height).unwrap());
    let mut set = |x: u32, y: u32, bgrx: [u8; 4]| {
        let offset = usize::try_from((y * width + x) * 4).unwrap();
        pixels[offset..offset + 4].copy_from_slice(&bgrx);
    };
    for _ in 0..12 {
        let (x0, y0) = (rng.below(width), rng.below(height));
        let (w, h) = (rng.below(width - x0) + 1, rng.below(height - y0) + 1);
        let color = [
            u8::try_from(rng.below(256)).unwrap(),
            u8::try_from(rng.below(256)).unwrap(),
            u8::try_from(rng.below(256)).unwrap(),
            u8::try_from(rng.below(2) * 0xff).unwrap(),
        ];
        let noisy = rng.below(3) == 0;
        for y in y0..y0 + h {
            for x in x0..x0 + w {
                if noisy && rng.below(4) == 0 {
                    set(x, y, [0x20, 0x20, 0x20, 0]);
                } else {
                    set(x, y, color);
                }
            }
        }
    }
    pixels
}

fn expected_rgb(bgrx: &[u8]) -> Vec<u8> {
    bgrx.chunks_exact(4)
        .flat_map(|pixel| [pixel[2], pixel[1], pixel[0]])
        .collect()
}

/// Decodes with the `png` crate, CRCs and Adler-32 verified.
fn decode_png(png: &[u8]) -> (u32, u32, Vec<u8>) {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png));
    decoder.ignore_checksums(false);
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buffer.truncate(info.buffer_size());
    (info.width, info.height, buffer)
}

/// The PNG's chunks (type and data) in order, each CRC checked.
fn chunks(png: &[u8]) -> Vec<([u8; 4], &[u8])> {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let mut chunks = Vec::new();
    let mut at = 8;
    while at < png.len() {
        let len = usize::try_from(u32::from_be_bytes(png[at..at + 4].try_into().unwrap())).unwrap();
        let kind: [u8; 4] = png[at + 4..at + 8].try_into().unwrap();
        let data = &png[at + 8..at + 8 + len];
        let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
        assert_eq!(
            crc,
            crc32fast::hash(&png[at + 4..at + 8 + len]),
            "crc of a chunk"
        );
        chunks.push((kind, data));
        at += 12 + len;
    }
    assert_eq!(at, png.len());
    chunks
}

/// Undoes the Up filter after a strict zlib inflate (miniz_oxide checks the Adler-32) of the
/// IDAT chunks laid end to end; checks the layout: IHDR, one IDAT per band, IEND.
fn decode_zlib(png: &[u8], width: u32, height: u32) -> Vec<u8> {
    let chunks = chunks(png);
    let kinds: Vec<&[u8; 4]> = chunks.iter().map(|(kind, _)| kind).collect();
    let mut expected_kinds = vec![b"IHDR"];
    expected_kinds.extend(std::iter::repeat_n(b"IDAT", n_bands(height)));
    expected_kinds.push(b"IEND");
    assert_eq!(kinds, expected_kinds);
    let zlib: Vec<u8> = chunks
        .iter()
        .filter(|(kind, _)| kind == b"IDAT")
        .flat_map(|(_, data)| data.iter().copied())
        .collect();
    let filtered = miniz_oxide::inflate::decompress_to_vec_zlib(&zlib).unwrap();
    let row_len = usize::try_from(width * 3).unwrap();
    assert_eq!(
        filtered.len(),
        (row_len + 1) * usize::try_from(height).unwrap()
    );
    let mut rgb: Vec<u8> = Vec::with_capacity(filtered.len());
    for (row_idx, row) in filtered.chunks_exact(row_len + 1).enumerate() {
        assert_eq!(row[0], UP_FILTER);
        for (col, &byte) in row[1..].iter().enumerate() {
            let above = if row_idx == 0 {
                0
            } else {
                rgb[(row_idx - 1) * row_len + col]
            };
            rgb.push(byte.wrapping_add(above));
        }
    }
    rgb
}

/// The PNG of `bgrx` on `n_threads` threads, not hashed.
fn on_threads(bgrx: &[u8], width: u32, height: u32, n_threads: usize) -> Vec<u8> {
    encode_png_on_threads(bgrx, width, height, n_threads, false)
        .unwrap()
        .bytes
}

/// Checks that a hashed PNG has the unhashed one's bytes and their SHA-256.
fn check_hashed(png: &Png, unhashed: &[u8]) {
    assert!(png.bytes == unhashed, "hashing changed the bytes");
    let sha256 = png.sha256.as_ref().expect("a hash");
    assert_eq!(
        desk_contract::digest::digest_hex(sha256),
        crate::capture::sha256_hex(unhashed)
    );
}

fn check_round_trip(bgrx: &[u8], width: u32, height: u32, n_threads: usize) {
    let png = on_threads(bgrx, width, height, n_threads);
    check_hashed(
        &encode_png_on_threads(bgrx, width, height, n_threads, true).unwrap(),
        &png,
    );
    let expected = expected_rgb(bgrx);
    let (decoded_width, decoded_height, rgb) = decode_png(&png);
    assert_eq!((decoded_width, decoded_height), (width, height));
    assert!(
        rgb == expected,
        "{width}x{height} on {n_threads} threads: png crate decode differs"
    );
    let rgb = decode_zlib(&png, width, height);
    assert!(
        rgb == expected,
        "{width}x{height} on {n_threads} threads: zlib decode differs"
    );
}

const SIZES: [(u32, u32); 9] = [
    (17, 130),
    (1, 1),
    (3, 2),
    (7, 5),
    (8, 3),
    (33, 17),
    (101, 67),
    (640, 31),
    (1001, 123),
];

#[test]
fn random_frames_round_trip_on_any_thread_count() {
    for (size_idx, (width, height)) in SIZES.into_iter().enumerate() {
        let bgrx = random_frame(width, height, 1 + size_idx as u64);
        for n_threads in [1, 2, 3, 7, 1000] {
            check_round_trip(&bgrx, width, height, n_threads);
        }
    }
}

#[test]
fn ui_frames_round_trip_on_any_thread_count() {
    for (size_idx, (width, height)) in SIZES.into_iter().enumerate() {
        let bgrx = ui_frame(width, height, 100 + size_idx as u64);
        for n_threads in [1, 2, 3, 7, 1000] {
            check_round_trip(&bgrx, width, height, n_threads);
        }
    }
}

#[test]
fn long_zero_runs_and_flat_frames_round_trip() {
    // Runs far beyond 258 bytes, a flat frame (every row equal to the one above) and an
    // all-zero frame (one run through the whole band).
    for bgrx_value in [[0u8, 0, 0, 0], [1, 2, 3, 0], [0xff, 0xff, 0xff, 0xff]] {
        let bgrx = bgrx_value.repeat(1031 * 77);
        for n_threads in [1, 2, 5] {
            check_round_trip(&bgrx, 1031, 77, n_threads);
        }
    }
}

#[test]
fn zero_runs_of_every_length_round_trip() {
    // Row k repeats row k - 1 except one channel of every k-th pixel, so its filtered bytes are
    // zero runs of 3k - 1 bytes between single differences: every run length from 2 to 359
    // (around the literal/match boundary and past 258), with random rows around them.
    let (width, height) = (241, 121);
    let mut bgrx = random_frame(width, height, 31);
    let row_bytes = usize::try_from(width * 4).unwrap();
    for k in 1..usize::try_from(height).unwrap() {
        let (above, row) = bgrx.split_at_mut(k * row_bytes);
        let row = &mut row[..row_bytes];
        row.copy_from_slice(&above[(k - 1) * row_bytes..]);
        for x in (0..usize::try_from(width).unwrap()).step_by(k) {
            row[x * 4 + k % 3] ^= 0x5a;
        }
    }
    for n_threads in [1, 2] {
        check_round_trip(&bgrx, width, height, n_threads);
    }
}

#[test]
fn the_png_does_not_depend_on_the_thread_count() {
    let (width, height) = (1283, 811);
    let bgrx = ui_frame(width, height, 7);
    let png = encode_png(&bgrx, width, height).unwrap();
    for n_threads in [1, 2, 3, 8] {
        assert!(png == on_threads(&bgrx, width, height, n_threads));
    }
    assert_eq!(decode_png(&png).2, expected_rgb(&bgrx));
    assert_eq!(decode_zlib(&png, width, height), expected_rgb(&bgrx));
}

/// Repaints a rectangle of `bgrx` (a frame `width` wide) with a color.
fn paint(bgrx: &mut [u8], width: u32, rect: (u32, u32, u32, u32), color: [u8; 4]) {
    let (x0, y0, w, h) = rect;
    for y in y0..y0 + h {
        for x in x0..x0 + w {
            let offset = usize::try_from((y * width + x) * 4).unwrap();
            bgrx[offset..offset + 4].copy_from_slice(&color);
        }
    }
}

#[test]
fn the_cache_reuses_unchanged_bands_and_gives_the_cold_bytes() {
    let (width, height) = (1001, 203);
    let n_bands = usize::try_from(height).unwrap().div_ceil(BAND_ROWS);
    let mut cache = EncodeCache::default();
    let mut bgrx = ui_frame(width, height, 11);
    // Hashed during the incremental encode (what `Capturer::encode_png` gives the settled
    // frame): the cold bytes, and the SHA-256 of exactly those bytes, reused bands or not.
    let check = |cache: &mut EncodeCache, bgrx: &[u8]| {
        let cold = on_threads(bgrx, width, height, 1);
        let png = cache.encode_hashed(bgrx, width, height, true).unwrap();
        check_hashed(&png, &cold);
        assert_eq!(decode_zlib(&png.bytes, width, height), expected_rgb(bgrx));
    };
    check(&mut cache, &bgrx);
    assert_eq!(cache.n_reused(), 0);
    check(&mut cache, &bgrx);
    assert_eq!(cache.n_reused(), n_bands);
    // A change inside band 2 (rows 64..96) re-encodes that band only.
    paint(&mut bgrx, width, (10, 70, 5, 3), [1, 2, 3, 0]);
    check(&mut cache, &bgrx);
    assert_eq!(cache.n_reused(), n_bands - 1);
    // A change on the last row of band 3 also re-encodes band 4, filtered against it.
    paint(&mut bgrx, width, (500, 127, 1, 1), [9, 9, 9, 0]);
    check(&mut cache, &bgrx);
    assert_eq!(cache.n_reused(), n_bands - 2);
    // Only the pad byte changed: compared as bytes, re-encoded, same pixels.
    bgrx[3] ^= 0xff;
    check(&mut cache, &bgrx);
    assert_eq!(cache.n_reused(), n_bands - 1);
    // Another size starts over; so does a cleared cache.
    let small = ui_frame(33, 17, 12);
    let png = cache.encode_hashed(&small, 33, 17, false).unwrap();
    assert!(png.sha256.is_none());
    assert_eq!(decode_zlib(&png.bytes, 33, 17), expected_rgb(&small));
    assert_eq!(cache.n_reused(), 0);
    cache.clear();
    check(&mut cache, &bgrx);
    assert_eq!(cache.n_reused(), 0);
    // Bad input is refused and leaves the cache usable.
    assert!(
        cache
            .encode_hashed(&bgrx[..100], width, height, true)
            .is_err()
    );
    check(&mut cache, &bgrx);
    assert_eq!(cache.n_reused(), n_bands);
}

#[test]
fn bad_input_is_refused() {
    assert!(encode_png(&[0; 15], 2, 2).is_err());
    assert!(encode_png(&[], 0, 4).is_err());
    assert!(encode_png(&[], 4, 0).is_err());
    assert!(encode_png(&[0; 16], u32::MAX, u32::MAX).is_err());
}

fn naive_adler(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % ADLER_MOD;
        b = (b + a) % ADLER_MOD;
    }
    (b << 16) | a
}

#[test]
fn adler_combine_matches_the_whole() {
    let data = random_frame(300, 300, 9);
    for split in [0, 1, 5551, 5552, 65521, 65522, 200_000, data.len()] {
        let (first, second) = data.split_at(split);
        assert_eq!(
            adler_combine(naive_adler(first), naive_adler(second), second.len() as u64),
            naive_adler(&data),
            "split at {split}"
        );
    }
}

#[test]
fn a_frame_in_two_parts_gives_the_same_png_and_cache() {
    let (width, height) = (1001, 300);
    let bgrx = ui_frame(width, height, 21);
    let (early_rows, n_early) = early_part(height).unwrap();
    assert_eq!(n_early, 3);
    let early_len = usize::try_from(early_rows * width * 4).unwrap();
    let early = (
        || Frame::new(&bgrx[..early_len], width, early_rows),
        n_early,
    );
    let whole = || Frame::new(&bgrx, width, height);
    let png = encode_png_staged(width, height, early, whole, false)
        .unwrap()
        .bytes;
    assert!(png == on_threads(&bgrx, width, height, 1));
    check_hashed(
        &encode_png_staged(width, height, early, whole, true).unwrap(),
        &png,
    );
    let mut cache = EncodeCache::default();
    check_hashed(
        &cache
            .encode_staged(width, height, early, whole, true)
            .unwrap(),
        &png,
    );
    assert_eq!(cache.n_reused(), 0);
    // Every band reused: the cached segments, framed and hashed the same.
    check_hashed(
        &cache
            .encode_staged(width, height, early, whole, true)
            .unwrap(),
        &png,
    );
    assert_eq!(cache.n_reused(), n_bands(height));
    let unhashed = cache.encode_staged(width, height, early, whole, false);
    assert!(unhashed.unwrap().sha256.is_none());
    // The rest failing: its error, no PNG, and a cache that starts over.
    let failed = || Err(X11Error::Capture("no rest".into()));
    assert!(encode_png_staged(width, height, early, failed, true).is_err());
    assert!(encode_png_staged(width, height, (failed, n_early), whole, true).is_err());
    assert!(
        cache
            .encode_staged(width, height, early, failed, true)
            .is_err()
    );
    check_hashed(
        &cache.encode_hashed(&bgrx, width, height, true).unwrap(),
        &png,
    );
    assert_eq!(cache.n_reused(), 0);
}
