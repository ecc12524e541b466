//! Zoom (`POST /v1/sessions/{id}/zoom`): a fresh capture of a screen region, enlarged by a whole
//! number so small text and icons are legible, handed out as a screenshot of its own.
//!
//! Rules (the control-session spec's ZOOM rules, on X11):
//! - The region is given in the image pixels of a current screenshot (`screenshot_unknown`,
//!   `screenshot_stale`), and both its corners must lie in that image's content rectangle
//!   (`point_outside_image`); it is mapped to the screen once, snapped to whole screen pixels.
//!   Nothing is clamped, and a refused zoom captures nothing.
//! - The scale is the largest whole number up to [`MAX_SCALE`] that keeps the long edge within
//!   [`MAX_EDGE`] pixels; a region whose long edge is already beyond it is `invalid_params`
//!   (the full screenshot shows it).
//! - The zoom is marked (`zoom: {source_screenshot_id, scale}`), gets its own `screenshot_id`
//!   whose geometry maps its pixels onto the region, and coexists with the full screenshots of
//!   the same generation. It reads no accessibility tree.
//! - Its PNG is signed evidence like any screenshot.

use std::io::Cursor;

use desk_contract::ErrorCode;
use desk_contract::api::Screenshot;
use desk_contract::control::{PixelRect, ZoomInfo, ZoomRequest};

use super::refusal;
use crate::broker::{Broker, Inner};
use crate::door::Need;
use crate::error::BrokerError;
use crate::ids::SessionId;

/// The largest enlargement: output pixels per screen pixel.
pub(crate) const MAX_SCALE: u32 = 8;

/// The long edge a zoom may reach (below the vision models' downscale limits).
pub(crate) const MAX_EDGE: u32 = 1568;

/// The whole-number scale for a region of `width` x `height` screen pixels.
fn scale_for(width: u32, height: u32) -> Result<u32, BrokerError> {
    let long = width.max(height).max(1);
    match (MAX_EDGE / long).min(MAX_SCALE) {
        0 => Err(refusal(
            ErrorCode::InvalidParams,
            format!(
                "a zoom region of {width}x{height} screen pixels is already beyond the \
                 {MAX_EDGE}-pixel long edge a zoom may have: use the screenshot"
            ),
        )),
        scale => Ok(scale),
    }
}

/// Crops `region` (screen pixels) out of the full-screen `png` and enlarges it `scale` times by
/// pixel replication; an RGB PNG.
fn crop_and_enlarge(png: &[u8], region: PixelRect, scale: u32) -> Result<Vec<u8>, BrokerError> {
    let image = |what: &str, error: &dyn std::fmt::Display| {
        BrokerError::Internal(format!("zoom: failed to {what} the capture: {error}"))
    };
    let mut decoder = png::Decoder::new(Cursor::new(png));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .map_err(|error| image("decode", &error))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| image("size", &"too large"))?;
    let mut pixels = vec![0; size];
    let info = reader
        .next_frame(&mut pixels)
        .map_err(|error| image("decode", &error))?;
    let channels = info.color_type.samples();
    if channels < 3
        || u64::from(region.x) + u64::from(region.width) > u64::from(info.width)
        || u64::from(region.y) + u64::from(region.height) > u64::from(info.height)
    {
        return Err(image("crop", &"the region is not inside the capture"));
    }
    let (width, height) = (region.width * scale, region.height * scale);
    let mut out = Vec::with_capacity(width as usize * height as usize * 3);
    for row in 0..region.height {
        let start = (region.y + row) as usize * info.line_size + region.x as usize * channels;
        let mut line = Vec::with_capacity(width as usize * 3);
        for column in 0..region.width as usize {
            let at = start + column * channels;
            let rgb = pixels
                .get(at..at + 3)
                .ok_or_else(|| image("crop", &"short row"))?;
            for _ in 0..scale {
                line.extend_from_slice(rgb);
            }
        }
        for _ in 0..scale {
            out.extend_from_slice(&line);
        }
    }
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder
        .write_header()
        .map_err(|error| image("encode", &error))?;
    writer
        .write_image_data(&out)
        .map_err(|error| image("encode", &error))?;
    writer.finish().map_err(|error| image("encode", &error))?;
    Ok(bytes)
}

