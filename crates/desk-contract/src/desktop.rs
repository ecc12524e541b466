//! Facts a desktop reports: frames, windows, focus, handoff, and the outcome of one action.
//!
//! These cross the worker pipe and appear inside API responses, so they are wire types.

use serde::{Deserialize, Serialize};

use crate::events::InputEvent;
use crate::geometry::{DisplaySize, ScreenPoint};
use crate::settle::SettleReport;

/// One captured frame, PNG-encoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame {
    /// PNG bytes. Not part of the JSON: on the worker wire they follow the response line as a
    /// binary attachment ([`crate::worker::WorkerResponse::attachment_len`]).
    #[serde(skip)]
    pub png: Vec<u8>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Milliseconds since the Unix epoch at capture.
    pub captured_at_ms: u64,
    /// Lowercase hex SHA-256 of `png`.
    pub sha256: String,
    /// Whether the app's main window was observed maximized at capture time.
    pub app_maximized: bool,
}

/// A window rectangle in screen pixels (may extend off screen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct WindowRect {
    /// Left edge.
    pub x: i32,
    /// Top edge.
    pub y: i32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// Facts about one top-level window, read through EWMH/ICCCM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct WindowFacts {
    /// X11 window id (client window, not the frame).
    pub window_id: u32,
    /// `_NET_WM_PID`, when set.
    pub pid: Option<u32>,
    /// `_NET_WM_NAME` or `WM_NAME`.
    pub title: String,
    /// `WM_CLASS` class part.
    pub class: String,
    /// `_NET_WM_STATE` holds both maximized atoms.
    pub maximized: bool,
    /// Geometry in root coordinates.
    pub rect: WindowRect,
    /// Whether the window belongs to the session's app (by pid).
    pub is_app: bool,
}

/// What one of the app's top-level windows is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WindowRole {
    /// The app's bound main window.
    Main,
    /// A dialog (`_NET_WM_WINDOW_TYPE_DIALOG`, or transient for another window).
    Dialog,
    /// A menu (dropdown or popup menu types).
    Menu,
    /// Another override-redirect or utility window of the app (tooltip, combo list, ...).
    Popup,
    /// A normal top-level window of the app other than the main one.
    Other,
}

/// One top-level window of the app, for `GET /v1/sessions/{id}/windows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct AppWindowInfo {
    /// X11 window id.
    pub window_id: u32,
    /// `_NET_WM_NAME` or `WM_NAME` (may be empty).
    pub title: String,
    /// What it is.
    pub role: WindowRole,
    /// Geometry in root coordinates.
    pub bounds: WindowRect,
    /// Mapped and viewable, not iconic, and intersecting the screen.
    pub on_screen: bool,
}

/// The input target around an action: diagnostic only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct FocusFacts {
    /// `_NET_ACTIVE_WINDOW`, when any.
    pub active: Option<WindowFacts>,
    /// The window holding X input focus (where keys go): the active window or one of its
    /// children, or another window; `None` when focus is None or PointerRoot (or the worker
    /// predates this field).
    #[serde(default)]
    pub focused: Option<u32>,
    /// Pointer position.
    pub pointer: ScreenPoint,
}

/// The full state the worker can see, used for status, checkpoints and leak checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesktopFacts {
    /// Display size.
    pub display: DisplaySize,
    /// Focus and pointer.
    pub focus: FocusFacts,
    /// The app's main window, when found.
    pub app_window: Option<WindowFacts>,
    /// Keys and buttons currently held according to QueryKeymap/QueryPointer.
    pub held: Vec<String>,
}

/// How to recognise and prepare an app's main window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowRules {
    /// When set, the main window's class must equal this (case-insensitive).
    #[serde(default)]
    pub class: Option<String>,
    /// When set, the main window's title must start with this.
    #[serde(default)]
    pub title_prefix: Option<String>,
    /// When set, the handoff waits until the main window's title contains this.
    #[serde(default)]
    pub ready_title_contains: Option<String>,
    /// Ask the window manager to maximize the window when it is not.
    pub maximize: bool,
    /// Known overlays to dismiss before handoff.
    #[serde(default)]
    pub overlays: Vec<OverlayRule>,
    /// How long to wait for the window, in milliseconds.
    pub timeout_ms: u32,
    /// Destinations seat input must never reach (checked before every action once the app is
    /// bound): input whose destination window matches one is refused with
    /// `destination_prohibited`.
    #[serde(default)]
    pub prohibited: Vec<ProhibitedDestination>,
}

