//! The capture path against scripted sources: DXGI when the duplication opens, GDI with the
//! reason when it does not (never retried), the last frame reused while nothing changes, a lost
//! duplication reopened at once, and when that fails GDI until a later attempt reopens it.

use std::collections::VecDeque;

use super::{CapturePath, CaptureSources, Capturer, Duplicated, Duplication, REOPEN_EVERY};
use crate::error::WinError;
use crate::platform::Bgrx;

/// A 1x1 frame whose one pixel is `shade` (GDI frames count up from 201 here).
fn frame(shade: u8) -> Bgrx {
    Bgrx {
        width: 1,
        height: 1,
        data: vec![shade, shade, shade, 0],
    }
}

fn error(what: &'static str) -> WinError {
    WinError::Win32 {
        call: what,
        detail: "scripted".into(),
    }
}

/// What a fake duplication answers, in order (then `Unchanged`).
#[derive(Default)]
struct Script {
    answers: VecDeque<Result<Duplicated, WinError>>,
}

struct FakeDuplication {
    script: Script,
}

impl Duplication for FakeDuplication {
    fn next_frame(&mut self, _have_frame: bool) -> Result<Duplicated, WinError> {
        self.script
            .answers
            .pop_front()
            .unwrap_or(Ok(Duplicated::Unchanged))
    }
}

/// Each open takes the next script (or fails when there is none); GDI frames count up.
#[derive(Default)]
struct FakeSources {
    opens: VecDeque<Script>,
    n_opened: usize,
    n_gdi: u32,
}

impl CaptureSources for FakeSources {
    type Dup = FakeDuplication;
    fn open_duplication(&mut self) -> Result<FakeDuplication, WinError> {
        let script = self
            .opens
            .pop_front()
            .ok_or_else(|| error("DuplicateOutput"))?;
        self.n_opened += 1;
        Ok(FakeDuplication { script })
    }
    fn gdi(&mut self) -> Result<Bgrx, WinError> {
        self.n_gdi += 1;
        Ok(frame(200u8.wrapping_add(self.n_gdi as u8)))
    }
}

fn script(answers: Vec<Result<Duplicated, WinError>>) -> Script {
    Script {
        answers: answers.into(),
    }
}

#[test]
fn a_duplication_that_does_not_open_means_gdi_with_the_reason() {
    let mut sources = FakeSources::default();
    let mut capturer = Capturer::open(&mut sources);
    assert_eq!(capturer.path(), CapturePath::Gdi);
    assert_eq!(capturer.path().name(), "gdi");
    let reason = capturer.fallback_reason().unwrap();
    assert!(reason.contains("DuplicateOutput"), "{reason}");
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(201));
    assert_eq!(sources.n_gdi, 1);
}

#[test]
fn dxgi_frames_are_used_and_an_unchanged_desktop_reuses_the_last_one() {
    let mut sources = FakeSources::default();
    sources.opens.push_back(script(vec![
        Ok(Duplicated::Frame(frame(1))),
        Ok(Duplicated::Unchanged),
        Ok(Duplicated::Frame(frame(2))),
        Ok(Duplicated::Unchanged),
    ]));
    let mut capturer = Capturer::open(&mut sources);
    assert_eq!(capturer.path(), CapturePath::Dxgi);
    assert_eq!(capturer.path().name(), "dxgi");
    assert_eq!(capturer.fallback_reason(), None);
    let frames: Vec<Bgrx> = (0..4)
        .map(|_| capturer.capture(&mut sources).unwrap())
        .collect();
    assert_eq!(frames, [frame(1), frame(1), frame(2), frame(2)]);
    assert_eq!(sources.n_gdi, 0, "no GDI frame while DXGI works");
}

