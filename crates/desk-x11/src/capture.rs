//! Screen capture: raw BGRX frames through MIT-SHM (or core `GetImage` when SHM is missing or
//! fails), PNG encoding and hashing; the capture+encode benchmark is `capture/measure.rs`.
//!
//! Invariant: a [`RawFrame`] always holds `width * height` pixels of 4 bytes (B, G, R, pad) with
//! no row padding; every conversion and comparison relies on it. Over 400 lines: the frame, its
//! two capture paths and the encoder share that invariant and read best in one place.

use std::time::{SystemTime, UNIX_EPOCH};

pub use desk_contract::sha256_hex;
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::shm::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, ImageOrder, Window};
use x11rb::rust_connection::RustConnection;

use crate::error::X11Error;
use crate::shm::ShmMapping;

mod cache;
mod deflate;
mod encode;
mod framing;
pub(crate) mod measure;
mod parallel;
mod staged;

/// A raw screen image: 4 bytes per pixel (B, G, R, pad), rows packed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    // Invariant: `pixels.len() == width * height * 4`.
    width: u32,
    height: u32,
    pixels: Vec<u8>,
    captured_at_ms: u64,
}

impl RawFrame {
    /// Builds a frame from packed BGRX pixels; `None` when the length does not match.
    pub fn from_bgrx(width: u32, height: u32, pixels: Vec<u8>) -> Option<RawFrame> {
        let expected = usize::try_from(u64::from(width) * u64::from(height) * 4).ok()?;
        (pixels.len() == expected).then_some(RawFrame {
            width,
            height,
            pixels,
            captured_at_ms: epoch_ms(),
        })
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }
    /// Milliseconds since the Unix epoch at capture.
    pub fn captured_at_ms(&self) -> u64 {
        self.captured_at_ms
    }
    /// The (r, g, b) value of one pixel, or `None` outside the frame.
    pub fn rgb_at(&self, x: u32, y: u32) -> Option<(u8, u8, u8)> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let offset = (usize::try_from(y).ok()? * usize::try_from(self.width).ok()?
            + usize::try_from(x).ok()?)
            * 4;
        let pixel = self.pixels.get(offset..offset + 4)?;
        Some((pixel[2], pixel[1], pixel[0]))
    }

    /// The BGRX pixels, row after row.
    pub(crate) fn bgrx(&self) -> &[u8] {
        &self.pixels
    }

    /// Counts pixels whose color differs from `other`'s; a size mismatch counts every pixel.
    pub fn changed_pixels(&self, other: &RawFrame) -> u64 {
        if self.width != other.width || self.height != other.height {
            return u64::from(self.width) * u64::from(self.height);
        }
        if self.pixels == other.pixels {
            return 0;
        }
        let n_changed = self
            .pixels
            .chunks_exact(4)
            .zip(other.pixels.chunks_exact(4))
            .filter(|(a, b)| a[..3] != b[..3])
            .count();
        u64::try_from(n_changed).unwrap_or(u64::MAX)
    }

    /// Whether any pixel differs from `other`.
    pub fn differs_from(&self, other: &RawFrame) -> bool {
        self.changed_pixels(other) > 0
    }

    /// Converts to packed RGB bytes.
    pub fn to_rgb(&self) -> Vec<u8> {
        let mut rgb = vec![0u8; self.pixels.len() / 4 * 3];
        for (dst, src) in rgb.chunks_exact_mut(3).zip(self.pixels.chunks_exact(4)) {
            dst[0] = src[2];
            dst[1] = src[1];
            dst[2] = src[0];
        }
        rgb
    }

    /// Encodes as an RGB PNG (see [`encode_bgrx_png`]).
    pub fn encode_png(&self) -> Result<Vec<u8>, X11Error> {
        encode_bgrx_png(&self.pixels, self.width, self.height)
    }
}

