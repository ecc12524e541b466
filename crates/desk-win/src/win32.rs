//! The Win32 side of the worker (compiled on Windows only): [`Win32`], the [`Platform`] on
//! `user32`/`gdi32`, and the binary's entry point. Window queries and the process entry live
//! here; input in `win32/input.rs`, capture in `win32/dxgi.rs` (DXGI Desktop Duplication) and
//! `win32/capture.rs` (GDI `BitBlt`), chosen by `crate::capturer`.
//!
//! Invariants: the only module with `unsafe` (each block with its `SAFETY:`); every call's
//! failure becomes a [`WinError::Win32`] naming the call; the process is per-monitor DPI aware
//! before the first metric is read, so protocol pixels are physical pixels.
#![allow(unsafe_code)]

use std::time::Instant;

use desk_contract::desktop::WindowRect;
use windows_sys::Win32::Foundation::{HWND, LPARAM, POINT, RECT};
use windows_sys::Win32::UI::HiDpi::{
    DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2, SetProcessDpiAwarenessContext,
};
use windows_sys::Win32::UI::Input::KeyboardAndMouse::GetAsyncKeyState;
use windows_sys::Win32::UI::WindowsAndMessaging::{
    EnumWindows, GA_ROOT, GUITHREADINFO, GW_OWNER, GWL_STYLE, GetAncestor, GetClassNameW,
    GetCursorPos, GetForegroundWindow, GetGUIThreadInfo, GetSystemMetrics, GetWindow,
    GetWindowLongW, GetWindowRect, GetWindowTextW, GetWindowThreadProcessId, IsIconic, IsWindow,
    IsWindowVisible, IsZoomed, SM_CXVIRTUALSCREEN, SM_CYVIRTUALSCREEN, SM_XVIRTUALSCREEN,
    SM_YVIRTUALSCREEN, SPI_GETWORKAREA, SW_MAXIMIZE, ShowWindow, SystemParametersInfoW, WS_POPUP,
    WindowFromPoint,
};

use crate::capturer::{CaptureSources, Capturer};
use crate::error::WinError;
use crate::platform::{Bgrx, Platform, ScreenGeometry, Step, WinWindow};
use crate::worker::Worker;

mod capture;
mod dxgi;
mod input;
mod last_error;
mod text;

pub(crate) use last_error::last_error;

/// The two capture paths over the current virtual screen.
struct Sources;

impl CaptureSources for Sources {
    type Dup = dxgi::Dxgi;
    fn open_duplication(&mut self) -> Result<dxgi::Dxgi, WinError> {
        dxgi::Dxgi::open(&Win32::geometry()?)
    }
    fn gdi(&mut self) -> Result<Bgrx, WinError> {
        capture::capture(&Win32::geometry()?)
    }
}

/// A window handle as the protocol carries it (handles are 32-bit significant).
pub(crate) fn handle_id(hwnd: HWND) -> u32 {
    hwnd as usize as u32
}

/// The handle of a protocol window id (sign-extended, as Win32 extends 32-bit handles).
pub(crate) fn handle_of(id: u32) -> HWND {
    id as i32 as isize as HWND
}

/// The Win32 platform.
pub struct Win32 {
    started: Instant,
    capturer: Capturer<dxgi::Dxgi>,
}

impl Win32 {
    /// Makes the process per-monitor DPI aware (best effort: an older system keeps its
    /// default), chooses the capture path (DXGI Desktop Duplication, else GDI; the reason for
    /// GDI goes to stderr) and starts the monotonic clock.
    pub fn new() -> Win32 {
        // SAFETY: a process-wide setting with a predefined context value; failure (already
        // set, unsupported) leaves the default awareness and is not an error here.
        unsafe {
            SetProcessDpiAwarenessContext(DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2);
        }
        Win32 {
            started: Instant::now(),
            capturer: Capturer::open(&mut Sources),
        }
    }

    fn geometry() -> Result<ScreenGeometry, WinError> {
        // SAFETY: GetSystemMetrics takes an index and returns a value; no memory is passed.
        let (left, top, width, height) = unsafe {
            (
                GetSystemMetrics(SM_XVIRTUALSCREEN),
                GetSystemMetrics(SM_YVIRTUALSCREEN),
                GetSystemMetrics(SM_CXVIRTUALSCREEN),
                GetSystemMetrics(SM_CYVIRTUALSCREEN),
            )
        };
        let (Ok(width), Ok(height)) = (u32::try_from(width), u32::try_from(height)) else {
            return Err(WinError::Win32 {
                call: "GetSystemMetrics",
                detail: format!("virtual screen of {width}x{height}"),
            });
        };
        if width == 0 || height == 0 {
            return Err(WinError::Win32 {
                call: "GetSystemMetrics",
                detail: "no virtual screen".into(),
            });
        }
        Ok(ScreenGeometry {
            left,
            top,
            width,
            height,
        })
    }

