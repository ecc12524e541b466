//! The capture path, platform-neutral: DXGI Desktop Duplication when it opens, GDI `BitBlt`
//! when it does not, and what happens when a duplication is lost. The Win32 sources are
//! `win32/dxgi.rs` and `win32/capture.rs`; the unit tests drive the same logic with fakes.
//!
//! Invariants: the path is chosen when the worker starts (DXGI if its duplication opens, else
//! GDI, with the reason kept and logged); a duplication that answers "nothing new" reuses the
//! last frame it gave, never a frame of another path; a lost duplication (a desktop switch, a
//! mode change) is opened again at once, and when that fails the worker captures with GDI
//! (logged, and `hello` then says `gdi`) and tries to open it again every
//! [`REOPEN_EVERY`] captures, since the desktop that took it (a UAC prompt, the lock screen) goes
//! away; a duplication that never opened is not retried (Wine, session 0, RDP stay so). Every
//! frame comes whole from one path.

use crate::error::WinError;
use crate::platform::Bgrx;

/// GDI captures between two attempts to reopen a duplication that was lost (about a second of
/// the settle loop's 20 ms samples).
pub const REOPEN_EVERY: u32 = 50;

/// Which path captures the screen, as `hello`'s `capture_path` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapturePath {
    /// DXGI Desktop Duplication (`IDXGIOutput1::DuplicateOutput`).
    Dxgi,
    /// GDI `BitBlt` of the virtual screen.
    Gdi,
}

impl CapturePath {
    /// The protocol name: `dxgi` or `gdi`.
    pub fn name(self) -> &'static str {
        match self {
            CapturePath::Dxgi => "dxgi",
            CapturePath::Gdi => "gdi",
        }
    }
}

/// What one request to a duplication answered.
#[derive(Debug)]
pub enum Duplicated {
    /// A desktop image.
    Frame(Bgrx),
    /// Nothing was presented since the last image it gave.
    Unchanged,
    /// The duplication is gone (`DXGI_ERROR_ACCESS_LOST`): it must be opened again.
    Lost(WinError),
}

/// An open desktop duplication.
pub trait Duplication {
    /// The next image; `have_frame` says whether the caller still holds the last one (without
    /// it, an unchanged desktop must still be copied).
    fn next_frame(&mut self, have_frame: bool) -> Result<Duplicated, WinError>;
}

/// Where frames come from.
pub trait CaptureSources {
    /// The duplication this source opens.
    type Dup: Duplication;
    /// Opens a duplication of the whole virtual screen.
    fn open_duplication(&mut self) -> Result<Self::Dup, WinError>;
    /// Captures the virtual screen with GDI.
    fn gdi(&mut self) -> Result<Bgrx, WinError>;
}

/// The chosen path, the open duplication and the last frame it gave.
pub struct Capturer<D> {
    duplication: Option<D>,
    last: Option<Bgrx>,
    fallback_reason: Option<String>,
    /// After a loss: GDI captures left before the next attempt to reopen.
    reopen_in: Option<u32>,
}

impl<D: Duplication> Capturer<D> {
    /// Opens a duplication, or falls back to GDI with the reason.
    pub fn open<S: CaptureSources<Dup = D>>(sources: &mut S) -> Capturer<D> {
        match sources.open_duplication() {
            Ok(duplication) => Capturer {
                duplication: Some(duplication),
                last: None,
                fallback_reason: None,
                reopen_in: None,
            },
            Err(error) => {
                let mut capturer = Capturer {
                    duplication: None,
                    last: None,
                    fallback_reason: None,
                    reopen_in: None,
                };
                capturer.fall_back(format!("DXGI Desktop Duplication did not open: {error}"));
                capturer
            }
        }
    }

    /// The path frames come from now.
    pub fn path(&self) -> CapturePath {
        if self.duplication.is_some() {
            CapturePath::Dxgi
        } else {
            CapturePath::Gdi
        }
    }

    /// Why the worker captures with GDI, when it does.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    fn fall_back(&mut self, reason: String) {
        eprintln!("desk-win: capture path gdi: {reason}");
        self.duplication = None;
        self.last = None;
        self.fallback_reason = Some(reason);
    }

    /// One frame of the virtual screen from the current path.
    pub fn capture<S: CaptureSources<Dup = D>>(
        &mut self,
        sources: &mut S,
    ) -> Result<Bgrx, WinError> {
        if self.duplication.is_none() {
            self.maybe_reopen(sources);
        }
        let Some(duplication) = self.duplication.as_mut() else {
            return sources.gdi();
        };
        let answer = match duplication.next_frame(self.last.is_some()) {
            Ok(Duplicated::Lost(why)) => {
                self.last = None;
                Self::reopen(&mut self.duplication, sources, &why)
            }
            Ok(answer) => Ok(answer),
            Err(error) => Err(format!("the duplication failed: {error}")),
        };
        match answer {
            Ok(Duplicated::Frame(frame)) => {
                self.last = Some(frame.clone());
                Ok(frame)
            }
            Ok(Duplicated::Unchanged) => match &self.last {
                Some(frame) => Ok(frame.clone()),
                // Not reached with a conforming duplication (asked without a frame, it copies
                // the current image): GDI for this one frame rather than none.
                None => sources.gdi(),
            },
            // `reopen` never answers `Lost`.
            Ok(Duplicated::Lost(why)) => {
                self.fall_back(format!("the duplication was lost: {why}"));
                self.reopen_in = Some(REOPEN_EVERY);
                sources.gdi()
            }
            Err(reason) => {
                self.fall_back(reason);
                self.reopen_in = Some(REOPEN_EVERY);
                sources.gdi()
            }
        }
    }

    /// Counts a GDI capture after a loss, and every [`REOPEN_EVERY`] tries the duplication again.
    fn maybe_reopen<S: CaptureSources<Dup = D>>(&mut self, sources: &mut S) {
        let Some(left) = self.reopen_in else {
            return;
        };
        if left > 0 {
            self.reopen_in = Some(left - 1);
            return;
        }
        match sources.open_duplication() {
            Ok(duplication) => {
                eprintln!("desk-win: capture path dxgi: the duplication opened again");
                self.duplication = Some(duplication);
                self.fallback_reason = None;
                self.reopen_in = None;
            }
            Err(_) => self.reopen_in = Some(REOPEN_EVERY),
        }
    }

    /// Opens the duplication again after it was lost and asks it for a frame, once.
    fn reopen<S: CaptureSources<Dup = D>>(
        slot: &mut Option<D>,
        sources: &mut S,
        why: &WinError,
    ) -> Result<Duplicated, String> {
        let reopened = sources.open_duplication().map_err(|error| {
            format!("the duplication was lost ({why}) and did not open again ({error})")
        })?;
        match slot.insert(reopened).next_frame(false) {
            Ok(Duplicated::Lost(again)) => Err(format!(
                "the duplication was lost ({why}) and lost again once reopened ({again})"
            )),
            Ok(answer) => Ok(answer),
            Err(error) => Err(format!(
                "the duplication was lost ({why}) and failed once reopened ({error})"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