/// Encodes BGRX pixels (`width * height * 4` bytes) as a lossless RGB PNG: the Up filter fused
/// with the conversion, runs of unchanged pixels skipped, and from a megapixel up the rows
/// deflated in parallel bands (see `capture/encode.rs`).
pub(crate) fn encode_bgrx_png(pixels: &[u8], width: u32, height: u32) -> Result<Vec<u8>, X11Error> {
    encode::encode_png(pixels, width, height)
}

/// A captured frame's PNG with its SHA-256, hashed while it was encoded: the one shape every
/// frame the worker hands out is built from ([`Capturer::capture_png`], [`Capturer::encode_png`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedPng {
    /// The PNG's bytes.
    pub png: Vec<u8>,
    /// Their SHA-256 in lowercase hex (what [`sha256_hex`] gives).
    pub sha256: String,
    /// Milliseconds since the Unix epoch at capture.
    pub captured_at_ms: u64,
}

impl CapturedPng {
    fn new(png: framing::Png, captured_at_ms: u64) -> CapturedPng {
        let sha256 = match &png.sha256 {
            Some(sha256) => desk_contract::digest::digest_hex(sha256),
            // Not reached: every caller asks the encode for the hash; the digest is right anyway.
            None => sha256_hex(&png.bytes),
        };
        CapturedPng {
            png: png.bytes,
            sha256,
            captured_at_ms,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

struct ShmState {
    segment: shm::Seg,
    mapping: ShmMapping,
}

/// Captures the root window of one screen.
pub struct Capturer {
    root: Window,
    width: u16,
    height: u16,
    // Invariant: `Some` only while the segment is attached on the server.
    shm: Option<ShmState>,
    // Frame buffers handed back with `recycle`: reusing them avoids faulting in 8 MB of fresh
    // pages per 1080p frame, which cost more than the copy itself.
    spare: Vec<Vec<u8>>,
    // The last frame encoded by `capture_png` or `encode_png` and its bands' segments (a copy
    // of the frame: 8 MB at 1080p).
    encode_cache: cache::EncodeCache,
}

/// Most spare frame buffers kept.
const MAX_SPARE_BUFFERS: usize = 3;

impl Capturer {
    /// Prepares capture of `root` (`width` x `height`), attaching an SHM segment when possible.
    pub fn new(
        conn: &RustConnection,
        root: Window,
        width: u16,
        height: u16,
    ) -> Result<Capturer, X11Error> {
        check_pixel_format(conn)?;
        let mut capturer = Capturer {
            root,
            width,
            height,
            shm: None,
            spare: Vec::new(),
            encode_cache: cache::EncodeCache::default(),
        };
        match attach_shm(conn, width, height) {
            Ok(state) => capturer.shm = Some(state),
            Err(error) => tracing::warn!(%error, "mit-shm unavailable, using core GetImage"),
        }
        Ok(capturer)
    }

    /// `mit-shm` or `get-image`.
    pub fn path_name(&self) -> &'static str {
        if self.shm.is_some() {
            "mit-shm"
        } else {
            "get-image"
        }
    }

    /// Captures one raw frame. An SHM failure switches to core `GetImage` for good.
    pub fn capture_raw(&mut self, conn: &RustConnection) -> Result<RawFrame, X11Error> {
        if let Some(state) = self.shm.take() {
            match self.capture_shm(conn, &state) {
                Ok(frame) => {
                    self.shm = Some(state);
                    return Ok(frame);
                }
                Err(error) => {
                    tracing::warn!(%error, "mit-shm capture failed, falling back to GetImage");
                    // Best effort: the segment may already be gone with the error.
                    let _ = conn.shm_detach(state.segment);
                }
            }
        }
        self.capture_core(conn)
    }

    /// Asks the server to fill the shared segment; returns the capture time.
    fn shm_get(&self, conn: &RustConnection, state: &ShmState) -> Result<u64, X11Error> {
        let reply = conn
            .shm_get_image(
                self.root,
                0,
                0,
                self.width,
                self.height,
                u32::MAX,
                ImageFormat::Z_PIXMAP.into(),
                state.segment,
                0,
            )
            .map_err(X11Error::conn("shm get image"))?
            .reply()
            .map_err(X11Error::reply("shm get image"))?;
        let len = self.n_bytes();
        if usize::try_from(reply.size).unwrap_or(0) < len {
            return Err(X11Error::Capture(format!(
                "shm image has {} bytes, need {len}",
                reply.size
            )));
        }
        Ok(epoch_ms())
    }

    fn capture_shm(
        &mut self,
        conn: &RustConnection,
        state: &ShmState,
    ) -> Result<RawFrame, X11Error> {
        let captured_at_ms = self.shm_get(conn, state)?;
        let len = self.n_bytes();
        let source = state.mapping.bytes().get(..len);
        let source = source.ok_or_else(|| X11Error::Shm("shm mapping too small".to_string()))?;
        let mut pixels = self.spare.pop().unwrap_or_default();
        pixels.clear();
        pixels.extend_from_slice(source);
        Ok(self.frame(pixels, captured_at_ms))
    }

    /// Hands a frame's buffer back for reuse by the next capture.
    pub fn recycle(&mut self, frame: RawFrame) {
        if self.spare.len() < MAX_SPARE_BUFFERS && frame.pixels.len() == self.n_bytes() {
            self.spare.push(frame.pixels);
        }
    }

    /// Captures and PNG-encodes one frame; with MIT-SHM the encoder reads the shared segment
    /// directly (no copy of the frame), and from two bands up the server fills it in two parts
    /// (one grab) while the encode starts on the first (`capture/staged.rs`). Bands unchanged
    /// since the last frame this capturer encoded reuse their deflate segments (same PNG bytes
    /// as a cold encode). Returns the PNG, its SHA-256 (hashed band by band during the encode)
    /// and the capture time.
    pub fn capture_png(&mut self, conn: &RustConnection) -> Result<CapturedPng, X11Error> {
        self.capture_png_with(conn, true)
    }

    /// PNG-encodes `frame` like [`Capturer::capture_png`], reusing the unchanged bands of the
    /// last frame this capturer encoded. Returns the PNG, its SHA-256 (hashed band by band
    /// during the encode, like the capture's) and the frame's capture time.
    pub fn encode_png(&mut self, frame: &RawFrame) -> Result<CapturedPng, X11Error> {
        let png =
            self.encode_cache
                .encode_hashed(&frame.pixels, frame.width, frame.height, true)?;
        Ok(CapturedPng::new(png, frame.captured_at_ms))
    }

    fn capture_png_with(
        &mut self,
        conn: &RustConnection,
        incremental: bool,
    ) -> Result<CapturedPng, X11Error> {
        let (width, height) = (u32::from(self.width), u32::from(self.height));
        if let Some(state) = &self.shm {
            // From two bands up the server copies the frame in two parts and the encode starts
            // on the first while the second is copied (`capture/staged.rs`).
            let target = staged::Target {
                root: self.root,
                width: self.width,
                height: self.height,
                segment: state.segment,
                mapping: &state.mapping,
            };
            let cache = incremental.then_some(&mut self.encode_cache);
            match staged::capture_png(conn, &target, cache, true) {
                Some(Ok((png, arrived))) => {
                    let age_ms = u64::try_from(arrived.elapsed().as_millis()).unwrap_or(0);
                    return Ok(CapturedPng::new(png, epoch_ms().saturating_sub(age_ms)));
                }
                Some(Err(error)) => {
                    tracing::warn!(%error, "mit-shm capture failed, falling back to GetImage");
                    if let Some(state) = self.shm.take() {
                        let _ = conn.shm_detach(state.segment);
                    }
                }
                None => {}
            }
        }
        if let Some(state) = &self.shm {
            match self.shm_get(conn, state) {
                Ok(captured_at_ms) => {
                    let len = self.n_bytes();
                    let pixels = state
                        .mapping
                        .bytes()
                        .get(..len)
                        .ok_or_else(|| X11Error::Shm("shm mapping too small".to_string()))?;
                    let png = if incremental {
                        self.encode_cache
                            .encode_hashed(pixels, width, height, true)?
                    } else {
                        encode::encode_png_hashed(pixels, width, height, true)?
                    };
                    return Ok(CapturedPng::new(png, captured_at_ms));
                }
                Err(error) => {
                    tracing::warn!(%error, "mit-shm capture failed, falling back to GetImage");
                    if let Some(state) = self.shm.take() {
                        let _ = conn.shm_detach(state.segment);
                    }
                }
            }
        }
        let raw = self.capture_core(conn)?;
        let png = if incremental {
            self.encode_cache
                .encode_hashed(&raw.pixels, raw.width, raw.height, true)?
        } else {
            encode::encode_png_hashed(&raw.pixels, raw.width, raw.height, true)?
        };
        Ok(CapturedPng::new(png, raw.captured_at_ms()))
    }

    fn capture_core(&self, conn: &RustConnection) -> Result<RawFrame, X11Error> {
        let reply = conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.root,
                0,
                0,
                self.width,
                self.height,
                u32::MAX,
            )
            .map_err(X11Error::conn("get image"))?
            .reply()
            .map_err(X11Error::reply("get image"))?;
        let captured_at_ms = epoch_ms();
        let len = self.n_bytes();
        let mut pixels = reply.data;
        if pixels.len() < len {
            return Err(X11Error::Capture(format!(
                "image has {} bytes, need {len}",
                pixels.len()
            )));
        }
        pixels.truncate(len);
        Ok(self.frame(pixels, captured_at_ms))
    }

    fn n_bytes(&self) -> usize {
        usize::from(self.width) * usize::from(self.height) * 4
    }

    fn frame(&self, pixels: Vec<u8>, captured_at_ms: u64) -> RawFrame {
        RawFrame {
            width: u32::from(self.width),
            height: u32::from(self.height),
            pixels,
            captured_at_ms,
        }
    }

    /// Detaches the SHM segment, if any.
    pub fn close(&mut self, conn: &RustConnection) {
        if let Some(state) = self.shm.take() {
            let _ = conn.shm_detach(state.segment);
        }
    }
}

fn check_pixel_format(conn: &RustConnection) -> Result<(), X11Error> {
    let setup = conn.setup();
    if setup.image_byte_order != ImageOrder::LSB_FIRST {
        return Err(X11Error::Capture(
            "only lsb-first image byte order is supported".to_string(),
        ));
    }
    let has_32bpp = setup
        .pixmap_formats
        .iter()
        .any(|format| format.depth == 24 && format.bits_per_pixel == 32);
    if !has_32bpp {
        return Err(X11Error::Capture(
            "only 24-bit depth at 32 bits per pixel is supported".into(),
        ));
    }
    Ok(())
}

fn attach_shm(conn: &RustConnection, width: u16, height: u16) -> Result<ShmState, X11Error> {
    if conn
        .extension_information(shm::X11_EXTENSION_NAME)
        .map_err(X11Error::conn("query shm"))?
        .is_none()
    {
        return Err(X11Error::MissingExtension {
            name: "MIT-SHM",
            major: 1,
            minor: 2,
        });
    }
    let version = conn
        .shm_query_version()
        .map_err(X11Error::conn("query shm"))?
        .reply()
        .map_err(X11Error::reply("query shm"))?;
    if (version.major_version, version.minor_version) < (1, 2) {
        return Err(X11Error::MissingExtension {
            name: "MIT-SHM",
            major: 1,
            minor: 2,
        });
    }
    let len = usize::from(width) * usize::from(height) * 4;
    let mapping = ShmMapping::create(len).map_err(X11Error::Shm)?;
    let segment = conn
        .generate_id()
        .map_err(X11Error::reply_or_id("shm attach"))?;
    let fd = mapping.dup_fd().map_err(X11Error::Shm)?;
    conn.shm_attach_fd(segment, fd, false)
        .map_err(X11Error::conn("shm attach"))?
        .check()
        .map_err(X11Error::reply("shm attach"))?;
    Ok(ShmState { segment, mapping })
}

#[cfg(test)]
mod tests;