    fn rect(rect: &RECT, screen: &ScreenGeometry) -> WindowRect {
        WindowRect {
            x: rect.left - screen.left,
            y: rect.top - screen.top,
            width: u32::try_from(rect.right - rect.left).unwrap_or(0),
            height: u32::try_from(rect.bottom - rect.top).unwrap_or(0),
        }
    }
}

impl Default for Win32 {
    fn default() -> Self {
        Win32::new()
    }
}

/// Reads a window's text or class name through a UTF-16 buffer.
fn read_wide(hwnd: HWND, read: unsafe extern "system" fn(HWND, *mut u16, i32) -> i32) -> String {
    let mut buffer = [0u16; 512];
    // SAFETY: the buffer is valid for its length, which is what the call may write.
    let n_units = unsafe { read(hwnd, buffer.as_mut_ptr(), buffer.len() as i32) };
    let n_units = usize::try_from(n_units).unwrap_or(0).min(buffer.len());
    String::from_utf16_lossy(&buffer[..n_units])
}

unsafe extern "system" fn collect_window(hwnd: HWND, lparam: LPARAM) -> windows_sys::core::BOOL {
    // SAFETY: `lparam` is the `&mut Vec<HWND>` `top_level_windows` passed to EnumWindows,
    // alive and exclusively borrowed for the duration of the enumeration.
    let handles = unsafe { &mut *(lparam as *mut Vec<HWND>) };
    handles.push(hwnd);
    1
}

impl Platform for Win32 {
    fn screen(&mut self) -> Result<ScreenGeometry, WinError> {
        Win32::geometry()
    }

    fn capture(&mut self) -> Result<Bgrx, WinError> {
        self.capturer.capture(&mut Sources)
    }

