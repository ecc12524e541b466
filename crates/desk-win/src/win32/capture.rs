//! Screen capture with GDI: `BitBlt` of the virtual screen (with `CAPTUREBLT`, so layered
//! windows are included) into a top-down 32-bit DIB section, copied out as BGRX.
//!
//! Invariant: every GDI object created here is released on every path (`Gdi`'s drop).

use windows_sys::Win32::Graphics::Gdi::{
    BI_RGB, BITMAPINFO, BITMAPINFOHEADER, BitBlt, CAPTUREBLT, CreateCompatibleDC, CreateDIBSection,
    DIB_RGB_COLORS, DeleteDC, DeleteObject, GetDC, HBITMAP, HDC, HGDIOBJ, ReleaseDC, SRCCOPY,
    SelectObject,
};

use super::last_error::last_error;
use crate::error::WinError;
use crate::platform::{Bgrx, ScreenGeometry};

/// The GDI objects of one capture, released on drop.
struct Gdi {
    screen: HDC,
    memory: HDC,
    bitmap: HBITMAP,
    previous: HGDIOBJ,
}

impl Drop for Gdi {
    fn drop(&mut self) {
        // SAFETY: each handle was created by `capture` and is released exactly once here;
        // null handles (a failed creation) are skipped.
        unsafe {
            if !self.previous.is_null() {
                SelectObject(self.memory, self.previous);
            }
            if !self.bitmap.is_null() {
                DeleteObject(self.bitmap);
            }
            if !self.memory.is_null() {
                DeleteDC(self.memory);
            }
            if !self.screen.is_null() {
                ReleaseDC(std::ptr::null_mut(), self.screen);
            }
        }
    }
}

/// Captures the virtual screen.
pub(crate) fn capture(screen: &ScreenGeometry) -> Result<Bgrx, WinError> {
    let width = i32::try_from(screen.width).map_err(|_| last_error("capture width"))?;
    let height = i32::try_from(screen.height).map_err(|_| last_error("capture height"))?;
    let mut gdi = Gdi {
        screen: std::ptr::null_mut(),
        memory: std::ptr::null_mut(),
        bitmap: std::ptr::null_mut(),
        previous: std::ptr::null_mut(),
    };
    // SAFETY: GetDC(null) is the screen's DC, released by `Gdi`.
    gdi.screen = unsafe { GetDC(std::ptr::null_mut()) };
    if gdi.screen.is_null() {
        return Err(last_error("GetDC"));
    }
    // SAFETY: a memory DC compatible with a valid DC, deleted by `Gdi`.
    gdi.memory = unsafe { CreateCompatibleDC(gdi.screen) };
    if gdi.memory.is_null() {
        return Err(last_error("CreateCompatibleDC"));
    }
    // SAFETY: BITMAPINFO is plain data; zero is a valid bit pattern.
    let mut info: BITMAPINFO = unsafe { std::mem::zeroed() };
    info.bmiHeader = BITMAPINFOHEADER {
        biSize: std::mem::size_of::<BITMAPINFOHEADER>() as u32,
        biWidth: width,
        // Negative: rows top to bottom.
        biHeight: -height,
        biPlanes: 1,
        biBitCount: 32,
        biCompression: BI_RGB,
        biSizeImage: 0,
        biXPelsPerMeter: 0,
        biYPelsPerMeter: 0,
        biClrUsed: 0,
        biClrImportant: 0,
    };
    let mut bits: *mut core::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `info` describes a 32-bit top-down DIB; `bits` receives its pixel pointer,
    // owned by the bitmap that `Gdi` deletes.
    gdi.bitmap = unsafe {
        CreateDIBSection(
            gdi.memory,
            &info,
            DIB_RGB_COLORS,
            &mut bits,
            std::ptr::null_mut(),
            0,
        )
    };
    if gdi.bitmap.is_null() || bits.is_null() {
        return Err(last_error("CreateDIBSection"));
    }
    // SAFETY: selects the bitmap into the memory DC; the previous object is restored on drop.
    gdi.previous = unsafe { SelectObject(gdi.memory, gdi.bitmap) };
    // SAFETY: both DCs are valid and the bitmap is width x height.
    let copied = unsafe {
        BitBlt(
            gdi.memory,
            0,
            0,
            width,
            height,
            gdi.screen,
            screen.left,
            screen.top,
            SRCCOPY | CAPTUREBLT,
        )
    };
    if copied == 0 {
        return Err(last_error("BitBlt"));
    }
    let n_bytes = screen.width as usize * screen.height as usize * 4;
    // SAFETY: the DIB section holds exactly width * height 32-bit pixels at `bits`, alive
    // until `gdi` drops after this copy.
    let data = unsafe { std::slice::from_raw_parts(bits.cast::<u8>(), n_bytes) }.to_vec();
    drop(gdi);
    Ok(Bgrx {
        width: screen.width,
        height: screen.height,
        data,
    })
}
