//! Screen geometry: the pinned display size and points on it.
//!
//! Screen pixels are the only coordinate space on the wire today: screenshots are returned at full
//! display resolution, so an image pixel and a screen pixel coincide. A harness that downsizes an
//! image for a model maps back to [`ScreenPoint`] before calling the broker.

use serde::{Deserialize, Serialize};

/// The size of a desktop's display in screen pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct DisplaySize {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl DisplaySize {
    /// The benchmark's pinned display size.
    pub const FULL_HD: DisplaySize = DisplaySize {
        width: 1920,
        height: 1080,
    };

    /// Whether `(x, y)` addresses a pixel of this display.
    pub fn contains(&self, x: i64, y: i64) -> bool {
        x >= 0 && y >= 0 && x < i64::from(self.width) && y < i64::from(self.height)
    }

    /// Number of pixels on the display.
    pub fn n_pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

impl std::fmt::Display for DisplaySize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// A validated point on the display, in screen pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ScreenPoint {
    /// Column, 0 at the left edge.
    pub x: u32,
    /// Row, 0 at the top edge.
    pub y: u32,
}
