//! DXGI Desktop Duplication of the one output that is the whole virtual screen: a Direct3D 11
//! device on the adapter that drives it, `IDXGIOutput1::DuplicateOutput`, and each frame copied
//! from the desktop texture into a CPU-readable staging texture, then out as BGRX rows.
//!
//! Invariants: it opens only when one output (of any adapter) covers exactly the virtual
//! screen, unrotated (several monitors or a rotated one stay on GDI, which `capturer.rs` falls
//! back to); a frame is copied only as `B8G8R8A8` of the
//! screen's size; every acquired frame is released (`Acquired`'s drop), every map unmapped.

use windows::Win32::Foundation::HMODULE;
use windows::Win32::Graphics::Direct3D::D3D_DRIVER_TYPE_UNKNOWN;
use windows::Win32::Graphics::Direct3D11::{
    D3D11_CPU_ACCESS_READ, D3D11_CREATE_DEVICE_BGRA_SUPPORT, D3D11_MAP_READ,
    D3D11_MAPPED_SUBRESOURCE, D3D11_SDK_VERSION, D3D11_TEXTURE2D_DESC, D3D11_USAGE_STAGING,
    D3D11CreateDevice, ID3D11Device, ID3D11DeviceContext, ID3D11Texture2D,
};
use windows::Win32::Graphics::Dxgi::Common::{
    DXGI_FORMAT_B8G8R8A8_UNORM, DXGI_MODE_ROTATION_IDENTITY, DXGI_MODE_ROTATION_UNSPECIFIED,
    DXGI_SAMPLE_DESC,
};
use windows::Win32::Graphics::Dxgi::{
    CreateDXGIFactory1, DXGI_ERROR_ACCESS_LOST, DXGI_ERROR_WAIT_TIMEOUT, DXGI_OUTDUPL_FRAME_INFO,
    IDXGIAdapter1, IDXGIFactory1, IDXGIOutput, IDXGIOutput1, IDXGIOutputDuplication, IDXGIResource,
};
use windows::core::Interface;

use crate::capturer::{Duplicated, Duplication};
use crate::error::WinError;
use crate::platform::{Bgrx, ScreenGeometry};

/// How long a request waits for a frame when the caller holds none (the first frame after
/// opening is the current desktop, delivered at once).
const FIRST_FRAME_WAIT_MS: u32 = 500;

fn com_error(call: &'static str) -> impl FnOnce(windows::core::Error) -> WinError {
    move |error| WinError::Win32 {
        call,
        detail: format!("{} ({:#010x})", error.message(), error.code().0),
    }
}

/// An open duplication with its device and staging texture.
pub(crate) struct Dxgi {
    context: ID3D11DeviceContext,
    device: ID3D11Device,
    duplication: IDXGIOutputDuplication,
    staging: Option<ID3D11Texture2D>,
    screen: ScreenGeometry,
}

/// An acquired frame, released on drop.
struct Acquired<'a>(&'a IDXGIOutputDuplication);

impl Drop for Acquired<'_> {
    fn drop(&mut self) {
        // SAFETY: called once for the frame AcquireNextFrame handed out; a failure (the
        // duplication already lost) leaves nothing to release.
        let _ = unsafe { self.0.ReleaseFrame() };
    }
}

