//! The error of the last failed Win32 call on this thread, as a [`WinError`].

use windows_sys::Win32::Foundation::GetLastError;

use crate::error::WinError;

/// `call` failed: the thread's last-error code, named with the call.
pub(crate) fn last_error(call: &'static str) -> WinError {
    // SAFETY: GetLastError only reads the calling thread's last-error value.
    let code = unsafe { GetLastError() };
    WinError::Win32 {
        call,
        detail: format!("error {code}"),
    }
}
