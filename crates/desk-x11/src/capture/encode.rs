//! The capture path's PNG encoder: BGRX pixels to a lossless 8-bit RGB PNG with the Up filter on
//! every row, the filter fused with the BGRX → RGB conversion in one pass over the frame, and the
//! rows split into bands of `BAND_ROWS` rows deflated in parallel (`deflate.rs`) as segments of
//! one zlib stream, each band framed as its own IDAT chunk (and hashed) as soon as it and the
//! bands above it are done (`framing.rs`); `cache.rs` reuses the segments of bands whose pixels did
//! not change.
//!
//! Invariants: bands are independent (a band's first row is filtered against the previous band's
//! last row, read-only, and no match crosses a band) and their layout depends only on the frame's
//! height, so the same pixels give the same PNG bytes whatever the thread count and whether or
//! not a cache was used; the zlib trailer's Adler-32 is combined from the bands' own and covers
//! every filtered byte; the output is one IHDR, one IDAT per band and one IEND.

use std::ops::Range;
use std::sync::OnceLock;

use super::deflate::{BandEncoder, Segment};
use super::framing::{Png, PngWriter};
use super::parallel::{parallel_map, staged_map};
use crate::error::X11Error;

/// PNG's filter type byte for Up.
const UP_FILTER: u8 = 2;
/// Rows per band (the last band may have fewer): about 34 bands at 1080 rows, each costing a
/// block header of 52 bytes and a flush of 5, for reuse at a fine grain and balanced threads.
const BAND_ROWS: usize = 32;
/// Frames of at least this many pixels are encoded on every core (at least two threads).
const PARALLEL_MIN_PIXELS: u64 = 1_000_000;

/// Encodes `width * height` BGRX pixels as an RGB PNG, on as many threads as the machine has
/// cores (at least two from a megapixel up, one below).
pub(crate) fn encode_png(pixels: &[u8], width: u32, height: u32) -> Result<Vec<u8>, X11Error> {
    Ok(encode_png_hashed(pixels, width, height, false)?.bytes)
}

/// [`encode_png`], with the PNG's SHA-256 when `hash` is set.
pub(crate) fn encode_png_hashed(
    pixels: &[u8],
    width: u32,
    height: u32,
    hash: bool,
) -> Result<Png, X11Error> {
    encode_png_on_threads(pixels, width, height, default_threads(width, height), hash)
}

/// [`encode_png_hashed`] on `n_threads` threads (at least one).
pub(crate) fn encode_png_on_threads(
    pixels: &[u8],
    width: u32,
    height: u32,
    n_threads: usize,
    hash: bool,
) -> Result<Png, X11Error> {
    let frame = Frame::new(pixels, width, height)?;
    let bands = frame.bands();
    let n_bands = bands.len();
    let mut writer = PngWriter::new(width, height, n_bands, hash);
    parallel_map(
        n_bands,
        n_threads,
        |band_idx| frame.encode_band(bands[band_idx].clone(), band_idx + 1 == n_bands),
        |segment| writer.band(segment),
    )?;
    writer.finish()
}

/// The bands of a frame of `height` rows (see [`Frame::bands`]).
pub(super) fn band_rows(height: u32) -> Vec<Range<usize>> {
    rows_in_bands(usize::try_from(height).unwrap_or(0))
}

fn rows_in_bands(n_rows: usize) -> Vec<Range<usize>> {
    (0..n_rows)
        .step_by(BAND_ROWS)
        .map(|start| start..(start + BAND_ROWS).min(n_rows))
        .collect()
}

