//! `await_app`: find the app's main window by pid and rules, dismiss known overlays, maximize,
//! verify that the window covers the work area (viewable, not iconic: `cover.rs`), and wait for
//! a stable render: up to [`HANDOFF_SETTLE_ATTEMPTS`] settle waits, then `handoff_unstable`.
//!
//! Invariants: only windows whose `_NET_WM_PID` equals the requested pid are touched; overlay
//! dismissal is the only input sent, and held keys are released after it; the handoff never
//! activates the app or moves keyboard focus (the app keeps the focus it took); the app is
//! remembered only once a handoff succeeded.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use desk_contract::desktop::{Handoff, OverlayRule, WindowRules};
use desk_contract::keys::parse_chord;
use desk_contract::settle::{SettleOutcome, SettlePolicy, SettleReport};
use x11rb::protocol::xproto::Window;

use crate::capture::RawFrame;
use crate::error::X11Error;
use crate::input::Injector;
use crate::session::{AppWindow, X11Session};
use crate::settle::{millis, wait_for_stable};

/// Poll interval while waiting for windows.
const POLL: Duration = Duration::from_millis(50);
/// Longest wait for the window manager to report the window maximized.
const MAXIMIZE_TIMEOUT: Duration = Duration::from_secs(5);
/// Interval between repeated maximize requests.
const MAXIMIZE_RETRY: Duration = Duration::from_millis(500);
/// Settle waits at handoff before a screen that keeps changing is refused.
pub const HANDOFF_SETTLE_ATTEMPTS: u32 = 3;
/// Minimum time between two dismiss attempts on the same overlay window.
const REDISMISS_AFTER: Duration = Duration::from_millis(1_000);

struct Candidate {
    window: Window,
    title: String,
    class: String,
}

fn matches_rules(candidate: &Candidate, rules: &WindowRules) -> bool {
    let class_ok = rules
        .class
        .as_ref()
        .is_none_or(|class| candidate.class.eq_ignore_ascii_case(class));
    let title_ok = rules
        .title_prefix
        .as_ref()
        .is_none_or(|prefix| candidate.title.starts_with(prefix.as_str()));
    class_ok && title_ok
}

fn overlay_for<'a>(title: &str, rules: &'a WindowRules) -> Option<&'a OverlayRule> {
    rules.overlays.iter().find(|overlay| {
        !overlay.title_contains.is_empty() && title.contains(&overlay.title_contains)
    })
}

impl X11Session {
    fn app_candidates(&self, pid: u32) -> Result<Vec<Candidate>, X11Error> {
        let windows = self.windows();
        let mut candidates = Vec::new();
        for window in windows.clients()? {
            // Windows can vanish between listing and reading; skip them.
            let Ok(Some(window_pid)) = windows.pid(window) else {
                continue;
            };
            if window_pid != pid {
                continue;
            }
            let (Ok(title), Ok(class)) = (windows.title(window), windows.class(window)) else {
                continue;
            };
            candidates.push(Candidate {
                window,
                title,
                class,
            });
        }
        Ok(candidates)
    }

    fn dismiss(&mut self, window: Window, overlay: &OverlayRule) -> Result<(), X11Error> {
        let keys = parse_chord(&overlay.dismiss_keys).map_err(|problem| {
            X11Error::InvalidRequest(format!(
                "bad dismiss chord for overlay {:?}: {problem:?}",
                overlay.title_contains
            ))
        })?;
        self.windows().activate(window)?;
        std::thread::sleep(Duration::from_millis(100));
        let mut injector = Injector::new(&self.conn, self.root, &mut self.keymap);
        let sent = injector.chord(&keys).and_then(|()| injector.sync());
        let restored = self.keymap.restore(&self.conn);
        self.release_held()?;
        sent.and(restored)
    }