#[test]
fn a_lost_duplication_is_reopened_once_and_keeps_dxgi() {
    let mut sources = FakeSources::default();
    sources.opens.push_back(script(vec![
        Ok(Duplicated::Frame(frame(1))),
        Ok(Duplicated::Lost(error("AcquireNextFrame"))),
    ]));
    sources
        .opens
        .push_back(script(vec![Ok(Duplicated::Frame(frame(3)))]));
    let mut capturer = Capturer::open(&mut sources);
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(1));
    // Lost: reopened, and the new duplication's first frame is the answer.
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(3));
    assert_eq!(sources.n_opened, 2);
    assert_eq!(capturer.path(), CapturePath::Dxgi);
    assert_eq!(sources.n_gdi, 0);
}

#[test]
fn a_duplication_that_cannot_be_reopened_falls_back_to_gdi_until_a_later_attempt() {
    let mut sources = FakeSources::default();
    sources.opens.push_back(script(vec![
        Ok(Duplicated::Frame(frame(1))),
        Ok(Duplicated::Lost(error("AcquireNextFrame"))),
    ]));
    let mut capturer = Capturer::open(&mut sources);
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(1));
    // Lost, and no second open: this frame is GDI's, never the stale DXGI frame.
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(201));
    assert_eq!(capturer.path(), CapturePath::Gdi);
    let reason = capturer.fallback_reason().unwrap();
    assert!(
        reason.contains("lost") && reason.contains("did not open again"),
        "{reason}"
    );
    // GDI for the next REOPEN_EVERY captures, each failed attempt starting the count again.
    for _ in 0..REOPEN_EVERY {
        capturer.capture(&mut sources).unwrap();
    }
    assert_eq!(sources.n_gdi, 1 + REOPEN_EVERY);
    assert_eq!(sources.n_opened, 1, "no attempt before the count ran out");
    // The next capture tries again; the desktop is back, so the duplication opens.
    sources
        .opens
        .push_back(script(vec![Ok(Duplicated::Frame(frame(5)))]));
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(5));
    assert_eq!(capturer.path(), CapturePath::Dxgi);
    assert_eq!(capturer.fallback_reason(), None);
    assert_eq!(sources.n_opened, 2);
}

#[test]
fn a_duplication_that_never_opened_is_not_retried() {
    let mut sources = FakeSources::default();
    let mut capturer = Capturer::open(&mut sources);
    sources
        .opens
        .push_back(script(vec![Ok(Duplicated::Frame(frame(5)))]));
    for _ in 0..2 * REOPEN_EVERY {
        capturer.capture(&mut sources).unwrap();
    }
    assert_eq!(sources.n_opened, 0);
    assert_eq!(capturer.path(), CapturePath::Gdi);
}

#[test]
fn a_failing_duplication_falls_back_to_gdi_and_a_reopened_loss_too() {
    let mut sources = FakeSources::default();
    sources
        .opens
        .push_back(script(vec![Err(error("CopyResource"))]));
    let mut capturer = Capturer::open(&mut sources);
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(201));
    assert_eq!(capturer.path(), CapturePath::Gdi);
    assert!(capturer.fallback_reason().unwrap().contains("CopyResource"));

    let mut sources = FakeSources::default();
    sources
        .opens
        .push_back(script(vec![Ok(Duplicated::Lost(error(
            "AcquireNextFrame",
        )))]));
    sources
        .opens
        .push_back(script(vec![Ok(Duplicated::Lost(error(
            "AcquireNextFrame",
        )))]));
    let mut capturer = Capturer::open(&mut sources);
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(201));
    assert_eq!(capturer.path(), CapturePath::Gdi);
    assert!(
        capturer
            .fallback_reason()
            .unwrap()
            .contains("lost again once reopened")
    );
}

#[test]
fn an_unchanged_answer_with_no_frame_yet_is_a_gdi_frame_not_an_empty_one() {
    let mut sources = FakeSources::default();
    sources
        .opens
        .push_back(script(vec![Ok(Duplicated::Unchanged)]));
    let mut capturer = Capturer::open(&mut sources);
    assert_eq!(capturer.capture(&mut sources).unwrap(), frame(201));
    assert_eq!(capturer.path(), CapturePath::Dxgi);
}
