//! The probe's unruly behaviours, for handoff and settle tests: a maximum size that keeps a
//! maximized window from covering the work area, a window that repaints itself forever, one
//! that repaints once on a timer after each press, and one that computes after each press and
//! repaints when done.

use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{AtomEnum, ChangeWindowAttributesAux, ConnectionExt as _, PropMode};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

/// The probe's background color as (r, g, b).
pub const PROBE_RGB: (u8, u8, u8) = (0x33, 0x66, 0xcc);

/// The repaint color alternating with [`PROBE_RGB`].
const FLICKER_PIXEL: u32 = 0x00cc_6633;

/// The probe's background as an X pixel.
pub(super) fn probe_pixel() -> u32 {
    let (r, g, b) = PROBE_RGB;
    (u32::from(r) << 16) | (u32::from(g) << 8) | u32::from(b)
}

/// Sets `WM_NORMAL_HINTS` to a maximum size of `max_size` (width, height), when given.
pub(super) fn limit_size(
    conn: &RustConnection,
    window: u32,
    max_size: Option<(u16, u16)>,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some((width, height)) = max_size else {
        return Ok(());
    };
    // WM_SIZE_HINTS: flags (PMaxSize), 4 pad, min w/h, max w/h, then unused fields.
    let mut hints = [0u32; 18];
    hints[0] = 1 << 5;
    hints[7] = u32::from(width);
    hints[8] = u32::from(height);
    conn.change_property32(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_NORMAL_HINTS,
        AtomEnum::WM_SIZE_HINTS,
        &hints,
    )?;
    Ok(())
}

/// The next event; with `repaint_ms`, the window alternates its color every `repaint_ms`
/// while it waits (`flicker` holds the last repaint and its color).
pub(super) fn next_event(
    conn: &RustConnection,
    window: u32,
    repaint_ms: Option<u64>,
    flicker: &mut (Instant, bool),
) -> Result<Event, Box<dyn std::error::Error>> {
    let Some(interval) = repaint_ms else {
        return Ok(conn.wait_for_event()?);
    };
    loop {
        if let Some(event) = conn.poll_for_event()? {
            return Ok(event);
        }
        if flicker.0.elapsed() >= Duration::from_millis(interval) {
            *flicker = (Instant::now(), !flicker.1);
            let pixel = if flicker.1 {
                FLICKER_PIXEL
            } else {
                probe_pixel()
            };
            paint(conn, window, pixel)?;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The next event, painting the window in the flicker color when `paint_at` is due; a button
/// press sets `paint_at` to `delay_ms` later. Between events the thread blocks in `ppoll` on
/// the connection with the time left as its timeout, as an event loop with a timer does.
pub(super) fn next_event_or_paint(
    conn: &RustConnection,
    window: u32,
    delay_ms: u64,
    paint_at: &mut Option<Instant>,
) -> Result<Event, Box<dyn std::error::Error>> {
    use std::os::fd::AsFd as _;
    loop {
        if let Some(event) = conn.poll_for_event()? {
            if matches!(event, Event::ButtonPress(_)) {
                *paint_at = Some(Instant::now() + Duration::from_millis(delay_ms));
            }
            return Ok(event);
        }
        let timeout = match *paint_at {
            Some(at) if at <= Instant::now() => {
                *paint_at = None;
                paint(conn, window, FLICKER_PIXEL)?;
                continue;
            }
            Some(at) => Some(rustix::time::Timespec::try_from(at - Instant::now())?),
            None => None,
        };
        let fd = conn.stream().as_fd();
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
}

/// Computes on the CPU for `ms` (the thread stays runnable: no call, no sleep), then paints
/// the window in the flicker color once, as a long operation that paints when it ends.
pub(super) fn compute_then_paint(
    conn: &RustConnection,
    window: u32,
    ms: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let until = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
    paint(conn, window, FLICKER_PIXEL)
}

/// Paints the window in `pixel`.
fn paint(conn: &RustConnection, window: u32, pixel: u32) -> Result<(), Box<dyn std::error::Error>> {
    conn.change_window_attributes(
        window,
        &ChangeWindowAttributesAux::new().background_pixel(pixel),
    )?;
    conn.clear_area(false, window, 0, 0, 0, 0)?;
    conn.flush()?;
    Ok(())
}
