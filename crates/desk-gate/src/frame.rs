//! Frames: a PNG read under the policy's bounds (size first, then the header's pixel count,
//! before any pixel is decoded), kept as luminance; the box that changed between two frames;
//! a region cut out, enlarged and written as the grayscale PNG the OCR engine reads.

use std::io::Cursor;

use serde::{Deserialize, Serialize};

use crate::error::GateError;
use crate::policy::GatePolicy;

/// A rectangle in frame pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Rect {
    fn right(self) -> u32 {
        self.x.saturating_add(self.width)
    }

    fn bottom(self) -> u32 {
        self.y.saturating_add(self.height)
    }

    /// The smallest rectangle holding both.
    pub fn union(self, other: Rect) -> Rect {
        let (x, y) = (self.x.min(other.x), self.y.min(other.y));
        Rect {
            x,
            y,
            width: self.right().max(other.right()) - x,
            height: self.bottom().max(other.bottom()) - y,
        }
    }

    /// `self` grown by `pad` on every side and clipped to `width` x `height`.
    pub(crate) fn padded_within(self, pad: u32, width: u32, height: u32) -> Rect {
        let x = self.x.saturating_sub(pad).min(width);
        let y = self.y.saturating_sub(pad).min(height);
        Rect {
            x,
            y,
            width: self.right().saturating_add(pad).min(width) - x,
            height: self.bottom().saturating_add(pad).min(height) - y,
        }
    }
}

/// A decoded frame as luminance, one byte a pixel.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) luma: Vec<u8>,
}

impl Frame {
    pub(crate) fn whole(&self) -> Rect {
        Rect {
            x: 0,
            y: 0,
            width: self.width,
            height: self.height,
        }
    }
}

/// Reads `png` under the policy's bounds: its size, then the pixels its header declares, both
/// checked before any pixel is decoded.
pub(crate) fn decode(png_bytes: &[u8], policy: &GatePolicy) -> Result<Frame, GateError> {
    let settings = policy.settings();
    let bytes = png_bytes.len() as u64;
    if bytes > settings.max_frame_bytes {
        return Err(GateError::FrameTooLarge {
            bytes,
            max: settings.max_frame_bytes,
        });
    }
    let frame_error = |error: &dyn std::fmt::Display| GateError::Frame(error.to_string());
    // The decoder's own allocation bound follows the pixel bound (4 samples of 16 bits).
    let limit = usize::try_from(settings.max_pixels.saturating_mul(8)).unwrap_or(usize::MAX);
    let mut decoder = png::Decoder::new_with_limits(
        Cursor::new(png_bytes),
        png::Limits {
            bytes: limit.max(1 << 16),
        },
    );
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|error| frame_error(&error))?;
    let (width, height) = {
        let info = reader.info();
        (info.width, info.height)
    };
    if u64::from(width) * u64::from(height) > settings.max_pixels {
        return Err(GateError::TooManyPixels {
            width,
            height,
            max: settings.max_pixels,
        });
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| frame_error(&"its decoded size overflows"))?;
    let mut pixels = vec![0; size];
    let info = reader
        .next_frame(&mut pixels)
        .map_err(|error| frame_error(&error))?;
    let channels = info.color_type.samples();
    let mut luma = Vec::with_capacity(width as usize * height as usize);
    for row in 0..height as usize {
        let line = pixels
            .get(row * info.line_size..row * info.line_size + width as usize * channels)
            .ok_or_else(|| frame_error(&"a row is short"))?;
        for pixel in line.chunks_exact(channels) {
            luma.push(match pixel {
                [gray] | [gray, _] => *gray,
                [red, green, blue, ..] => {
                    ((u32::from(*red) * 299 + u32::from(*green) * 587 + u32::from(*blue) * 114)
                        / 1000) as u8
                }
                [] => 0,
            });
        }
    }
    Ok(Frame {
        width,
        height,
        luma,
    })
}

/// The smallest rectangle holding every pixel that differs between two frames of the same
/// size; `None` when they are equal.
pub(crate) fn changed_box(before: &Frame, after: &Frame) -> Option<Rect> {
    if before.width != after.width || before.height != after.height {
        return Some(after.whole());
    }
    let width = after.width as usize;
    let (mut left, mut top, mut right, mut bottom) = (usize::MAX, usize::MAX, 0, 0);
    for (row, (old, new)) in before
        .luma
        .chunks_exact(width)
        .zip(after.luma.chunks_exact(width))
        .enumerate()
    {
        if old == new {
            continue;
        }
        let first = old.iter().zip(new).position(|(a, b)| a != b).unwrap_or(0);
        let last = old
            .iter()
            .zip(new)
            .rposition(|(a, b)| a != b)
            .unwrap_or(width - 1);
        left = left.min(first);
        right = right.max(last);
        top = top.min(row);
        bottom = row;
    }
    (top != usize::MAX).then(|| Rect {
        x: left as u32,
        y: top as u32,
        width: (right - left + 1) as u32,
        height: (bottom - top + 1) as u32,
    })
}

/// `region` of `frame` enlarged `scale` times (pixel replication), as a grayscale PNG.
pub(crate) fn region_png(frame: &Frame, region: Rect, scale: u32) -> Result<Vec<u8>, GateError> {
    let region = region.padded_within(0, frame.width, frame.height);
    let (width, height) = (region.width * scale, region.height * scale);
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width.max(1), height.max(1));
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fastest);
    let mut writer = encoder
        .write_header()
        .map_err(|error| GateError::Frame(error.to_string()))?;
    let mut data = Vec::with_capacity(width.max(1) as usize * height.max(1) as usize);
    if width == 0 || height == 0 {
        data.push(255);
    }
    for row in region.y..region.bottom() {
        let start = row as usize * frame.width as usize + region.x as usize;
        let source = frame
            .luma
            .get(start..start + region.width as usize)
            .ok_or_else(|| GateError::Frame("the region is outside the frame".to_string()))?;
        let mut line = Vec::with_capacity(width as usize);
        for value in source {
            line.extend(std::iter::repeat_n(*value, scale as usize));
        }
        for _ in 0..scale {
            data.extend_from_slice(&line);
        }
    }
    writer
        .write_image_data(&data)
        .map_err(|error| GateError::Frame(error.to_string()))?;
    writer
        .finish()
        .map_err(|error| GateError::Frame(error.to_string()))?;
    Ok(out)
}