/// Encodes a frame that arrives in two parts, like [`encode_png`]: `early` waits for its first
/// rows and says how many bands lie inside them, which start on the other threads while this
/// one waits for the whole frame (`rest`). Same bytes as [`encode_png`] on the whole frame, and
/// their SHA-256 when `hash` is set.
pub(super) fn encode_png_staged<'f>(
    width: u32,
    height: u32,
    early: (impl FnOnce() -> Result<Frame<'f>, X11Error>, usize),
    rest: impl FnOnce() -> Result<Frame<'f>, X11Error>,
    hash: bool,
) -> Result<Png, X11Error> {
    let (first, n_early) = early;
    let bands = band_rows(height);
    let n_bands = bands.len();
    let band = |frame: &Frame<'_>, band_idx: usize| {
        let rows = bands.get(band_idx).cloned().unwrap_or_default();
        frame.encode_band(rows, band_idx + 1 == n_bands)
    };
    let mut writer = PngWriter::new(width, height, n_bands, hash);
    staged_map(
        n_bands,
        default_threads(width, height),
        n_early,
        (first, rest),
        band,
        band,
        |segment| writer.band(segment),
    )?;
    writer.finish()
}

/// Where a capture in two parts splits a frame of `height` rows: the first part's rows (a band
/// boundary) and its bands, a quarter of them (rounded up), or `None` below two bands. A quarter:
/// the first part is waited for with every core idle, the rest is copied by the X server while
/// one thread encodes the first part (about as long, from the measured copy and encode times).
pub(super) fn early_part(height: u32) -> Option<(u32, usize)> {
    let n_bands = n_bands(height);
    let n_early = n_bands.div_ceil(4);
    let rows = u32::try_from(n_early * BAND_ROWS).ok()?;
    (n_bands >= 2 && rows < height).then_some((rows, n_early))
}

/// How many bands a frame of `height` rows has.
pub(crate) fn n_bands(height: u32) -> usize {
    usize::try_from(height).map_or(0, |rows| rows.div_ceil(BAND_ROWS))
}

pub(super) fn default_threads(width: u32, height: u32) -> usize {
    if u64::from(width) * u64::from(height) >= PARALLEL_MIN_PIXELS {
        n_cores().max(2)
    } else {
        1
    }
}

fn n_cores() -> usize {
    static N_CORES: OnceLock<usize> = OnceLock::new();
    *N_CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// A checked view of a frame's pixels.
#[derive(Clone, Copy)]
pub(super) struct Frame<'a> {
    // Invariant: `pixels.len() == row_bytes * n_rows`, `row_bytes` a multiple of 4.
    pub(super) pixels: &'a [u8],
    pub(super) row_bytes: usize,
    n_rows: usize,
}

impl<'a> Frame<'a> {
    pub(super) fn new(pixels: &'a [u8], width: u32, height: u32) -> Result<Frame<'a>, X11Error> {
        let row_pixels = usize::try_from(width).map_err(|_| X11Error::Capture("width".into()))?;
        let n_rows = usize::try_from(height).map_err(|_| X11Error::Capture("height".into()))?;
        let row_bytes = row_pixels
            .checked_mul(4)
            .ok_or_else(|| X11Error::Capture(format!("width {width} is too large")))?;
        let n_bytes = row_bytes
            .checked_mul(n_rows)
            .ok_or_else(|| X11Error::Capture(format!("{width}x{height} is too large")))?;
        if width == 0 || height == 0 {
            return Err(X11Error::Capture(format!(
                "cannot encode an empty {width}x{height} frame"
            )));
        }
        let pixels = pixels.get(..n_bytes).ok_or_else(|| {
            X11Error::Capture(format!(
                "frame has {} bytes, {width}x{height} needs {n_bytes}",
                pixels.len()
            ))
        })?;
        Ok(Frame {
            pixels,
            row_bytes,
            n_rows,
        })
    }

    /// The bands: `BAND_ROWS` rows each, the last one the rest.
    pub(super) fn bands(&self) -> Vec<Range<usize>> {
        rows_in_bands(self.n_rows)
    }

    /// The bytes of rows `rows`.
    pub(super) fn rows(&self, rows: Range<usize>) -> &'a [u8] {
        self.pixels
            .get(rows.start * self.row_bytes..rows.end * self.row_bytes)
            .unwrap_or(&[])
    }

