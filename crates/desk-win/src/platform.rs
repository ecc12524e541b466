//! What the worker needs from the operating system, as a trait: the Win32 implementation is
//! `crate::win32::Win32`, and the unit tests drive the same worker through a fake.
//!
//! Window handles travel as `u32`: Win32 keeps `HWND` values within 32 bits so that 32- and
//! 64-bit processes can share them, and the protocol's `window_id` is a `u32`.

use desk_contract::Button;
use desk_contract::desktop::WindowRect;

use crate::error::WinError;

/// One captured frame: 4 bytes per pixel (blue, green, red, unused), rows top to bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bgrx {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub data: Vec<u8>,
}

/// The virtual screen: protocol coordinates are relative to its top-left corner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScreenGeometry {
    /// `SM_XVIRTUALSCREEN`.
    pub left: i32,
    /// `SM_YVIRTUALSCREEN`.
    pub top: i32,
    /// `SM_CXVIRTUALSCREEN`.
    pub width: u32,
    /// `SM_CYVIRTUALSCREEN`.
    pub height: u32,
}

/// One top-level window as Win32 reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WinWindow {
    /// The handle.
    pub hwnd: u32,
    /// `GetWindowThreadProcessId`.
    pub pid: u32,
    /// `GetClassNameW`.
    pub class: String,
    /// `GetWindowTextW`.
    pub title: String,
    /// `GetWindowRect`, in protocol (virtual-screen-relative) coordinates.
    pub rect: WindowRect,
    /// `IsWindowVisible`.
    pub visible: bool,
    /// `IsIconic`.
    pub iconic: bool,
    /// `IsZoomed`.
    pub zoomed: bool,
    /// Whether it has an owner window (`GW_OWNER`): dialogs and owned popups.
    pub owned: bool,
    /// Whether its style has `WS_POPUP`.
    pub popup: bool,
}

/// One input primitive; each is one `SendInput` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Move the pointer to a protocol point (absolute, virtual desktop).
    MoveTo {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
    },
    /// A button down or up at the pointer.
    Button {
        /// Which.
        button: Button,
        /// Down or up.
        down: bool,
    },
    /// Wheel notches at the pointer (positive: away from the user, or right).
    Wheel {
        /// The horizontal wheel.
        horizontal: bool,
        /// Notches of `WHEEL_DELTA` each.
        notches: i32,
    },
    /// A virtual key down or up.
    Key {
        /// The virtual-key code.
        vk: u16,
        /// Sent with `KEYEVENTF_EXTENDEDKEY` (navigation keys, keypad divide, the menu key).
        extended: bool,
        /// Down or up.
        down: bool,
    },
    /// One UTF-16 unit typed with `KEYEVENTF_UNICODE`, down or up.
    Unicode {
        /// The unit.
        unit: u16,
        /// Down or up.
        down: bool,
    },
    /// Sleep between steps of a timed gesture (no input).
    Pause {
        /// Milliseconds.
        ms: u32,
    },
}

/// The operating system as the worker uses it.
pub trait Platform {
    /// The virtual screen.
    fn screen(&mut self) -> Result<ScreenGeometry, WinError>;
    /// Captures the whole virtual screen.
    fn capture(&mut self) -> Result<Bgrx, WinError>;
    /// The path captures take now, as `hello` reports it (`dxgi` or `gdi`: see
    /// `crate::capturer`).
    fn capture_path(&mut self) -> &'static str;
    /// Sends one step (a `Pause` sleeps).
    fn send(&mut self, step: &Step) -> Result<(), WinError>;
    /// Whether a virtual key or mouse button is down (`GetAsyncKeyState`).
    fn key_down(&mut self, vk: u16) -> Result<bool, WinError>;
    /// The pointer, in protocol coordinates.
    fn cursor(&mut self) -> Result<(i64, i64), WinError>;
    /// The foreground window, if any.
    fn foreground(&mut self) -> Result<Option<u32>, WinError>;
    /// The window with keyboard focus in the foreground thread, if any.
    fn focused(&mut self) -> Result<Option<u32>, WinError>;
    /// The top-level (root ancestor) window at a protocol point, if any.
    fn window_at(&mut self, x: u32, y: u32) -> Result<Option<u32>, WinError>;
    /// One window's facts; `None` when the handle is no longer a window.
    fn window(&mut self, hwnd: u32) -> Result<Option<WinWindow>, WinError>;
    /// Every top-level window, in z-order (topmost first).
    fn top_level_windows(&mut self) -> Result<Vec<WinWindow>, WinError>;
    /// Asks a window to maximize (`ShowWindow(SW_MAXIMIZE)`).
    fn maximize(&mut self, hwnd: u32) -> Result<(), WinError>;
    /// The primary monitor's work area (`SPI_GETWORKAREA`), in protocol coordinates.
    fn work_area(&mut self) -> Result<WindowRect, WinError>;
    /// What `hello` reports as the server vendor (the Windows or Wine version).
    fn vendor(&mut self) -> String;
    /// Milliseconds on a monotonic clock.
    fn now_ms(&mut self) -> u64;
    /// Sleeps.
    fn sleep_ms(&mut self, ms: u64);
}

/// Milliseconds since the Unix epoch (event and frame timestamps).
pub fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
