//! Validation mode (`docs/settle.md`): after a stable settle, wait, capture again, compare the
//! later frame with the settled one and say what kind of change it is ([`ValidationKind`]),
//! from the changed box's geometry, the pointer and the app's windows that appeared meanwhile.

use std::time::{Duration, Instant};

use desk_contract::desktop::{AppWindowInfo, WindowRole};
use desk_contract::geometry::ScreenPoint;
use desk_contract::settle::{SettleValidation, ValidationKind};
use x11rb::rust_connection::RustConnection;

use crate::capture::{Capturer, RawFrame};
use crate::error::X11Error;

/// A box this close to the pointer (pixels, any side) and no larger than
/// [`TOOLTIP_MAX`] is a tooltip.
const POINTER_REACH: u32 = 96;
/// The largest tooltip-like box, width and height.
const TOOLTIP_MAX: (u32, u32) = (640, 160);
/// A status bar message: a band at most an eighth of the screen high (LibreCAD's two-row status
/// bar and its message line are 122 pixels at 1080) ending this close to the screen's bottom.
const STATUS_BAND_GAP: u32 = 48;

/// Waits `validate_ms` after a stable settle, captures again and compares the later frame with
/// the settled one; [`SettleValidation::kind`] is left to [`classify`], which needs the
/// windows opened meanwhile.
pub(crate) fn validate(
    conn: &RustConnection,
    capturer: &mut Capturer,
    settled: &RawFrame,
    validate_ms: u32,
) -> Result<SettleValidation, X11Error> {
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(u64::from(validate_ms)));
    let later = capturer.capture_raw(conn)?;
    let validation = SettleValidation {
        after_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        changed_pixels: later.changed_pixels(settled),
        changed_box: changed_box(settled, &later),
        kind: None,
    };
    capturer.recycle(later);
    Ok(validation)
}

/// The kind of a change of `changed_pixels` within `changed_box` on a `screen` (width,
/// height), with the pointer at `pointer` and `opened` the app's windows that appeared (`None`
/// when they could not be read). In order: nothing, a caret, a new window holding the change (a
/// popup: tooltip; a dialog or other top-level: dialog), a status bar band, an eighth of the
/// screen or more (large redraw), anything else. Only when the windows are unknown are a small box near the
/// pointer taken for a tooltip and a centred dialog-sized box for a dialog (both are windows of
/// their own: with the windows known, a box like that without a new window is the app
/// repainting, e.g. FreeCAD highlighting a selected solid in the middle of its 3D view).
pub(crate) fn classify(
    changed_pixels: u64,
    changed_box: Option<[u32; 4]>,
    screen: (u32, u32),
    pointer: Option<ScreenPoint>,
    opened: Option<&[AppWindowInfo]>,
) -> ValidationKind {
    let Some([x, y, width, height]) = changed_box else {
        return if changed_pixels == 0 {
            ValidationKind::Same
        } else {
            ValidationKind::Other
        };
    };
    if width <= 3 && height <= 40 {
        return ValidationKind::Caret;
    }
    let holding = |roles: &[WindowRole]| {
        opened.unwrap_or_default().iter().any(|window| {
            window.on_screen
                && roles.contains(&window.role)
                && overlaps(window, [x, y, width, height])
        })
    };
    if holding(&[WindowRole::Popup, WindowRole::Menu]) {
        return ValidationKind::Tooltip;
    }
    if holding(&[WindowRole::Dialog, WindowRole::Other]) {
        return ValidationKind::Dialog;
    }
    let (screen_width, screen_height) = screen;
    let bottom = u64::from(y) + u64::from(height);
    if height * 8 <= screen_height
        && bottom + u64::from(STATUS_BAND_GAP) >= u64::from(screen_height)
    {
        return ValidationKind::StatusBar;
    }
    let area = u64::from(width) * u64::from(height);
    if opened.is_none()
        && width <= TOOLTIP_MAX.0
        && height <= TOOLTIP_MAX.1
        && pointer.is_some_and(|at| distance([x, y, width, height], at) <= POINTER_REACH)
    {
        return ValidationKind::Tooltip;
    }
    let centre_x = u64::from(x) * 2 + u64::from(width);
    let centre_y = u64::from(y) * 2 + u64::from(height);
    let centred = centre_x.abs_diff(u64::from(screen_width)) * 10 <= u64::from(screen_width) * 2
        && centre_y.abs_diff(u64::from(screen_height)) * 10 <= u64::from(screen_height) * 2;
    let dialog_sized = width * 8 >= screen_width
        && height * 8 >= screen_height
        && width * 10 <= screen_width * 7
        && height * 10 <= screen_height * 7;
    if opened.is_none() && centred && dialog_sized {
        return ValidationKind::Dialog;
    }
    if area * 8 >= u64::from(screen_width) * u64::from(screen_height) {
        return ValidationKind::LargeRedraw;
    }
    ValidationKind::Other
}

