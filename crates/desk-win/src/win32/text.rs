//! Text a test or `hello` reads from the system: an edit control's text (`WM_GETTEXT`, for the
//! `text` witness command) and the vendor string (Wine's `wine_get_version` when present).

use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
use windows_sys::Win32::UI::WindowsAndMessaging::{
    FindWindowExW, FindWindowW, SMTO_ABORTIFHUNG, SendMessageTimeoutW, WM_GETTEXT, WM_GETTEXTLENGTH,
};

use super::last_error::last_error;
use crate::error::WinError;

fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(std::iter::once(0)).collect()
}

/// The text of the first `Edit` child of the first top-level window of `class`.
pub(crate) fn edit_text(class: &str) -> Result<String, WinError> {
    let class = wide(class);
    let edit = wide("Edit");
    // SAFETY: both strings are NUL-terminated UTF-16 that outlive the calls.
    let edit_hwnd = unsafe {
        let top = FindWindowW(class.as_ptr(), std::ptr::null());
        if top.is_null() {
            return Err(last_error("FindWindowW"));
        }
        FindWindowExW(top, std::ptr::null_mut(), edit.as_ptr(), std::ptr::null())
    };
    if edit_hwnd.is_null() {
        return Err(last_error("FindWindowExW(Edit)"));
    }
    let mut length: usize = 0;
    // SAFETY: WM_GETTEXTLENGTH takes no buffers; `length` receives the result.
    let ok = unsafe {
        SendMessageTimeoutW(
            edit_hwnd,
            WM_GETTEXTLENGTH,
            0,
            0,
            SMTO_ABORTIFHUNG,
            5_000,
            &mut length,
        )
    };
    if ok == 0 {
        return Err(last_error("SendMessageTimeoutW(WM_GETTEXTLENGTH)"));
    }
    let mut buffer = vec![0u16; length + 1];
    let mut copied: usize = 0;
    // SAFETY: the buffer holds `length + 1` units, which is the size passed; the system
    // marshals WM_GETTEXT across processes.
    let ok = unsafe {
        SendMessageTimeoutW(
            edit_hwnd,
            WM_GETTEXT,
            buffer.len(),
            buffer.as_mut_ptr() as isize,
            SMTO_ABORTIFHUNG,
            5_000,
            &mut copied,
        )
    };
    if ok == 0 {
        return Err(last_error("SendMessageTimeoutW(WM_GETTEXT)"));
    }
    Ok(String::from_utf16_lossy(&buffer[..copied.min(length)]))
}

/// `Wine <version>` under Wine, else `Windows`.
pub(crate) fn vendor() -> String {
    let ntdll = wide("ntdll.dll");
    // SAFETY: a NUL-terminated module name and a NUL-terminated export name.
    let export = unsafe {
        let module = GetModuleHandleW(ntdll.as_ptr());
        if module.is_null() {
            return "Windows".into();
        }
        GetProcAddress(module, c"wine_get_version".as_ptr().cast())
    };
    let Some(export) = export else {
        return "Windows".into();
    };
    // SAFETY: Wine's `wine_get_version` takes nothing and returns a static C string.
    let version = unsafe {
        let get_version: unsafe extern "C" fn() -> *const core::ffi::c_char =
            std::mem::transmute(export);
        let pointer = get_version();
        if pointer.is_null() {
            return "Wine".into();
        }
        std::ffi::CStr::from_ptr(pointer)
            .to_string_lossy()
            .into_owned()
    };
    format!("Wine {version}")
}