impl Inner {
    fn zoom(
        &self,
        session_id: &SessionId,
        request: &ZoomRequest,
    ) -> Result<Screenshot, BrokerError> {
        if request.width == 0 || request.height == 0 {
            return Err(refusal(
                ErrorCode::InvalidParams,
                format!(
                    "a zoom region needs a width and a height of at least 1, got {}x{}",
                    request.width, request.height
                ),
            ));
        }
        self.enter(session_id, "zoom", Need::Observe, |mut door| {
            let dir = door.session().dir();
            let scope = door.scope_now()?;
            let source = self
                .controls
                .geometry(session_id, &dir, &request.screenshot_id, scope)?;
            let last_x = i64::from(request.x) + i64::from(request.width) - 1;
            let last_y = i64::from(request.y) + i64::from(request.height) - 1;
            let (x0, y0) = source.to_screen("zoom", i64::from(request.x), i64::from(request.y))?;
            let (x1, y1) = source.to_screen("zoom", last_x, last_y)?;
            let screen = |value: i64| {
                u32::try_from(value)
                    .map_err(|_| BrokerError::Internal(format!("zoom: screen coordinate {value}")))
            };
            let region = PixelRect {
                x: screen(x0)?,
                y: screen(y0)?,
                width: screen(x1 - x0 + 1)?,
                height: screen(y1 - y0 + 1)?,
            };
            let scale = scale_for(region.width, region.height)?;
            let frame = door
                .desktop()?
                .capture()
                .map_err(BrokerError::desktop("capture for a zoom"))?;
            let png = crop_and_enlarge(&frame.png, region, scale)?;
            let sha256 = desk_contract::digest::sha256_hex(&png);
            let sequence = crate::ledger::records::screenshot(self, &mut door, &png, &sha256)?;
            let mut shot = crate::broker::screenshot(&frame, sequence);
            shot.sha256 = sha256;
            shot.png = Some(png.into());
            shot.width = region.width * scale;
            shot.height = region.height * scale;
            shot.zoom = Some(ZoomInfo {
                source_screenshot_id: request.screenshot_id.clone(),
                scale,
            });
            self.controls
                .identify_region(session_id, &dir, &mut shot, region)?;
            tracing::info!(%session_id, ?region, scale, "zoom");
            Ok(shot)
        })
    }
}

impl Broker {
    /// `POST /v1/sessions/{id}/zoom`.
    pub async fn zoom(
        &self,
        session_id: &SessionId,
        request: ZoomRequest,
    ) -> Result<Screenshot, BrokerError> {
        let id = session_id.clone();
        self.run(Some(id.clone()), move |inner| inner.zoom(&id, &request))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_is_the_largest_whole_number_within_the_long_edge() {
        assert_eq!(scale_for(50, 50).unwrap(), MAX_SCALE);
        assert_eq!(scale_for(400, 100).unwrap(), 3);
        assert_eq!(scale_for(1568, 10).unwrap(), 1);
        assert!(scale_for(1569, 10).is_err());
    }

    #[test]
    fn crop_and_enlarge_replicates_each_pixel() {
        // A 3x2 RGB image with distinct pixels.
        let pixels: Vec<u8> = (0..18).collect();
        let mut png_bytes = Vec::new();
        let mut encoder = png::Encoder::new(&mut png_bytes, 3, 2);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().unwrap();
        writer.write_image_data(&pixels).unwrap();
        writer.finish().unwrap();
        let region = PixelRect {
            x: 1,
            y: 1,
            width: 2,
            height: 1,
        };
        let zoomed = crop_and_enlarge(&png_bytes, region, 2).unwrap();
        let mut reader = png::Decoder::new(Cursor::new(zoomed)).read_info().unwrap();
        let mut out = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut out).unwrap();
        assert_eq!((info.width, info.height), (4, 2));
        let (a, b) = ([12, 13, 14], [15, 16, 17]);
        let row: Vec<u8> = [a, a, b, b].concat();
        assert_eq!(out, [row.clone(), row].concat());
        let outside = PixelRect { x: 2, ..region };
        assert!(crop_and_enlarge(&png_bytes, outside, 2).is_err());
    }
}