/// Whether a window's bounds overlap the box.
fn overlaps(window: &AppWindowInfo, [x, y, width, height]: [u32; 4]) -> bool {
    let bounds = window.bounds;
    let (left, top) = (i64::from(bounds.x), i64::from(bounds.y));
    let (right, bottom) = (
        left + i64::from(bounds.width),
        top + i64::from(bounds.height),
    );
    let (box_left, box_top) = (i64::from(x), i64::from(y));
    let (box_right, box_bottom) = (box_left + i64::from(width), box_top + i64::from(height));
    left < box_right && box_left < right && top < box_bottom && box_top < bottom
}

/// Pixels from a point to the nearest edge of a box (0 inside it), the larger of the two axes.
fn distance([x, y, width, height]: [u32; 4], at: ScreenPoint) -> u32 {
    let axis = |point: u32, start: u32, length: u32| {
        let end = start.saturating_add(length);
        if point < start {
            start - point
        } else if point >= end {
            point - end + 1
        } else {
            0
        }
    };
    axis(at.x, x, width).max(axis(at.y, y, height))
}

/// The smallest `[x, y, width, height]` holding every pixel that differs (the whole frame when
/// the sizes differ); `None` when none does.
pub(crate) fn changed_box(a: &RawFrame, b: &RawFrame) -> Option<[u32; 4]> {
    if a.width() != b.width() || a.height() != b.height() {
        return Some([0, 0, a.width().max(b.width()), a.height().max(b.height())]);
    }
    let width = usize::try_from(a.width()).ok()?;
    let mut bounds: Option<[usize; 4]> = None;
    let rows = a
        .bgrx()
        .chunks_exact(width * 4)
        .zip(b.bgrx().chunks_exact(width * 4));
    for (y, (row_a, row_b)) in rows.enumerate() {
        if row_a == row_b {
            continue;
        }
        let differs = |x: &usize| row_a[x * 4..x * 4 + 3] != row_b[x * 4..x * 4 + 3];
        let (Some(first), Some(last)) = ((0..width).find(differs), (0..width).rev().find(differs))
        else {
            continue;
        };
        bounds = Some(match bounds {
            None => [first, y, last, y],
            Some([x0, y0, x1, _]) => [x0.min(first), y0, x1.max(last), y],
        });
    }
    let [x0, y0, x1, y1] = bounds?;
    let span = |from: usize, to: usize| u32::try_from(to - from + 1).ok();
    Some([
        u32::try_from(x0).ok()?,
        u32::try_from(y0).ok()?,
        span(x0, x1)?,
        span(y0, y1)?,
    ])
}

#[cfg(test)]
mod tests {
    use desk_contract::desktop::WindowRect;

    use super::*;

    fn frame(width: u32, height: u32, marks: &[(u32, u32)]) -> RawFrame {
        let mut pixels = vec![0u8; usize::try_from(width * height * 4).unwrap_or(0)];
        for (x, y) in marks {
            let at = usize::try_from((y * width + x) * 4).unwrap_or(0);
            pixels[at + 1] = 0xff;
        }
        RawFrame::from_bgrx(width, height, pixels).unwrap_or_else(|| panic!("frame size"))
    }

    #[test]
    fn the_changed_box_holds_every_changed_pixel_and_nothing_more() {
        let before = frame(10, 8, &[]);
        assert_eq!(changed_box(&before, &frame(10, 8, &[])), None);
        let caret = frame(10, 8, &[(4, 1), (4, 2), (4, 3)]);
        assert_eq!(changed_box(&before, &caret), Some([4, 1, 1, 3]));
        let spread = frame(10, 8, &[(9, 0), (2, 7), (5, 4)]);
        assert_eq!(changed_box(&before, &spread), Some([2, 0, 8, 8]));
        assert_eq!(changed_box(&before, &frame(4, 4, &[])), Some([0, 0, 10, 8]));
        let validation = SettleValidation {
            after_ms: 1_000,
            changed_pixels: 3,
            changed_box: changed_box(&before, &caret),
            kind: None,
        };
        assert!(validation.same_but_caret());
    }