/// A window seat input must never reach, recognised by what X says of it: the `WM_CLASS`
/// (instance or class) and the title (`_NET_WM_NAME`, else `WM_NAME`) of the destination's
/// client window. Each given part must match (case-insensitive substrings); a rule without
/// either matches no window. A rule with `accessible_role` or `accessible_name` also (or
/// instead) names a panel inside the app's windows by what AT-SPI says of it: an accessible
/// whose role and name equal the given ones (case-insensitive), checked by the worker for the
/// point under pointer input and for the keyboard focus (`destination.rs`, `desk-a11y`'s
/// `guard.rs`); a rule without either matches no accessible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProhibitedDestination {
    /// What the destination is, named in the refusal ("Python console").
    pub label: String,
    /// A substring of the window's `WM_CLASS` instance or class.
    #[serde(default)]
    pub class_contains: Option<String>,
    /// A substring of the window's title.
    #[serde(default)]
    pub title_contains: Option<String>,
    /// The AT-SPI role name of a prohibited accessible ("frame").
    #[serde(default)]
    pub accessible_role: Option<String>,
    /// The AT-SPI name of a prohibited accessible ("Python console").
    #[serde(default)]
    pub accessible_name: Option<String>,
}

impl ProhibitedDestination {
    /// Whether a window of `class` (its `WM_CLASS` instance and class joined) and `title`
    /// matches this rule.
    pub fn matches(&self, class: &str, title: &str) -> bool {
        let contains = |haystack: &str, needle: &Option<String>| {
            needle
                .as_ref()
                .is_none_or(|needle| haystack.to_lowercase().contains(&needle.to_lowercase()))
        };
        (self.class_contains.is_some() || self.title_contains.is_some())
            && contains(class, &self.class_contains)
            && contains(title, &self.title_contains)
    }

    /// Whether this rule names accessibles (has `accessible_role` or `accessible_name`).
    pub fn names_accessibles(&self) -> bool {
        self.accessible_role.is_some() || self.accessible_name.is_some()
    }

    /// Whether an accessible of `role` and `name` matches this rule.
    pub fn matches_accessible(&self, role: &str, name: &str) -> bool {
        let equal = |value: &str, wanted: &Option<String>| {
            wanted
                .as_ref()
                .is_none_or(|wanted| value.eq_ignore_ascii_case(wanted))
        };
        self.names_accessibles()
            && equal(role, &self.accessible_role)
            && equal(name, &self.accessible_name)
    }
}

/// An overlay window (first-run dialog, tip of the day) and how to dismiss it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlayRule {
    /// Matches windows of the app whose title contains this.
    pub title_contains: String,
    /// The chord that dismisses it, e.g. `["escape"]`.
    pub dismiss_keys: Vec<String>,
}

/// The verified state at handoff: app window found, maximized, rendered and stable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    /// The app's main window.
    pub window: WindowFacts,
    /// The first frame handed to the agent.
    pub frame: Frame,
    /// Overlays dismissed on the way.
    pub dismissed_overlays: Vec<String>,
    /// Milliseconds from the request to the stable window.
    pub elapsed_ms: u64,
    /// The settle wait that established stability.
    pub settle: SettleReport,
}

/// What executing one normalized action did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionOutcome {
    /// Low-level inputs sent, in order.
    pub events: Vec<InputEvent>,
    /// Focus before input.
    pub focus_before: FocusFacts,
    /// Focus after settling; `None` when the diagnostic read failed after the input was
    /// delivered (`focus` in `observation_failures`).
    pub focus_after: Option<FocusFacts>,
    /// Keys or buttons found held after the action and released.
    pub released_after: Vec<String>,
    /// The settle wait (`unavailable` when its capture failed).
    pub settle: SettleReport,
    /// The freshest frame after settling; `None` when no frame could be captured or encoded
    /// after the input was delivered (`capture` or `encode` in `observation_failures`).
    pub frame: Option<Frame>,
    /// Milliseconds spent injecting input.
    pub input_ms: u64,
    /// Observations that failed after the input was delivered, in order: `capture` (the
    /// settle capture), `encode` (the PNG encode), `focus` (the diagnostic focus read). The
    /// input was delivered exactly once either way; absent when every observation succeeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observation_failures: Vec<String>,
    /// The app's top-level windows (dialogs, menus, popups) that appeared between the input
    /// and the end of the settle wait.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opened_windows: Vec<AppWindowInfo>,
}