/// The adapter and output whose desktop rectangle is exactly the virtual screen, unrotated.
fn find_output(screen: &ScreenGeometry) -> Result<(IDXGIAdapter1, IDXGIOutput), WinError> {
    // SAFETY: creates a factory object, owned by the returned interface.
    let factory: IDXGIFactory1 =
        unsafe { CreateDXGIFactory1() }.map_err(com_error("CreateDXGIFactory1"))?;
    // Past the last adapter or output the calls fail with DXGI_ERROR_NOT_FOUND.
    let mut adapter_index = 0;
    // SAFETY: a COM call on a live interface returning an owned reference.
    while let Ok(adapter) = unsafe { factory.EnumAdapters1(adapter_index) } {
        adapter_index += 1;
        let mut output_index = 0;
        // SAFETY: as above.
        while let Ok(output) = unsafe { adapter.EnumOutputs(output_index) } {
            output_index += 1;
            // SAFETY: as above.
            let desc = unsafe { output.GetDesc() }.map_err(com_error("IDXGIOutput::GetDesc"))?;
            let rect = desc.DesktopCoordinates;
            let whole_screen = desc.AttachedToDesktop.as_bool()
                && rect.left == screen.left
                && rect.top == screen.top
                && i64::from(rect.right) - i64::from(rect.left) == i64::from(screen.width)
                && i64::from(rect.bottom) - i64::from(rect.top) == i64::from(screen.height);
            if !whole_screen {
                continue;
            }
            if desc.Rotation != DXGI_MODE_ROTATION_IDENTITY
                && desc.Rotation != DXGI_MODE_ROTATION_UNSPECIFIED
            {
                return Err(WinError::Win32 {
                    call: "IDXGIOutput::GetDesc",
                    detail: format!("the output is rotated ({})", desc.Rotation.0),
                });
            }
            return Ok((adapter, output));
        }
    }
    Err(WinError::Win32 {
        call: "EnumOutputs",
        detail: format!(
            "no output is the whole virtual screen {}x{} at ({}, {}) (several monitors, or none \
             attached)",
            screen.width, screen.height, screen.left, screen.top
        ),
    })
}

impl Dxgi {
    /// Opens a duplication of the output that is the whole virtual screen, on the adapter that
    /// drives it.
    pub(crate) fn open(screen: &ScreenGeometry) -> Result<Dxgi, WinError> {
        let (adapter, output) = find_output(screen)?;
        let mut device = None;
        let mut context = None;
        // SAFETY: the out-pointers are valid `Option`s the call fills; with an explicit adapter
        // the driver type must be UNKNOWN; no software module, the default feature levels.
        unsafe {
            D3D11CreateDevice(
                &adapter,
                D3D_DRIVER_TYPE_UNKNOWN,
                HMODULE::default(),
                D3D11_CREATE_DEVICE_BGRA_SUPPORT,
                None,
                D3D11_SDK_VERSION,
                Some(&mut device),
                None,
                Some(&mut context),
            )
        }
        .map_err(com_error("D3D11CreateDevice"))?;
        let (Some(device), Some(context)) = (device, context) else {
            return Err(WinError::Win32 {
                call: "D3D11CreateDevice",
                detail: "no device or context returned".into(),
            });
        };
        let output: IDXGIOutput1 = output.cast().map_err(com_error("IDXGIOutput1"))?;
        // SAFETY: a COM call on live interfaces; fails with E_ACCESSDENIED in session 0 or on
        // the secure desktop, DXGI_ERROR_UNSUPPORTED where duplication is not offered.
        let duplication =
            unsafe { output.DuplicateOutput(&device) }.map_err(com_error("DuplicateOutput"))?;
        Ok(Dxgi {
            context,
            device,
            duplication,
            staging: None,
            screen: *screen,
        })
    }

    /// The staging texture for `desc`'s size, made once.
    fn staging(&mut self, desc: &D3D11_TEXTURE2D_DESC) -> Result<ID3D11Texture2D, WinError> {
        if let Some(staging) = &self.staging {
            return Ok(staging.clone());
        }
        let staging_desc = D3D11_TEXTURE2D_DESC {
            Width: desc.Width,
            Height: desc.Height,
            MipLevels: 1,
            ArraySize: 1,
            Format: DXGI_FORMAT_B8G8R8A8_UNORM,
            SampleDesc: DXGI_SAMPLE_DESC {
                Count: 1,
                Quality: 0,
            },
            Usage: D3D11_USAGE_STAGING,
            BindFlags: 0,
            CPUAccessFlags: D3D11_CPU_ACCESS_READ.0 as u32,
            MiscFlags: 0,
        };
        let mut staging = None;
        // SAFETY: a valid description and out-pointer; no initial data.
        unsafe {
            self.device
                .CreateTexture2D(&staging_desc, None, Some(&mut staging))
        }
        .map_err(com_error("CreateTexture2D"))?;
        let staging = staging.ok_or_else(|| WinError::Win32 {
            call: "CreateTexture2D",
            detail: "no texture returned".into(),
        })?;
        self.staging = Some(staging.clone());
        Ok(staging)
    }