    fn capture_path(&mut self) -> &'static str {
        self.capturer.path().name()
    }

    fn send(&mut self, step: &Step) -> Result<(), WinError> {
        input::send(step, &Win32::geometry()?)
    }

    fn key_down(&mut self, vk: u16) -> Result<bool, WinError> {
        // SAFETY: GetAsyncKeyState takes a key code and returns its state.
        let state = unsafe { GetAsyncKeyState(i32::from(vk)) };
        Ok(state < 0)
    }

    fn cursor(&mut self) -> Result<(i64, i64), WinError> {
        let screen = Win32::geometry()?;
        let mut point = POINT { x: 0, y: 0 };
        // SAFETY: `point` is a valid POINT for the call to fill.
        if unsafe { GetCursorPos(&mut point) } == 0 {
            return Err(last_error("GetCursorPos"));
        }
        Ok((
            i64::from(point.x) - i64::from(screen.left),
            i64::from(point.y) - i64::from(screen.top),
        ))
    }

    fn foreground(&mut self) -> Result<Option<u32>, WinError> {
        // SAFETY: no arguments; returns a handle or null.
        let hwnd = unsafe { GetForegroundWindow() };
        Ok((!hwnd.is_null()).then(|| handle_id(hwnd)))
    }

    fn focused(&mut self) -> Result<Option<u32>, WinError> {
        // SAFETY: GUITHREADINFO is plain data; zero is a valid bit pattern.
        let mut info: GUITHREADINFO = unsafe { std::mem::zeroed() };
        info.cbSize = std::mem::size_of::<GUITHREADINFO>() as u32;
        // SAFETY: thread 0 means the foreground thread; `info` is sized as the call requires.
        if unsafe { GetGUIThreadInfo(0, &mut info) } == 0 {
            return Ok(None);
        }
        Ok((!info.hwndFocus.is_null()).then(|| handle_id(info.hwndFocus)))
    }

    fn window_at(&mut self, x: u32, y: u32) -> Result<Option<u32>, WinError> {
        let screen = Win32::geometry()?;
        let point = POINT {
            x: screen
                .left
                .saturating_add(i32::try_from(x).unwrap_or(i32::MAX)),
            y: screen
                .top
                .saturating_add(i32::try_from(y).unwrap_or(i32::MAX)),
        };
        // SAFETY: WindowFromPoint takes a point by value; GetAncestor takes any handle (null
        // or stale gives null).
        let root = unsafe {
            let hwnd = WindowFromPoint(point);
            if hwnd.is_null() {
                return Ok(None);
            }
            GetAncestor(hwnd, GA_ROOT)
        };
        Ok((!root.is_null()).then(|| handle_id(root)))
    }

    fn window(&mut self, hwnd: u32) -> Result<Option<WinWindow>, WinError> {
        let handle = handle_of(hwnd);
        // SAFETY: IsWindow accepts any value and says whether it is a window.
        if unsafe { IsWindow(handle) } == 0 {
            return Ok(None);
        }
        let screen = Win32::geometry()?;
        let mut pid = 0u32;
        let mut rect = RECT {
            left: 0,
            top: 0,
            right: 0,
            bottom: 0,
        };
        // SAFETY: `handle` was a window a moment ago (a stale handle only makes these calls
        // fail, which is handled); `pid` and `rect` are valid out-parameters.
        let (visible, iconic, zoomed, owner, style, rect_ok) = unsafe {
            GetWindowThreadProcessId(handle, &mut pid);
            (
                IsWindowVisible(handle) != 0,
                IsIconic(handle) != 0,
                IsZoomed(handle) != 0,
                GetWindow(handle, GW_OWNER),
                GetWindowLongW(handle, GWL_STYLE) as u32,
                GetWindowRect(handle, &mut rect) != 0,
            )
        };
        if !rect_ok {
            return Ok(None);
        }
        Ok(Some(WinWindow {
            hwnd,
            pid,
            class: read_wide(handle, GetClassNameW),
            title: read_wide(handle, GetWindowTextW),
            rect: Win32::rect(&rect, &screen),
            visible,
            iconic,
            zoomed,
            owned: !owner.is_null(),
            popup: style & WS_POPUP != 0,
        }))
    }

    fn top_level_windows(&mut self) -> Result<Vec<WinWindow>, WinError> {
        let mut handles: Vec<HWND> = Vec::new();
        // SAFETY: the callback only pushes into `handles`, which outlives the call.
        let ok = unsafe {
            EnumWindows(
                Some(collect_window),
                &mut handles as *mut Vec<HWND> as LPARAM,
            )
        };
        if ok == 0 {
            return Err(last_error("EnumWindows"));
        }
        let mut windows = Vec::with_capacity(handles.len());
        for handle in handles {
            if let Some(window) = self.window(handle_id(handle))? {
                windows.push(window);
            }
        }
        Ok(windows)
    }

    fn maximize(&mut self, hwnd: u32) -> Result<(), WinError> {
        // SAFETY: ShowWindow on a handle; its return value is the previous visibility, not
        // an error indication.
        unsafe {
            ShowWindow(handle_of(hwnd), SW_MAXIMIZE);
        }
        Ok(())
    }

    fn work_area(&mut self) -> Result<WindowRect, WinError> {
        let screen = Win32::geometry()?;
        let mut rect = RECT {
            left: 0,
            top: 0,
            right: 0,
            bottom: 0,
        };
        // SAFETY: SPI_GETWORKAREA writes one RECT into `rect`.
        let ok = unsafe {
            SystemParametersInfoW(SPI_GETWORKAREA, 0, (&mut rect as *mut RECT).cast(), 0)
        };
        if ok == 0 {
            return Err(last_error("SystemParametersInfoW(SPI_GETWORKAREA)"));
        }
        Ok(Win32::rect(&rect, &screen))
    }

    fn vendor(&mut self) -> String {
        text::vendor()
    }

    fn now_ms(&mut self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep_ms(&mut self, ms: u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// The binary: `text CLASS`, or serve stdin/stdout (after `--launch PROGRAM ARGS...`).
pub fn main(args: &[String]) -> Result<(), WinError> {
    if let [command, class] = args
        && command == "text"
    {
        let text = text::edit_text(class)?;
        let mut stdout = std::io::stdout().lock();
        std::io::Write::write_all(&mut stdout, text.as_bytes())?;
        std::io::Write::flush(&mut stdout)?;
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("--listen") {
        return listen(args);
    }
    let mut app_pid = None;
    let mut _child = None;
    if let Some((flag, rest)) = args.split_first() {
        if flag != "--launch" || rest.is_empty() {
            return Err(WinError::Io(std::io::Error::other(format!(
                "usage: desk-win-worker [--launch PROGRAM [ARGS...]] | desk-win-worker {} | desk-win-worker text CLASS (got {args:?})",
                desk_worker_io::listen::USAGE
            ))));
        }
        let child = std::process::Command::new(&rest[0])
            .args(&rest[1..])
            .spawn()?;
        eprintln!("launched pid {}", child.id());
        app_pid = Some(child.id());
        _child = Some(child);
    }
    let mut worker = Worker::new(Win32::new(), app_pid);
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    worker.serve(stdin.lock(), stdout.lock())?;
    Ok(())
}

/// `--listen tcp://HOST:PORT --cert --key --client-ca [--launch ...]`: serves brokers over TCP
/// with mutual TLS, one at a time, until `shutdown` (`desk_worker_io::listen`); the launched
/// app's pid is `hello`'s `app_pid`.
fn listen(args: &[String]) -> Result<(), WinError> {
    let transport =
        |error: desk_worker_io::WorkerIoError| WinError::Io(std::io::Error::other(error));
    let listen = desk_worker_io::ListenArgs::parse(args).map_err(transport)?;
    let (listener, config) = listen.bind().map_err(transport)?;
    let mut child = None;
    if let Some((program, rest)) = listen.launch.split_first() {
        let launched = std::process::Command::new(program).args(rest).spawn()?;
        eprintln!("launched pid {}", launched.id());
        child = Some(launched);
    }
    let app_pid = child.as_ref().map(std::process::Child::id);
    let identity = desk_worker_io::Identity::mint(app_pid).map_err(transport)?;
    let mut worker = Worker::new(Win32::new(), app_pid);
    let served = desk_worker_io::listen::serve(listener, config, &identity, &mut worker);
    if let Err(error) = worker.release_held() {
        eprintln!("desk-win-worker: failed to release held input at the end: {error}");
    }
    served.map_err(transport)
}
