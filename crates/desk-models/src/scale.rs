//! Coordinate spaces and screenshot downscaling.
//!
//! The model sees screenshots in *image pixels*; the broker takes *screen pixels*. The two get
//! different types, and [`ImageScale`] is the one place that converts between them. Invariant:
//! every coordinate a model sends is mapped to screen pixels exactly once, rounding to nearest and
//! clamping nothing, so an out-of-range point stays out of range for the harness to reject.

use desk_contract::DisplaySize;

use crate::config::ModelError;

/// A point in the (possibly downscaled) image the model sees. Models may send fractions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImagePoint {
    /// Column in image pixels.
    pub x: f64,
    /// Row in image pixels.
    pub y: f64,
}

/// A point in screen pixels, not yet validated against the display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScreenXy {
    /// Column in screen pixels.
    pub x: i64,
    /// Row in screen pixels.
    pub y: i64,
}

/// The ratio between the display and the image shown to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageScale {
    // Invariant: all four are at least 1, and image <= display on both axes.
    display: DisplaySize,
    image: DisplaySize,
}

impl ImageScale {
    /// Fits `display` into `max_width` x `max_height`, keeping the aspect ratio; never upscales.
    pub fn fit(display: DisplaySize, max_width: u32, max_height: u32) -> ImageScale {
        let display = DisplaySize {
            width: display.width.max(1),
            height: display.height.max(1),
        };
        let max_width = max_width.max(1);
        let max_height = max_height.max(1);
        if display.width <= max_width && display.height <= max_height {
            return ImageScale {
                display,
                image: display,
            };
        }
        let factor = (f64::from(max_width) / f64::from(display.width))
            .min(f64::from(max_height) / f64::from(display.height));
        let scaled = |length: u32, cap: u32| -> u32 {
            let value = (f64::from(length) * factor).round();
            // The value lies in 0..=length, so it fits in u32.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let value = value as u32;
            value.clamp(1, cap)
        };
        ImageScale {
            display,
            image: DisplaySize {
                width: scaled(display.width, max_width),
                height: scaled(display.height, max_height),
            },
        }
    }

    /// The display size in screen pixels.
    pub fn display(&self) -> DisplaySize {
        self.display
    }

    /// The size of the image the model sees.
    pub fn image(&self) -> DisplaySize {
        self.image
    }

    /// Whether screenshots are shown at full resolution.
    pub fn is_identity(&self) -> bool {
        self.display == self.image
    }

    /// Maps an image point to the screen: `round(x * display / image)`, no clamping.
    pub fn to_screen(&self, point: ImagePoint) -> ScreenXy {
        ScreenXy {
            x: map_axis(point.x, self.display.width, self.image.width),
            y: map_axis(point.y, self.display.height, self.image.height),
        }
    }

    /// Maps a screen point into the image (for notes shown to the model), rounding to nearest.
    pub fn to_image(&self, point: ScreenXy) -> ScreenXy {
        // Screen values are pixel coordinates (far below 2^53), so the f64 conversion is exact.
        #[allow(clippy::cast_precision_loss)]
        let (x, y) = (point.x as f64, point.y as f64);
        ScreenXy {
            x: map_axis(x, self.image.width, self.display.width),
            y: map_axis(y, self.image.height, self.display.height),
        }
    }

    /// Maps a length along x (e.g. scroll pixels) from image to screen pixels.
    pub fn length_to_screen_x(&self, length: f64) -> f64 {
        length * f64::from(self.display.width) / f64::from(self.image.width)
    }

    /// Maps a length along y from image to screen pixels.
    pub fn length_to_screen_y(&self, length: f64) -> f64 {
        length * f64::from(self.display.height) / f64::from(self.image.height)
    }
}

fn map_axis(value: f64, to: u32, from: u32) -> i64 {
    let mapped = (value * f64::from(to) / f64::from(from)).round();
    // Saturating float-to-int cast: absurd inputs stay absurd (and out of range) rather than wrap.
    #[allow(clippy::cast_possible_truncation)]
    let mapped = mapped as i64;
    mapped
}

/// Decodes `png`, resizes it to `target` with an area (box) filter, and re-encodes it as RGB PNG.
///
/// When the PNG already has the target size its bytes are returned unchanged.
pub fn resize_png(png: &[u8], target: DisplaySize) -> Result<Vec<u8>, ModelError> {
    let (width, height, rgb) = decode_rgb(png)?;
    if width == target.width && height == target.height {
        return Ok(png.to_vec());
    }
    if target.width == 0 || target.height == 0 || width == 0 || height == 0 {
        return Err(ModelError::Image(format!(
            "cannot resize {width}x{height} to {target}"
        )));
    }
    let horizontal = resize_axis(&rgb, width, height, target.width, Axis::X);
    let both = resize_axis(&horizontal, target.width, height, target.height, Axis::Y);
    encode_rgb(&both, target)
}

