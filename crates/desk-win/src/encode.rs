//! BGRX frames to PNG (RGB, 8 bits, fast compression with the Up filter, one row at a time),
//! and the protocol's [`Frame`] around them.

use desk_contract::desktop::Frame;

use crate::error::WinError;
use crate::platform::Bgrx;

/// Encodes a BGRX frame as an RGB PNG.
pub fn encode_png(frame: &Bgrx) -> Result<Vec<u8>, WinError> {
    let row_pixels =
        usize::try_from(frame.width).map_err(|_| WinError::Encode("width does not fit".into()))?;
    let n_rows = usize::try_from(frame.height)
        .map_err(|_| WinError::Encode("height does not fit".into()))?;
    if row_pixels == 0 || n_rows == 0 || frame.data.len() != row_pixels * n_rows * 4 {
        return Err(WinError::Encode(format!(
            "frame has {} bytes, {}x{} needs {}",
            frame.data.len(),
            frame.width,
            frame.height,
            row_pixels * n_rows * 4
        )));
    }
    let encode_error = |error: png::EncodingError| WinError::Encode(error.to_string());
    let mut out = Vec::with_capacity(frame.data.len() / 16);
    let mut encoder = png::Encoder::new(&mut out, frame.width, frame.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::Filter::Up);
    let mut writer = encoder.write_header().map_err(encode_error)?;
    let mut stream = writer.stream_writer().map_err(encode_error)?;
    let mut row = vec![0u8; row_pixels * 3];
    for source in frame.data.chunks_exact(row_pixels * 4) {
        for (dst, src) in row.chunks_exact_mut(3).zip(source.chunks_exact(4)) {
            dst[0] = src[2];
            dst[1] = src[1];
            dst[2] = src[0];
        }
        std::io::Write::write_all(&mut stream, &row)
            .map_err(|error| WinError::Encode(format!("png stream write failed: {error}")))?;
    }
    stream.finish().map_err(encode_error)?;
    writer.finish().map_err(encode_error)?;
    Ok(out)
}

/// The protocol frame of `frame`, captured at `captured_at_ms`.
pub fn to_frame(frame: &Bgrx, captured_at_ms: u64, app_maximized: bool) -> Result<Frame, WinError> {
    let png = encode_png(frame)?;
    Ok(Frame {
        sha256: desk_contract::sha256_hex(&png),
        png,
        width: frame.width,
        height: frame.height,
        captured_at_ms,
        app_maximized,
    })
}

/// How many pixels differ between two frames of the same size (all of them when the sizes
/// differ).
pub fn changed_pixels(before: &Bgrx, after: &Bgrx) -> u64 {
    if before.width != after.width || before.height != after.height {
        return u64::from(after.width) * u64::from(after.height);
    }
    before
        .data
        .chunks_exact(4)
        .zip(after.data.chunks_exact(4))
        .filter(|(old, new)| old[..3] != new[..3])
        .count() as u64
}