    /// Answers `await_app`.
    pub fn await_app(
        &mut self,
        pid: u32,
        rules: &WindowRules,
        policy: &SettlePolicy,
    ) -> Result<Handoff, X11Error> {
        let started = Instant::now();
        let deadline = started + Duration::from_millis(u64::from(rules.timeout_ms));
        let mut dismissed_overlays = Vec::new();
        let mut last_dismissed: HashMap<Window, Instant> = HashMap::new();
        let mut last_seen: Option<Candidate> = None;
        let main = loop {
            let candidates = self.app_candidates(pid)?;
            let mut overlay_present = false;
            for candidate in &candidates {
                let Some(overlay) = overlay_for(&candidate.title, rules) else {
                    continue;
                };
                overlay_present = true;
                let due = last_dismissed
                    .get(&candidate.window)
                    .is_none_or(|at| at.elapsed() >= REDISMISS_AFTER);
                if due {
                    tracing::info!(title = %candidate.title, "dismissing overlay");
                    self.dismiss(candidate.window, overlay)?;
                    last_dismissed.insert(candidate.window, Instant::now());
                    dismissed_overlays.push(candidate.title.clone());
                }
            }
            let main = candidates.into_iter().find(|candidate| {
                overlay_for(&candidate.title, rules).is_none() && matches_rules(candidate, rules)
            });
            if let Some(main) = main {
                let ready = rules
                    .ready_title_contains
                    .as_ref()
                    .is_none_or(|needle| main.title.contains(needle.as_str()));
                if ready && !overlay_present {
                    break main;
                }
                last_seen = Some(main);
            }
            if Instant::now() >= deadline {
                let message = match last_seen {
                    Some(seen) => format!(
                        "window of pid {pid} titled {:?} never became ready within {} ms",
                        seen.title, rules.timeout_ms
                    ),
                    None => format!(
                        "no window of pid {pid} matching the rules appeared within {} ms",
                        rules.timeout_ms
                    ),
                };
                return Err(X11Error::AppWindowNotFound(message));
            }
            std::thread::sleep(POLL);
        };
        if rules.maximize {
            self.maximize(main.window)?;
            self.check_covers(main.window)?;
        }
        self.app = Some(AppWindow {
            pid,
            window: main.window,
        });
        self.prohibited.clone_from(&rules.prohibited);
        let first = self.capture_raw()?;
        let (mut wait_ms, mut n_samples) = (0u64, 0u32);
        let mut previous: Option<RawFrame> = None;
        let mut attempt = 1;
        let mut settled = loop {
            let reference = previous.as_ref().unwrap_or(&first);
            let settled = wait_for_stable(&self.conn, &mut self.capturer, policy, reference, None)?;
            wait_ms = wait_ms.saturating_add(settled.wait_ms);
            n_samples = n_samples.saturating_add(settled.n_samples);
            if settled.outcome == SettleOutcome::Stable {
                break settled;
            }
            if attempt >= HANDOFF_SETTLE_ATTEMPTS {
                self.app = None;
                return Err(X11Error::HandoffUnstable(format!(
                    "the screen was still changing after {attempt} settle waits \
                     ({wait_ms} ms, {n_samples} samples)"
                )));
            }
            tracing::info!(attempt, wait_ms, "handoff still changing; settling again");
            attempt += 1;
            if let Some(replaced) = previous.replace(settled.frame) {
                self.capturer.recycle(replaced);
            }
        };
        if let Some(replaced) = previous.take() {
            self.capturer.recycle(replaced);
        }
        let window = self.windows().facts(main.window, Some(pid))?;
        let frame = match settled.png.take() {
            Some(png) => self.frame(png, settled.frame.width(), settled.frame.height()),
            None => self.encode(&settled.frame)?,
        };
        Ok(Handoff {
            window,
            frame,
            dismissed_overlays,
            elapsed_ms: millis(started.elapsed()),
            settle: SettleReport {
                outcome: settled.outcome,
                wait_ms,
                changed_pixels: settled.frame.changed_pixels(&first),
                n_samples,
                post_action_visual_stable: settled.outcome == SettleOutcome::Stable,
                rule: settled.rule,
                validation: None,
            },
        })
    }

    /// Waits until `window` covers the work area, is viewable and not iconic (the manager
    /// resizes asynchronously), at most [`MAXIMIZE_TIMEOUT`]; `app_not_maximized` otherwise.
    fn check_covers(&self, window: Window) -> Result<(), X11Error> {
        let started = Instant::now();
        let screen = (self.display.width, self.display.height);
        loop {
            let Some(problem) = self.windows().coverage_problem(window, screen)? else {
                return Ok(());
            };
            if started.elapsed() >= MAXIMIZE_TIMEOUT {
                return Err(X11Error::AppNotMaximized(problem));
            }
            std::thread::sleep(POLL);
        }
    }

    fn maximize(&mut self, window: Window) -> Result<(), X11Error> {
        let windows = self.windows();
        if windows.maximized(window)? {
            return Ok(());
        }
        let started = Instant::now();
        let mut last_request: Option<Instant> = None;
        while started.elapsed() < MAXIMIZE_TIMEOUT {
            // Repeat the request now and then: a manager that was still adopting the window may
            // have dropped the first one.
            if last_request.is_none_or(|at| at.elapsed() >= MAXIMIZE_RETRY) {
                windows.request_maximize(window)?;
                last_request = Some(Instant::now());
            }
            std::thread::sleep(POLL);
            if windows.maximized(window)? {
                return Ok(());
            }
        }
        Err(X11Error::AppNotMaximized(format!(
            "window 0x{window:x} was not observed maximized within {} ms",
            MAXIMIZE_TIMEOUT.as_millis()
        )))
    }
}
