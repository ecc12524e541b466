//! The incremental encode: the previous frame's pixels and its bands' deflate segments, so that
//! a band whose input did not change (its rows and the row above them, compared byte for byte,
//! never by hash) reuses its segment and only changed bands are deflated again.
//!
//! Invariant: the PNG is byte-identical to [`encode_png`]'s for the same pixels, because
//! the band layout is the same and a band's segment depends only on the bytes compared.

use super::deflate::Segment;
use super::encode::{Frame, assemble, default_threads, encode_png, parallel_map};
use crate::error::X11Error;

/// The previous frame and its encoded bands.
#[derive(Default)]
pub(crate) struct EncodeCache {
    width: u32,
    height: u32,
    // Invariant: `segments` is empty, or `pixels` is a `width` x `height` BGRX frame and
    // `segments[band_idx]` is the segment of that band of `pixels`.
    pixels: Vec<u8>,
    segments: Vec<Segment>,
    n_reused: usize,
}

impl EncodeCache {
    /// Encodes like [`encode_png`], deflating only the bands whose input changed since
    /// the last call, and remembers this frame.
    pub(crate) fn encode(
        &mut self,
        pixels: &[u8],
        width: u32,
        height: u32,
    ) -> Result<Vec<u8>, X11Error> {
        let frame = Frame::new(pixels, width, height)?;
        let bands = frame.bands();
        let n_bands = bands.len();
        let n_threads = default_threads(width, height);
        let cached = (self.width == width && self.height == height)
            .then(|| Frame::new(&self.pixels, width, height).ok())
            .flatten()
            .filter(|_| self.segments.len() == n_bands);
        let changed: Vec<bool> = match &cached {
            Some(cached) => parallel_map(n_bands, n_threads, |band_idx| {
                let rows = bands[band_idx].clone();
                let input = rows.start.saturating_sub(1)..rows.end;
                frame.rows(input.clone()) != cached.rows(input)
            })?,
            None => vec![true; n_bands],
        };
        let dirty: Vec<usize> = (0..n_bands).filter(|band_idx| changed[*band_idx]).collect();
        let fresh = parallel_map(dirty.len(), n_threads, |dirty_idx| {
            let band_idx = dirty[dirty_idx];
            frame.encode_band(bands[band_idx].clone(), band_idx + 1 == n_bands)
        });
        let fresh = match fresh {
            Ok(fresh) => fresh,
            Err(error) => {
                self.segments.clear();
                return Err(error);
            }
        };
        self.n_reused = n_bands - dirty.len();
        if cached.is_some() {
            let row_bytes = frame.row_bytes;
            for (band_idx, segment) in dirty.into_iter().zip(fresh) {
                let rows = bands[band_idx].clone();
                let bytes = rows.start * row_bytes..rows.end * row_bytes;
                match (self.pixels.get_mut(bytes), self.segments.get_mut(band_idx)) {
                    (Some(target), Some(slot)) => {
                        target.copy_from_slice(frame.rows(rows));
                        *slot = segment;
                    }
                    // Unreachable (the cached frame has this frame's size); never assemble
                    // from a partial cache.
                    _ => {
                        self.clear();
                        return encode_png(pixels, width, height);
                    }
                }
            }
        } else {
            self.width = width;
            self.height = height;
            self.pixels.clear();
            self.pixels.extend_from_slice(frame.pixels);
            self.segments = fresh;
        }
        assemble(width, height, self.segments.iter())
    }

    /// How many bands the last [`EncodeCache::encode`] reused.
    pub(crate) fn n_reused(&self) -> usize {
        self.n_reused
    }

    /// Forgets the previous frame.
    pub(crate) fn clear(&mut self) {
        self.segments.clear();
        self.pixels = Vec::new();
        self.n_reused = 0;
    }
}
