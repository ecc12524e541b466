//! The incremental encode: the previous frame's pixels and its bands' deflate segments, so that
//! a band whose input did not change (its rows and the row above them, compared byte for byte,
//! never by hash) reuses its segment and only changed bands are deflated again.
//!
//! Invariant: the PNG is byte-identical to [`encode_png`]'s for the same pixels, because
//! the band layout is the same and a band's segment depends only on the bytes compared.

use super::deflate::Segment;
use super::encode::{Frame, band_rows, default_threads, encode_png_hashed, n_bands};
use super::framing::{Png, PngWriter};
use super::parallel::staged_map;
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
    /// Encodes like [`encode_png`](super::encode::encode_png), deflating only the bands whose
    /// input changed since the last call, and remembers this frame; with the PNG's SHA-256
    /// (hashed during the encode) when `hash` is set.
    pub(crate) fn encode_hashed(
        &mut self,
        pixels: &[u8],
        width: u32,
        height: u32,
        hash: bool,
    ) -> Result<Png, X11Error> {
        let frame = Frame::new(pixels, width, height)?;
        self.encode_staged(width, height, (|| Ok(frame), 0), || Ok(frame), hash)
    }

    /// [`EncodeCache::encode_hashed`] for a frame that arrives in two parts (see
    /// [`encode_png_staged`](super::encode::encode_png_staged)): `early` waits for the first
    /// part and says how many bands lie inside it, `rest` waits for the whole frame. Each band is compared
    /// and, when changed, deflated in one pass; the PNG is hashed when `hash` is set.
    pub(super) fn encode_staged<'f>(
        &mut self,
        width: u32,
        height: u32,
        early: (impl FnOnce() -> Result<Frame<'f>, X11Error>, usize),
        rest: impl FnOnce() -> Result<Frame<'f>, X11Error>,
        hash: bool,
    ) -> Result<Png, X11Error> {
        let (first, n_early) = early;
        let n_bands = n_bands(height);
        let bands = band_rows(height);
        let n_threads = default_threads(width, height);
        let cached = (self.width == width && self.height == height)
            .then(|| Frame::new(&self.pixels, width, height).ok())
            .flatten()
            .filter(|_| self.segments.len() == n_bands);
        let was_cached = cached.is_some();
        let cached_segments = &self.segments;
        let mut writer = PngWriter::new(width, height, n_bands, hash);
        // Written in band order as the bands are done; a reused band's segment is the cached
        // one (there is a cached frame whenever a band is reused).
        let mut write = |fresh: &Option<Segment>| match fresh {
            Some(segment) => writer.band(segment),
            None => {
                if let Some(segment) = cached_segments.get(writer.n_written()) {
                    writer.band(segment);
                }
            }
        };
        // A band's segment, or `None` when its input (its rows and the row above) did not change.
        let band = |frame: &Frame<'_>, band_idx: usize| {
            let rows = bands.get(band_idx)?.clone();
            let input = rows.start.saturating_sub(1)..rows.end;
            if cached
                .as_ref()
                .is_some_and(|cached| frame.rows(input.clone()) == cached.rows(input))
            {
                return None;
            }
            Some(frame.encode_band(rows, band_idx + 1 == n_bands))
        };
        let staged = staged_map(
            n_bands,
            n_threads,
            n_early,
            (first, rest),
            band,
            band,
            &mut write,
        );
        let (fresh, frame) = match staged {
            Ok(done) => done,
            Err(error) => {
                self.clear();
                return Err(error);
            }
        };
        self.n_reused = fresh.iter().filter(|segment| segment.is_none()).count();
        if !was_cached {
            self.width = width;
            self.height = height;
            self.pixels.clear();
            self.pixels.extend_from_slice(frame.pixels);
            self.segments.clear();
        }
        let row_bytes = frame.row_bytes;
        for (band_idx, segment) in fresh.into_iter().enumerate() {
            let Some(segment) = segment else { continue };
            let rows = bands.get(band_idx).cloned().unwrap_or_default();
            let bytes = rows.start * row_bytes..rows.end * row_bytes;
            if !was_cached {
                self.segments.push(segment);
                continue;
            }
            match (self.pixels.get_mut(bytes), self.segments.get_mut(band_idx)) {
                (Some(target), Some(slot)) => {
                    target.copy_from_slice(frame.rows(rows));
                    *slot = segment;
                }
                // Unreachable (the cached frame has this frame's size); never assemble from a
                // partial cache.
                _ => {
                    self.clear();
                    return encode_png_hashed(frame.pixels, width, height, hash);
                }
            }
        }
        if self.segments.len() != n_bands {
            // Unreachable (a fresh frame's bands are all encoded); never keep a partial list.
            self.clear();
            return encode_png_hashed(frame.pixels, width, height, hash);
        }
        writer.finish()
    }

    /// How many bands the last encode reused.
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