/// Observation ids a worker reports in [`ActionOutcome::observation_failures`].
pub mod observation {
    /// The settle capture after input failed.
    pub const CAPTURE: &str = "capture";
    /// The PNG encode of the settled frame failed.
    pub const ENCODE: &str = "encode";
    /// The diagnostic focus read after settling failed.
    pub const FOCUS: &str = "focus";
    /// Listing the windows the step opened failed.
    pub const WINDOWS: &str = "windows";
}

/// Whether a session's desktop runs in its sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// One sandbox per session (the default).
    #[default]
    On,
    /// No sandbox: the operator started `serve --unsafe-no-sandbox`.
    Off,
}

impl SandboxMode {
    /// Whether the sandbox is on (the default, left out of records that only stamp `off`).
    pub fn is_on(&self) -> bool {
        *self == SandboxMode::On
    }
}

/// Whether a session's desktop runs under its resource limits (its own cgroups: memory,
/// processes, CPU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LimitsMode {
    /// The session's memory, process and CPU limits are applied (the default); a desktop whose
    /// limits cannot be applied is refused.
    #[default]
    Enforced,
    /// No limits: the operator asked for it (`--unsafe-no-limits`).
    Off,
}

impl LimitsMode {
    /// Whether the limits are enforced (the default, left out of records that only stamp
    /// `off`).
    pub fn is_enforced(&self) -> bool {
        *self == LimitsMode::Enforced
    }
}

/// The session's workspace as the broker measured it from outside (`/proc`) at handoff. With
/// the sandbox on, a handoff is refused (`workspace_unverified`) unless `failures` is empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkspaceFacts {
    /// `on` or `off`.
    pub sandbox: SandboxMode,
    /// `off` when the operator started the broker with `--unsafe-no-limits` (the session has
    /// no memory, process or CPU limits); left out when enforced.
    #[serde(default, skip_serializing_if = "LimitsMode::is_enforced")]
    pub limits: LimitsMode,
    /// The app's uid on the host.
    pub app_uid: u32,
    /// The broker's uid.
    pub broker_uid: u32,
    /// Whether the app runs with `NoNewPrivs`.
    pub no_new_privs: bool,
    /// The app's effective capability set (`CapEff`, hex).
    pub cap_eff: String,
    /// Namespaces (`user`, `mnt`, `pid`, `net`, `ipc`, `uts`, `cgroup`) the app shares with
    /// the broker.
    pub shared_namespaces: Vec<String>,
    /// Network interfaces the app sees.
    pub interfaces: Vec<String>,
    /// Paths that must be invisible to the app but are visible.
    pub visible_forbidden: Vec<String>,
    /// Whether the app's root filesystem is mounted read-only.
    pub root_read_only: bool,
    /// The mount points the app sees read-write on a filesystem that keeps what is written on
    /// the host (memory filesystems and device nodes aside).
    #[serde(default)]
    pub writable_mounts: Vec<String>,
    /// Those of [`WorkspaceFacts::writable_mounts`] the policy does not allow (its writable
    /// directories, the run directory and the operator's extra writable paths).
    #[serde(default)]
    pub unexpected_writable: Vec<String>,
    /// How many files with an execute bit the app sees in its `/usr/bin`, `/bin`, `/usr/sbin`,
    /// `/sbin` and `/usr/local/bin` (the same file counted once): a profile's allowlisted view
    /// shows a handful, a broad one the host's whole set.
    #[serde(default)]
    pub visible_executables: u32,
    /// The facts that fail the sandbox's rules (empty when verified, or when the sandbox is off).
    pub failures: Vec<String>,
}
