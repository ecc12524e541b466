//! The per-test desktop: Xvfb, openbox, a maximized probe window and an `X11Session` on it.

use std::path::PathBuf;

use desk_contract::desktop::{ActionOutcome, Handoff, WindowRules};
use desk_contract::geometry::ScreenPoint;
use desk_contract::settle::SettlePolicy;
use desk_contract::validate::InputAction;
use desk_test_support::{Openbox, ProbeEvent, ProbeOptions, Xvfb, read_probe_log, spawn_probe};
use desk_x11::X11Session;

pub struct Desk {
    pub session: X11Session,
    pub log: PathBuf,
    pub handoff: Handoff,
    _openbox: Openbox,
    pub xvfb: Xvfb,
}

pub fn probe_rules() -> WindowRules {
    WindowRules {
        class: Some("DeskProbe".to_string()),
        title_prefix: Some("deskbroker probe".to_string()),
        ready_title_contains: None,
        maximize: true,
        overlays: Vec::new(),
        timeout_ms: 10_000,
        prohibited: Vec::new(),
    }
}

/// Starts a desktop with the probe maximized on it; `None` when Xvfb is missing.
pub fn desk(width: u32, height: u32) -> Option<Desk> {
    desk_with(width, height, probe_rules(), |_| {})
}

pub fn desk_with(
    width: u32,
    height: u32,
    rules: WindowRules,
    before_await: impl FnOnce(&Xvfb),
) -> Option<Desk> {
    let xvfb = Xvfb::start(width, height)?;
    let openbox = xvfb.start_openbox();
    let log = spawn_probe(
        xvfb.display(),
        &std::env::temp_dir(),
        ProbeOptions::default(),
    );
    before_await(&xvfb);
    let mut session = X11Session::connect(Some(xvfb.display())).unwrap();
    let handoff = match session.await_app(std::process::id(), &rules, &SettlePolicy::default()) {
        Ok(handoff) => handoff,
        Err(error) => {
            let tree = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "xwininfo -root -tree -display {0}; xprop -root -display {0} _NET_CLIENT_LIST",
                    xvfb.display()
                ))
                .output()
                .unwrap();
            panic!("{error}: {}", String::from_utf8_lossy(&tree.stdout));
        }
    };
    Some(Desk {
        session,
        log,
        handoff,
        _openbox: openbox,
        xvfb,
    })
}

pub fn point(x: u32, y: u32) -> ScreenPoint {
    ScreenPoint { x, y }
}

impl Desk {
    pub fn events(&self) -> Vec<ProbeEvent> {
        read_probe_log(&self.log)
    }

    /// Runs one action and returns its outcome and the probe events it caused.
    pub fn run(&mut self, action: InputAction) -> (ActionOutcome, Vec<ProbeEvent>) {
        let mark = self.events().len();
        let outcome = self
            .session
            .execute(&action, &SettlePolicy::default())
            .unwrap();
        // The settle wait lasts at least 400 ms, far longer than event delivery to the probe.
        let events = self.events().split_off(mark);
        (outcome, events)
    }

    /// Asserts that no key or button is held.
    pub fn assert_nothing_held(&self) {
        let facts = self.session.facts().unwrap();
        assert_eq!(facts.held, Vec::<String>::new());
    }
}

pub fn of_kind<'a>(events: &'a [ProbeEvent], kind: &str) -> Vec<&'a ProbeEvent> {
    events.iter().filter(|event| event.kind == kind).collect()
}