    /// Copies the acquired desktop texture out as BGRX.
    fn copy(&mut self, resource: &IDXGIResource) -> Result<Bgrx, WinError> {
        let texture: ID3D11Texture2D = resource.cast().map_err(com_error("ID3D11Texture2D"))?;
        let mut desc = D3D11_TEXTURE2D_DESC::default();
        // SAFETY: `desc` is a valid out-parameter.
        unsafe { texture.GetDesc(&mut desc) };
        if desc.Format != DXGI_FORMAT_B8G8R8A8_UNORM
            || desc.Width != self.screen.width
            || desc.Height != self.screen.height
        {
            return Err(WinError::Win32 {
                call: "AcquireNextFrame",
                detail: format!(
                    "the desktop image is {}x{} in format {}, not {}x{} B8G8R8A8",
                    desc.Width, desc.Height, desc.Format.0, self.screen.width, self.screen.height
                ),
            });
        }
        let staging = self.staging(&desc)?;
        // SAFETY: both textures are live, of the same size and format.
        unsafe { self.context.CopyResource(&staging, &texture) };
        let mut mapped = D3D11_MAPPED_SUBRESOURCE::default();
        // SAFETY: a CPU-readable staging texture, subresource 0, unmapped below.
        unsafe {
            self.context
                .Map(&staging, 0, D3D11_MAP_READ, 0, Some(&mut mapped))
        }
        .map_err(com_error("Map"))?;
        let row_bytes = self.screen.width as usize * 4;
        let pitch = mapped.RowPitch as usize;
        let n_rows = self.screen.height as usize;
        let mut data = Vec::with_capacity(row_bytes * n_rows);
        if pitch >= row_bytes && n_rows > 0 && !mapped.pData.is_null() {
            // SAFETY: a mapped 2D texture holds `n_rows` rows `pitch` bytes apart at `pData`,
            // each starting with its `row_bytes` of pixels, until the Unmap below; the slice
            // ends with the last row's pixels.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    mapped.pData.cast::<u8>(),
                    pitch * (n_rows - 1) + row_bytes,
                )
            };
            for row in 0..n_rows {
                data.extend_from_slice(&bytes[row * pitch..row * pitch + row_bytes]);
            }
        }
        // SAFETY: unmaps what the Map above mapped.
        unsafe { self.context.Unmap(&staging, 0) };
        if data.len() != row_bytes * n_rows {
            return Err(WinError::Win32 {
                call: "Map",
                detail: format!("row pitch {pitch} is shorter than a row of {row_bytes} bytes"),
            });
        }
        Ok(Bgrx {
            width: self.screen.width,
            height: self.screen.height,
            data,
        })
    }
}

impl Duplication for Dxgi {
    fn next_frame(&mut self, have_frame: bool) -> Result<Duplicated, WinError> {
        let wait_ms = if have_frame { 0 } else { FIRST_FRAME_WAIT_MS };
        let mut info = DXGI_OUTDUPL_FRAME_INFO::default();
        let mut resource: Option<IDXGIResource> = None;
        // SAFETY: valid out-pointers; the frame is released by `Acquired` on every path.
        let acquired = unsafe {
            self.duplication
                .AcquireNextFrame(wait_ms, &mut info, &mut resource)
        };
        match acquired {
            Err(error) if error.code() == DXGI_ERROR_WAIT_TIMEOUT => {
                return Ok(Duplicated::Unchanged);
            }
            Err(error) if error.code() == DXGI_ERROR_ACCESS_LOST => {
                return Ok(Duplicated::Lost(com_error("AcquireNextFrame")(error)));
            }
            Err(error) => return Err(com_error("AcquireNextFrame")(error)),
            Ok(()) => {}
        }
        let duplication = self.duplication.clone();
        let _release = Acquired(&duplication);
        // Only the pointer moved: the image is the one the caller holds.
        if have_frame && info.LastPresentTime == 0 {
            return Ok(Duplicated::Unchanged);
        }
        let resource = resource.ok_or_else(|| WinError::Win32 {
            call: "AcquireNextFrame",
            detail: "no desktop resource returned".into(),
        })?;
        self.copy(&resource).map(Duplicated::Frame)
    }
}