    const SCREEN: (u32, u32) = (1280, 1024);

    fn window(role: WindowRole, [x, y, width, height]: [i32; 4], on_screen: bool) -> AppWindowInfo {
        AppWindowInfo {
            window_id: 7,
            title: String::new(),
            role,
            bounds: WindowRect {
                x,
                y,
                width: width.unsigned_abs(),
                height: height.unsigned_abs(),
            },
            on_screen,
        }
    }

    fn kind(
        changed: Option<[u32; 4]>,
        pointer: Option<(u32, u32)>,
        opened: Option<&[AppWindowInfo]>,
    ) -> ValidationKind {
        let pixels = changed.map_or(0, |[_, _, width, height]| u64::from(width * height));
        let pointer = pointer.map(|(x, y)| ScreenPoint { x, y });
        classify(pixels, changed, SCREEN, pointer, opened)
    }

    #[test]
    fn changes_are_told_apart_by_geometry() {
        let none: Option<&[AppWindowInfo]> = Some(&[]);
        assert_eq!(kind(None, None, none), ValidationKind::Same);
        assert_eq!(
            kind(Some([400, 300, 2, 18]), None, none),
            ValidationKind::Caret
        );
        // A status bar message at the bottom, wherever the pointer is.
        let band = Some([2, 1000, 700, 20]);
        assert_eq!(
            kind(band, Some((10, 1010)), none),
            ValidationKind::StatusBar
        );
        // LibreCAD's status bar at 1920x1080 after its load message timed out.
        assert_eq!(
            classify(9_708, Some([6, 956, 1637, 122]), (1920, 1080), None, None),
            ValidationKind::StatusBar
        );
        // The same band high on the screen is not a status bar.
        assert_eq!(
            kind(Some([2, 500, 700, 20]), None, none),
            ValidationKind::Other
        );
        // With the windows unknown, a small box beside the pointer is taken for a tooltip, a
        // centred dialog-sized one (FreeCAD's late 605x603 box) for a dialog.
        let box_near = Some([520, 320, 180, 24]);
        assert_eq!(
            kind(box_near, Some((500, 300)), None),
            ValidationKind::Tooltip
        );
        assert_eq!(
            kind(box_near, Some((100, 900)), None),
            ValidationKind::Other
        );
        assert_eq!(kind(box_near, None, None), ValidationKind::Other);
        let centred = Some([337, 210, 605, 603]);
        assert_eq!(kind(centred, Some((40, 40)), None), ValidationKind::Dialog);
        // With the windows known and none new, they are the app repainting.
        assert_eq!(
            kind(box_near, Some((500, 300)), none),
            ValidationKind::Other
        );
        assert_eq!(
            kind(centred, Some((40, 40)), none),
            ValidationKind::LargeRedraw
        );
        // The same size in a corner is not a dialog, and is a large redraw; smaller, other.
        assert_eq!(
            kind(Some([0, 0, 605, 603]), None, None),
            ValidationKind::LargeRedraw
        );
        assert_eq!(
            kind(Some([0, 0, 300, 200]), None, None),
            ValidationKind::Other
        );
        // A change of other pixels without a box (frames of other sizes have one): other.
        assert_eq!(classify(5, None, SCREEN, None, None), ValidationKind::Other);
    }

    #[test]
    fn a_new_window_holding_the_change_names_it() {
        let tooltip = window(WindowRole::Popup, [900, 100, 200, 30], true);
        let dialog = window(WindowRole::Dialog, [0, 0, 300, 200], true);
        // A popup far from the pointer, over the change: a tooltip.
        let popup_box = Some([905, 105, 150, 20]);
        let opened = std::slice::from_ref(&tooltip);
        assert_eq!(
            kind(popup_box, Some((10, 10)), Some(opened)),
            ValidationKind::Tooltip
        );
        // A dialog in a corner, not centred: still a dialog.
        let opened = std::slice::from_ref(&dialog);
        let corner = Some([10, 10, 280, 180]);
        assert_eq!(kind(corner, None, Some(opened)), ValidationKind::Dialog);
        // A window elsewhere, or not on screen, does not name the change.
        let elsewhere = Some([10, 500, 280, 180]);
        assert_eq!(kind(elsewhere, None, Some(opened)), ValidationKind::Other);
        let hidden = window(WindowRole::Popup, [900, 100, 200, 30], false);
        let opened = std::slice::from_ref(&hidden);
        assert_eq!(kind(popup_box, None, Some(opened)), ValidationKind::Other);
    }
}