    fn row(&self, row_idx: usize) -> &'a [u8] {
        let start = row_idx * self.row_bytes;
        self.pixels
            .get(start..start + self.row_bytes)
            .unwrap_or(&[])
    }

    /// Deflates rows `rows` (Up-filtered against the row above, zeros above the first row).
    pub(super) fn encode_band(&self, rows: Range<usize>, last: bool) -> Segment {
        let n_rows = rows.len();
        // About a tenth of the filtered size: enough for UI frames without regrowing.
        let capacity = n_rows * (self.row_bytes / 4 * 3 + 1) / 10;
        let mut encoder = BandEncoder::new(capacity, last);
        let zero_row;
        let mut previous = if rows.start == 0 {
            zero_row = vec![0u8; self.row_bytes];
            zero_row.as_slice()
        } else {
            self.row(rows.start - 1)
        };
        for row_idx in rows {
            let current = self.row(row_idx);
            encode_row(&mut encoder, current, previous);
            previous = current;
        }
        encoder.finish(last)
    }
}

/// Feeds one Up-filtered row: its filter byte, then R, G, B differences to the row above.
/// Equal blocks of 64 pixels (compared with `memcmp`) and equal pixel pairs are read as zeros
/// without converting anything. (A whole-row comparison first costs more than it saves: on a
/// changed row it rescans the prefix that the block comparisons scan again.)
#[inline(always)]
fn encode_row(encoder: &mut BandEncoder, current: &[u8], previous: &[u8]) {
    encoder.bytes(&[UP_FILTER]);
    let mut current_blocks = current.chunks_exact(BLOCK_BYTES);
    let mut previous_blocks = previous.chunks_exact(BLOCK_BYTES);
    for (current_block, previous_block) in (&mut current_blocks).zip(&mut previous_blocks) {
        if current_block == previous_block {
            encoder.zeros((BLOCK_BYTES / 4 * 3) as u64);
        } else {
            encode_pairs(encoder, current_block, previous_block);
        }
    }
    encode_pairs(
        encoder,
        current_blocks.remainder(),
        previous_blocks.remainder(),
    );
}

/// Bytes of the blocks compared at once.
const BLOCK_BYTES: usize = 256;
/// The high bit of every byte.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Feeds pixels two at a time (a last odd pixel alone): the bytewise difference of the BGRX
/// words, reordered to R, G, B.
#[inline(always)]
fn encode_pairs(encoder: &mut BandEncoder, current: &[u8], previous: &[u8]) {
    let mut current_pairs = current.chunks_exact(8);
    let mut previous_pairs = previous.chunks_exact(8);
    for (current_pair, previous_pair) in (&mut current_pairs).zip(&mut previous_pairs) {
        let current_word = word(current_pair);
        let previous_word = word(previous_pair);
        if current_word == previous_word {
            encoder.zeros(6);
            continue;
        }
        // Bytewise wrapping subtraction, no borrow across bytes.
        let diff = ((current_word | HIGH_BITS) - (previous_word & !HIGH_BITS))
            ^ ((current_word ^ !previous_word) & HIGH_BITS);
        // B0 G0 R0 X0 B1 G1 R1 X1 (lowest byte first) to R0 G0 B0 R1 G1 B1.
        let filtered = ((diff >> 16) & 0xff)
            | (diff & 0xff00)
            | ((diff & 0xff) << 16)
            | (((diff >> 48) & 0xff) << 24)
            | (((diff >> 40) & 0xff) << 32)
            | (((diff >> 32) & 0xff) << 40);
        encoder.six(filtered);
    }
    let (current_tail, previous_tail) = (current_pairs.remainder(), previous_pairs.remainder());
    let mut filtered = [0u8; 3];
    if current_tail.len() == 4 && previous_tail.len() == 4 {
        filtered[0] = current_tail[2].wrapping_sub(previous_tail[2]);
        filtered[1] = current_tail[1].wrapping_sub(previous_tail[1]);
        filtered[2] = current_tail[0].wrapping_sub(previous_tail[0]);
        encoder.bytes(&filtered);
    }
}

/// The little-endian word of an 8-byte chunk.
#[inline(always)]
fn word(chunk: &[u8]) -> u64 {
    match *chunk {
        [b0, b1, b2, b3, b4, b5, b6, b7] => u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
