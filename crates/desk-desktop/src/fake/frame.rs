//! The fake's pixels and windows as the worker reports them: a deterministic frame whose band
//! moves with every screen change, the app's window and a foreign one, the focus.

use desk_contract::desktop::{FocusFacts, Frame, WindowFacts, WindowRect};
use desk_contract::sha256_hex;

use super::{APP_WINDOW_ID, FOREIGN_WINDOW_ID, FakeDesktop, now_ms};
use crate::error::BackendError;

impl FakeDesktop {
    pub(super) fn app_window(&self, maximized: bool) -> WindowFacts {
        WindowFacts {
            window_id: APP_WINDOW_ID,
            pid: Some(4242),
            title: "fake app".to_string(),
            class: "fakeapp".to_string(),
            maximized,
            rect: WindowRect {
                x: 0,
                y: 0,
                width: self.display.width,
                height: self.display.height,
            },
            is_app: true,
        }
    }

    pub(super) fn foreign_window(&self) -> WindowFacts {
        WindowFacts {
            window_id: FOREIGN_WINDOW_ID,
            pid: Some(4343),
            title: "Save As".to_string(),
            class: "dialog".to_string(),
            maximized: false,
            rect: WindowRect {
                x: 100,
                y: 100,
                width: 400,
                height: 300,
            },
            is_app: false,
        }
    }

    pub(super) fn focus(&self) -> FocusFacts {
        let active = if self.handle.lock().foreign_window_in_front {
            self.foreign_window()
        } else {
            self.app_window(true)
        };
        FocusFacts {
            focused: Some(active.window_id),
            active: Some(active),
            pointer: self.pointer,
        }
    }

    /// Renders a deterministic frame: a background and a band whose colour and position depend
    /// on the number of screen changes (one per executed action other than `done`).
    pub(super) fn render(&mut self) -> Result<Frame, BackendError> {
        self.n_frames += 1;
        let (width, height) = (self.display.width, self.display.height);
        let step = self.n_changes;
        let shade = |offset: u64| u8::try_from((step * 37 + offset) % 256).unwrap_or(0);
        let band = [shade(0), shade(85), shade(170)];
        let band_top = u32::try_from(step % u64::from(height.max(1))).unwrap_or(0);
        let width_px = usize::try_from(width).unwrap_or(0);
        let mut pixels = Vec::with_capacity(width_px * usize::try_from(height).unwrap_or(0) * 3);
        for row in 0..height {
            let color = if row >= band_top && row < band_top.saturating_add(8) {
                band
            } else {
                [0xe0, 0xe4, 0xe8]
            };
            for _ in 0..width {
                pixels.extend_from_slice(&color);
            }
        }
        let mut png_bytes = Vec::new();
        let fail = |error: png::EncodingError| {
            BackendError::DesktopFailed(format!("failed to encode fake frame: {error}"))
        };
        {
            let mut encoder = png::Encoder::new(&mut png_bytes, width, height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_compression(png::Compression::Fast);
            let mut writer = encoder.write_header().map_err(fail)?;
            writer.write_image_data(&pixels).map_err(fail)?;
            writer.finish().map_err(fail)?;
        }
        Ok(Frame {
            sha256: sha256_hex(&png_bytes),
            png: png_bytes,
            width,
            height,
            captured_at_ms: now_ms(),
            app_maximized: true,
        })
    }
}
