//! The Windows desktop worker: the same JSON-line worker protocol as `deskbroker-worker`
//! (`docs/worker-protocol.md`), served over stdin/stdout on a Windows desktop with Win32
//! (`SendInput`, DXGI Desktop Duplication with the GDI `BitBlt` fallback, `EnumWindows`). A
//! first slice: `docs/windows.md` lists what it does and what remains.
//!
//! Invariants: the protocol, the input plan, the chord refusal, the settle loop and the PNG
//! encoder are platform-neutral and unit-tested on Linux against a fake [`Platform`]; only
//! `win32` (compiled on Windows alone) calls the operating system, and only it holds `unsafe`.
//! Every input an `execute` sends is planned and checked first (points on the display, no
//! refused chord), so a refusal sends nothing; held keys and buttons are released after every
//! action, after a failed one, and when the client goes away. Every operation this slice does
//! not implement answers an explicit error, never a silent success.
#![cfg_attr(not(windows), forbid(unsafe_code))]

pub mod capturer;
pub mod encode;
pub mod error;
pub mod plan;
pub mod platform;
pub mod settle;
#[cfg(windows)]
pub mod win32;
pub mod worker;

pub use error::WinError;
pub use platform::{Bgrx, Platform, ScreenGeometry, Step, WinWindow};
pub use worker::{Ended, Worker};

#[cfg(test)]
mod tests;
