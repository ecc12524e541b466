//! `await_app`: find the app's main window by process, class and title, maximize it over the
//! work area when the rules ask, and hand off a first frame that settled.
//!
//! Invariants: the main window is a visible, unowned top-level window of the given process; with
//! `maximize`, "maximized" means `IsZoomed`, not iconic, and a window rectangle covering the
//! work area (`SPI_GETWORKAREA`), observed within [`MAXIMIZE_WAIT_MS`]; the first frame must
//! settle (`stable`) within [`HANDOFF_SETTLE_WAITS`] waits. Overlay and prohibited-destination
//! rules are not implemented in this slice and are refused, not ignored.

use desk_contract::SettlePolicy;
use desk_contract::desktop::{Handoff, WindowRules};
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};

use super::{AppBinding, Worker, desktop_failed, failure};
use crate::encode::to_frame;
use crate::platform::{Platform, WinWindow, wall_clock_ms};
use crate::settle::settle;

/// How long a maximize may take to show.
pub(crate) const MAXIMIZE_WAIT_MS: u64 = 5_000;
/// Settle waits before a handoff is `handoff_unstable`.
pub(crate) const HANDOFF_SETTLE_WAITS: u32 = 3;
/// Polling interval while waiting for a window.
const POLL_MS: u64 = 100;

fn matches_rules(window: &WinWindow, pid: u32, rules: &WindowRules) -> bool {
    window.pid == pid
        && window.visible
        && !window.owned
        && rules
            .class
            .as_ref()
            .is_none_or(|class| window.class.eq_ignore_ascii_case(class))
        && rules
            .title_prefix
            .as_ref()
            .is_none_or(|prefix| window.title.starts_with(prefix.as_str()))
}

impl<P: Platform> Worker<P> {
    pub(super) fn await_app(
        &mut self,
        pid: u32,
        rules: &WindowRules,
        policy: &SettlePolicy,
    ) -> Result<Handoff, WorkerFailure> {
        if !rules.overlays.is_empty() || !rules.prohibited.is_empty() {
            return Err(failure(
                WorkerFailureKind::InvalidRequest,
                "overlay and prohibited-destination rules are not implemented by desk-win yet",
            ));
        }
        let started = self.platform.now_ms();
        let deadline = started.saturating_add(u64::from(rules.timeout_ms));
        let window = loop {
            let windows = self.platform.top_level_windows().map_err(desktop_failed)?;
            let found = windows
                .into_iter()
                .find(|window| matches_rules(window, pid, rules));
            let ready = found.filter(|window| {
                rules
                    .ready_title_contains
                    .as_ref()
                    .is_none_or(|needle| window.title.contains(needle.as_str()))
            });
            if let Some(window) = ready {
                break window;
            }
            if self.platform.now_ms() >= deadline {
                return Err(failure(
                    WorkerFailureKind::AppWindowNotFound,
                    format!(
                        "no visible top-level window of pid {pid} matching class {:?}, title \
                         prefix {:?} and ready title {:?} within {} ms",
                        rules.class,
                        rules.title_prefix,
                        rules.ready_title_contains,
                        rules.timeout_ms
                    ),
                ));
            }
            self.platform.sleep_ms(POLL_MS);
        };
        self.app = Some(AppBinding {
            pid,
            main: Some(window.hwnd),
        });
        if rules.maximize {
            self.maximize(window.hwnd)?;
        }
        let mut before = self.platform.capture().map_err(desktop_failed)?;
        let mut waited_ms = 0;
        let mut n_samples: u32 = 0;
        for _ in 0..HANDOFF_SETTLE_WAITS {
            let (frame, mut report) =
                settle(&mut self.platform, &before, policy).map_err(desktop_failed)?;
            waited_ms += report.wait_ms;
            n_samples = n_samples.saturating_add(report.n_samples);
            if report.post_action_visual_stable {
                report.wait_ms = waited_ms;
                report.n_samples = n_samples;
                let maximized = self.app_maximized();
                let frame = to_frame(&frame, wall_clock_ms(), maximized).map_err(desktop_failed)?;
                let window = self
                    .platform
                    .window(window.hwnd)
                    .map_err(desktop_failed)?
                    .unwrap_or(window);
                return Ok(Handoff {
                    window: self.window_facts(&window),
                    frame,
                    dismissed_overlays: Vec::new(),
                    elapsed_ms: self.platform.now_ms().saturating_sub(started),
                    settle: report,
                });
            }
            before = frame;
        }
        Err(failure(
            WorkerFailureKind::HandoffUnstable,
            format!("the first frame still changed after {HANDOFF_SETTLE_WAITS} settle waits"),
        ))
    }

    fn maximize(&mut self, hwnd: u32) -> Result<(), WorkerFailure> {
        let started = self.platform.now_ms();
        let mut asked = false;
        loop {
            if self.app_maximized() {
                return Ok(());
            }
            let zoomed = matches!(self.platform.window(hwnd), Ok(Some(window)) if window.zoomed);
            if !asked || !zoomed {
                self.platform.maximize(hwnd).map_err(desktop_failed)?;
                asked = true;
            }
            if self.platform.now_ms().saturating_sub(started) >= MAXIMIZE_WAIT_MS {
                let work_area = self.platform.work_area().map_err(desktop_failed)?;
                let window = self.platform.window(hwnd).map_err(desktop_failed)?;
                return Err(failure(
                    WorkerFailureKind::AppNotMaximized,
                    format!(
                        "window {hwnd:#x} is not maximized over the work area {work_area:?} \
                         within {MAXIMIZE_WAIT_MS} ms: {window:?}"
                    ),
                ));
            }
            self.platform.sleep_ms(POLL_MS);
        }
    }
}
