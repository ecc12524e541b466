//! The PNG around the encoder's segments, written band by band: the signature and IHDR, one
//! IDAT chunk per band (the zlib header in the first, the Adler-32 trailer in the last), IEND,
//! and, when asked, the SHA-256 of the bytes written so far. The encoder's calling thread feeds
//! it the bands in order between its own bands (`parallel.rs`), so the framing, the copy into
//! the PNG and the hash overlap the deflate of the later bands instead of following it.
//!
//! Invariants: the bands arrive in index order, each exactly once, so the chunks, the combined
//! Adler-32 and the hash never depend on which thread encoded what; every IDAT chunk is at most
//! PNG's 2^31 - 1 bytes, else [`PngWriter::finish`] refuses the frame; the hash covers every byte
//! of the PNG it returns.

use sha2::{Digest, Sha256};

use super::deflate::{Segment, adler_combine};
use crate::error::X11Error;

/// The PNG signature.
const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
/// The zlib header: deflate with a 32 KiB window, "fastest" level, no dictionary.
const ZLIB_HEADER: [u8; 2] = [0x78, 0x01];
/// PNG's largest chunk length.
const MAX_CHUNK: usize = 0x7fff_ffff;

/// An encoded PNG and, when asked for, its SHA-256.
pub(crate) struct Png {
    pub(crate) bytes: Vec<u8>,
    pub(crate) sha256: Option<[u8; 32]>,
}

/// A PNG being written band by band.
pub(super) struct PngWriter {
    png: Vec<u8>,
    hasher: Option<Sha256>,
    // Bytes of `png` already hashed.
    n_hashed: usize,
    // The Adler-32 of the bands written so far.
    adler: u32,
    n_bands: usize,
    n_written: usize,
    // A band whose chunk would exceed `MAX_CHUNK`: its size.
    too_large: Option<usize>,
}

impl PngWriter {
    /// Starts the PNG of a `width` x `height` frame of `n_bands` bands (at least one), hashing
    /// it when `hash` is set.
    pub(super) fn new(width: u32, height: u32, n_bands: usize, hash: bool) -> PngWriter {
        // A guess at the size that covers UI frames (an eighth of the filtered bytes) without
        // regrowing; pages beyond what is written are never touched.
        let filtered = u64::from(height) * (u64::from(width) * 3 + 1);
        let capacity = usize::try_from(filtered / 8)
            .unwrap_or(0)
            .saturating_add(4096);
        let mut writer = PngWriter {
            png: Vec::with_capacity(capacity),
            hasher: hash.then(Sha256::new),
            n_hashed: 0,
            adler: 1,
            n_bands,
            n_written: 0,
            too_large: None,
        };
        writer.png.extend_from_slice(&SIGNATURE);
        let mut header = [0u8; 13];
        header[..4].copy_from_slice(&width.to_be_bytes());
        header[4..8].copy_from_slice(&height.to_be_bytes());
        // Bit depth 8, color type 2 (RGB), deflate, adaptive filtering, no interlace.
        header[8..].copy_from_slice(&[8, 2, 0, 0, 0]);
        writer.chunk(b"IHDR", &[&header]);
        writer
    }

    /// Writes the next band's chunk (bands come in index order).
    pub(super) fn band(&mut self, segment: &Segment) {
        let first = self.n_written == 0;
        self.n_written += 1;
        let last = self.n_written == self.n_bands;
        // The Adler-32 of nothing is 1; combining with it leaves any checksum unchanged.
        self.adler = adler_combine(self.adler, segment.adler, segment.n_filtered);
        let trailer = self.adler.to_be_bytes();
        let header: &[u8] = if first { &ZLIB_HEADER } else { &[] };
        let trailer: &[u8] = if last { &trailer } else { &[] };
        let len = header.len() + segment.bytes.len() + trailer.len();
        if len > MAX_CHUNK {
            self.too_large = Some(len);
            return;
        }
        self.chunk(b"IDAT", &[header, &segment.bytes, trailer]);
    }

    /// How many bands were written.
    pub(super) fn n_written(&self) -> usize {
        self.n_written
    }

    /// Ends the PNG: IEND, and the hash of the whole.
    pub(super) fn finish(mut self) -> Result<Png, X11Error> {
        if let Some(len) = self.too_large {
            return Err(X11Error::Capture(format!(
                "a png chunk of {len} bytes is too large"
            )));
        }
        if self.n_written != self.n_bands {
            return Err(X11Error::Capture(format!(
                "{} of {} png bands written",
                self.n_written, self.n_bands
            )));
        }
        self.chunk(b"IEND", &[]);
        Ok(Png {
            bytes: self.png,
            sha256: self.hasher.map(|hasher| hasher.finalize().into()),
        })
    }

    /// Appends one chunk whose data is `parts` laid end to end (at most `MAX_CHUNK` bytes, checked
    /// by the caller) and hashes it.
    fn chunk(&mut self, kind: &[u8; 4], parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|part| part.len()).sum();
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        self.png.extend_from_slice(&len.to_be_bytes());
        let crc_start = self.png.len();
        self.png.extend_from_slice(kind);
        for part in parts {
            self.png.extend_from_slice(part);
        }
        let crc = crc32fast::hash(self.png.get(crc_start..).unwrap_or_default());
        self.png.extend_from_slice(&crc.to_be_bytes());
        if let Some(hasher) = &mut self.hasher {
            hasher.update(self.png.get(self.n_hashed..).unwrap_or_default());
        }
        self.n_hashed = self.png.len();
    }
}
