//! One [`Step`] as one `SendInput` call: absolute pointer moves over the virtual desktop,
//! buttons, wheels, virtual keys and Unicode units.
//!
//! Invariant: a step either went in whole (`SendInput` inserted its one event) or is an error
//! naming the call.

use desk_contract::Button;
use windows_sys::Win32::UI::Input::KeyboardAndMouse::{
    INPUT, INPUT_0, INPUT_KEYBOARD, INPUT_MOUSE, KEYBDINPUT, KEYEVENTF_EXTENDEDKEY,
    KEYEVENTF_KEYUP, KEYEVENTF_UNICODE, MOUSEEVENTF_ABSOLUTE, MOUSEEVENTF_HWHEEL,
    MOUSEEVENTF_LEFTDOWN, MOUSEEVENTF_LEFTUP, MOUSEEVENTF_MIDDLEDOWN, MOUSEEVENTF_MIDDLEUP,
    MOUSEEVENTF_MOVE, MOUSEEVENTF_RIGHTDOWN, MOUSEEVENTF_RIGHTUP, MOUSEEVENTF_VIRTUALDESK,
    MOUSEEVENTF_WHEEL, MOUSEINPUT, SendInput,
};

use super::last_error::last_error;
use crate::error::WinError;
use crate::plan::normalized;
use crate::platform::{ScreenGeometry, Step};

/// One notch of the wheel.
const WHEEL_DELTA: i32 = 120;

fn mouse(dx: i32, dy: i32, data: u32, flags: u32) -> INPUT {
    INPUT {
        r#type: INPUT_MOUSE,
        Anonymous: INPUT_0 {
            mi: MOUSEINPUT {
                dx,
                dy,
                mouseData: data,
                dwFlags: flags,
                time: 0,
                dwExtraInfo: 0,
            },
        },
    }
}

fn keyboard(vk: u16, scan: u16, flags: u32) -> INPUT {
    INPUT {
        r#type: INPUT_KEYBOARD,
        Anonymous: INPUT_0 {
            ki: KEYBDINPUT {
                wVk: vk,
                wScan: scan,
                dwFlags: flags,
                time: 0,
                dwExtraInfo: 0,
            },
        },
    }
}

/// Sends one step.
pub(crate) fn send(step: &Step, screen: &ScreenGeometry) -> Result<(), WinError> {
    let input = match *step {
        Step::Pause { ms } => {
            std::thread::sleep(std::time::Duration::from_millis(u64::from(ms)));
            return Ok(());
        }
        Step::MoveTo { x, y } => mouse(
            normalized(x, screen.width),
            normalized(y, screen.height),
            0,
            MOUSEEVENTF_MOVE | MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK,
        ),
        Step::Button { button, down } => {
            let flags = match (button, down) {
                (Button::Left, true) => MOUSEEVENTF_LEFTDOWN,
                (Button::Left, false) => MOUSEEVENTF_LEFTUP,
                (Button::Right, true) => MOUSEEVENTF_RIGHTDOWN,
                (Button::Right, false) => MOUSEEVENTF_RIGHTUP,
                (Button::Middle, true) => MOUSEEVENTF_MIDDLEDOWN,
                (Button::Middle, false) => MOUSEEVENTF_MIDDLEUP,
            };
            mouse(0, 0, 0, flags)
        }
        Step::Wheel {
            horizontal,
            notches,
        } => {
            let flags = if horizontal {
                MOUSEEVENTF_HWHEEL
            } else {
                MOUSEEVENTF_WHEEL
            };
            // The wheel amount is a signed value carried in the unsigned field.
            mouse(0, 0, notches.saturating_mul(WHEEL_DELTA) as u32, flags)
        }
        Step::Key { vk, extended, down } => {
            let mut flags = if down { 0 } else { KEYEVENTF_KEYUP };
            if extended {
                flags |= KEYEVENTF_EXTENDEDKEY;
            }
            keyboard(vk, 0, flags)
        }
        Step::Unicode { unit, down } => {
            let flags = KEYEVENTF_UNICODE | if down { 0 } else { KEYEVENTF_KEYUP };
            keyboard(0, unit, flags)
        }
    };
    // SAFETY: one initialized INPUT, its size as the call requires.
    let n_sent = unsafe { SendInput(1, &input, std::mem::size_of::<INPUT>() as i32) };
    if n_sent == 1 {
        Ok(())
    } else {
        Err(last_error("SendInput"))
    }
}