/// Crops the screen rectangle `[x0, x1) × [y0, y1)` out of a full-resolution `png` and fits the
/// crop into `max` (aspect kept, never enlarged), as an RGB PNG. The rectangle must lie inside the
/// image and be non-empty; nothing is clamped.
pub fn crop_png(
    png: &[u8],
    (x0, y0, x1, y1): (u32, u32, u32, u32),
    max: DisplaySize,
) -> Result<Vec<u8>, ModelError> {
    let (width, height, rgb) = decode_rgb(png)?;
    if x0 >= x1 || y0 >= y1 || x1 > width || y1 > height {
        return Err(ModelError::Image(format!(
            "region [{x0}, {y0}, {x1}, {y1}] is not a non-empty rectangle inside {width}x{height}"
        )));
    }
    let (crop_width, crop_height) = (x1 - x0, y1 - y0);
    let mut crop = Vec::with_capacity(crop_width as usize * crop_height as usize * 3);
    for row in y0..y1 {
        let start = (row as usize * width as usize + x0 as usize) * 3;
        crop.extend_from_slice(&rgb[start..start + crop_width as usize * 3]);
    }
    let size = DisplaySize {
        width: crop_width,
        height: crop_height,
    };
    let fit = ImageScale::fit(size, max.width, max.height).image();
    if fit == size {
        return encode_rgb(&crop, size);
    }
    let horizontal = resize_axis(&crop, crop_width, crop_height, fit.width, Axis::X);
    let both = resize_axis(&horizontal, fit.width, crop_height, fit.height, Axis::Y);
    encode_rgb(&both, fit)
}

/// Reads a PNG's dimensions without decoding its pixels.
pub fn png_size(png: &[u8]) -> Result<DisplaySize, ModelError> {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let reader = decoder
        .read_info()
        .map_err(|error| ModelError::Image(format!("failed to read png header: {error}")))?;
    let info = reader.info();
    Ok(DisplaySize {
        width: info.width,
        height: info.height,
    })
}

fn decode_rgb(png: &[u8]) -> Result<(u32, u32, Vec<u8>), ModelError> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .map_err(|error| ModelError::Image(format!("failed to read png header: {error}")))?;
    let buffer_size = reader
        .output_buffer_size()
        .ok_or_else(|| ModelError::Image("png too large to decode".to_string()))?;
    let mut buffer = vec![0; buffer_size];
    let frame = reader
        .next_frame(&mut buffer)
        .map_err(|error| ModelError::Image(format!("failed to decode png: {error}")))?;
    let (width, height) = (frame.width, frame.height);
    let n_channels = match frame.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => {
            return Err(ModelError::Image(
                "indexed png was not expanded".to_string(),
            ));
        }
    };
    let pixels = &buffer[..frame.buffer_size()];
    let mut rgb = Vec::with_capacity(pixels.len() / n_channels * 3);
    for pixel in pixels.chunks_exact(n_channels) {
        match n_channels {
            1 | 2 => rgb.extend_from_slice(&[pixel[0], pixel[0], pixel[0]]),
            _ => rgb.extend_from_slice(&pixel[..3]),
        }
    }
    Ok((width, height, rgb))
}

fn encode_rgb(rgb: &[u8], size: DisplaySize) -> Result<Vec<u8>, ModelError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, size.width, size.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder
        .write_header()
        .map_err(|error| ModelError::Image(format!("failed to write png header: {error}")))?;
    writer
        .write_image_data(rgb)
        .map_err(|error| ModelError::Image(format!("failed to encode png: {error}")))?;
    writer
        .finish()
        .map_err(|error| ModelError::Image(format!("failed to finish png: {error}")))?;
    Ok(out)
}

#[derive(Clone, Copy)]
enum Axis {
    X,
    Y,
}

/// Area-averages one axis: each output sample covers `from / to` input samples, with fractional
/// weights at the edges.
fn resize_axis(rgb: &[u8], width: u32, height: u32, to: u32, axis: Axis) -> Vec<u8> {
    let (from, n_lines) = match axis {
        Axis::X => (width, height),
        Axis::Y => (height, width),
    };
    let (out_width, out_height) = match axis {
        Axis::X => (to, height),
        Axis::Y => (width, to),
    };
    let ratio = f64::from(from) / f64::from(to);
    let weights: Vec<Vec<(usize, f64)>> = (0..to)
        .map(|out_idx| {
            let start = f64::from(out_idx) * ratio;
            let end = start + ratio;
            let mut taps = Vec::new();
            let mut in_idx = start.floor();
            while in_idx < end && in_idx < f64::from(from) {
                let overlap = (in_idx + 1.0).min(end) - in_idx.max(start);
                if overlap > 0.0 {
                    // in_idx is a non-negative integer below `from`.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    taps.push((in_idx as usize, overlap / ratio));
                }
                in_idx += 1.0;
            }
            taps
        })
        .collect();
    let width = width as usize;
    let out_width_usize = out_width as usize;
    let mut out = vec![0u8; out_width_usize * out_height as usize * 3];
    for line_idx in 0..n_lines as usize {
        for (out_idx, taps) in weights.iter().enumerate() {
            let mut sum = [0f64; 3];
            for &(in_idx, weight) in taps {
                let offset = match axis {
                    Axis::X => (line_idx * width + in_idx) * 3,
                    Axis::Y => (in_idx * width + line_idx) * 3,
                };
                for (channel, total) in sum.iter_mut().enumerate() {
                    *total += f64::from(rgb[offset + channel]) * weight;
                }
            }
            let out_offset = match axis {
                Axis::X => (line_idx * out_width_usize + out_idx) * 3,
                Axis::Y => (out_idx * out_width_usize + line_idx) * 3,
            };
            for (channel, total) in sum.iter().enumerate() {
                // Weights sum to 1, so the value is in 0..=255.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let value = total.round().clamp(0.0, 255.0) as u8;
                out[out_offset + channel] = value;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
