//! The capture in two parts: the X server copies the screen into the shared segment in two
//! `ShmGetImage` requests (the first rows, then the rest), and the encoder starts on the first
//! part's bands while the server still copies the rest, so the copy and the encode overlap.
//!
//! Invariants: both requests go out between `GrabServer` and `UngrabServer` in one batch, so no
//! other client's request runs between them and the two parts are one consistent screen, as a
//! single request's; the first part is read only after its reply and the whole frame only after
//! the second reply (`ShmMapping::head`); the second reply is always awaited before returning.
//! The encoder's other threads start before the first reply is awaited, so their start-up
//! (a thread, and on a VM an idle virtual CPU woken) overlaps the server's copy.

use std::cell::Cell;
use std::time::Instant;

use x11rb::connection::Connection;
use x11rb::cookie::Cookie;
use x11rb::protocol::shm::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, Window};
use x11rb::rust_connection::RustConnection;

use super::cache::EncodeCache;
use super::encode::{Frame, early_part, encode_png_staged};
use super::framing::Png;
use crate::error::X11Error;
use crate::shm::ShmMapping;

/// What the server copies from and into.
pub(super) struct Target<'a> {
    pub(super) root: Window,
    pub(super) width: u16,
    pub(super) height: u16,
    pub(super) segment: shm::Seg,
    pub(super) mapping: &'a ShmMapping,
}

/// Captures and encodes a frame in two parts, through `cache` when given; `None` when the frame
/// is too small to split (the caller captures it in one request). Returns the PNG (hashed when
/// `hash` is set) and the capture time (when the second reply arrived).
pub(super) fn capture_png(
    conn: &RustConnection,
    target: &Target<'_>,
    cache: Option<&mut EncodeCache>,
    hash: bool,
) -> Option<Result<(Png, Instant), X11Error>> {
    let (early_rows, n_early) = early_part(u32::from(target.height))?;
    Some(capture_in_parts(
        conn,
        target,
        (early_rows, n_early),
        cache,
        hash,
    ))
}

fn capture_in_parts(
    conn: &RustConnection,
    target: &Target<'_>,
    (early_rows, n_early): (u32, usize),
    cache: Option<&mut EncodeCache>,
    hash: bool,
) -> Result<(Png, Instant), X11Error> {
    let (width, height) = (u32::from(target.width), u32::from(target.height));
    let row_bytes = usize::from(target.width) * 4;
    let early_len = usize::try_from(early_rows).unwrap_or(usize::MAX) * row_bytes;
    let n_bytes = usize::from(target.height) * row_bytes;
    let (first, second) = request_parts(conn, target, early_rows, early_len)?;
    let arrived = Cell::new(Instant::now());
    // Waited for by the encoder on this thread, after it started the others; the second reply
    // is awaited whatever the first one was.
    let early = || {
        wait(first, early_len)?;
        let pixels = target
            .mapping
            .head(early_len)
            .ok_or_else(|| X11Error::Shm("shm mapping too small".to_string()))?;
        Frame::new(pixels, width, early_rows)
    };
    let rest = || {
        wait(second, n_bytes - early_len)?;
        arrived.set(Instant::now());
        let pixels = target
            .mapping
            .head(n_bytes)
            .ok_or_else(|| X11Error::Shm("shm mapping too small".to_string()))?;
        Frame::new(pixels, width, height)
    };
    let png = match cache {
        Some(cache) => cache.encode_staged(width, height, (early, n_early), rest, hash),
        None => encode_png_staged(width, height, (early, n_early), rest, hash),
    }?;
    Ok((png, arrived.get()))
}

type Part<'c> = Cookie<'c, RustConnection, shm::GetImageReply>;

/// Sends grab, both copies and ungrab in one batch.
fn request_parts<'c>(
    conn: &'c RustConnection,
    target: &Target<'_>,
    early_rows: u32,
    early_len: usize,
) -> Result<(Part<'c>, Part<'c>), X11Error> {
    let early_rows16 = u16::try_from(early_rows)
        .map_err(|_| X11Error::Capture(format!("{early_rows} rows do not fit a request")))?;
    let offset = u32::try_from(early_len)
        .map_err(|_| X11Error::Capture(format!("offset {early_len} does not fit a request")))?;
    let y = i16::try_from(early_rows)
        .map_err(|_| X11Error::Capture(format!("row {early_rows} does not fit a request")))?;
    conn.grab_server()
        .map_err(X11Error::conn("grab server"))?
        .ignore_error();
    let get = |y: i16, rows: u16, offset: u32| {
        conn.shm_get_image(
            target.root,
            0,
            y,
            target.width,
            rows,
            u32::MAX,
            ImageFormat::Z_PIXMAP.into(),
            target.segment,
            offset,
        )
        .map_err(X11Error::conn("shm get image"))
    };
    let first = get(0, early_rows16, 0);
    let second = get(y, target.height - early_rows16, offset);
    // Ungrabbed whatever happened to the requests.
    let ungrab = conn
        .ungrab_server()
        .map_err(X11Error::conn("ungrab server"));
    conn.flush().map_err(X11Error::conn("flush"))?;
    let (first, second) = (first?, second?);
    ungrab?.ignore_error();
    Ok((first, second))
}

/// Waits for one part's reply and checks that it filled `len` bytes.
fn wait(part: Part<'_>, len: usize) -> Result<(), X11Error> {
    let reply = part.reply().map_err(X11Error::reply("shm get image"))?;
    if usize::try_from(reply.size).unwrap_or(0) < len {
        return Err(X11Error::Capture(format!(
            "shm image has {} bytes, need {len}",
            reply.size
        )));
    }
    Ok(())
}
