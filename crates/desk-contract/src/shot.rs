//! [`CarriesShot`]: the answers that hand out at most one screenshot, and where each keeps it.
//! One home for the broker (ledger, replay, screenshot gate), desk-server's answer writer and
//! desk-client's binary reader.

use crate::api::{ActionResponse, ResetResponse, Screenshot};
use crate::control::ProgramResponse;

/// An answer that hands out at most one screenshot.
pub trait CarriesShot: serde::Serialize {
    /// The screenshot, when the answer has one.
    fn screenshot(&self) -> Option<&Screenshot>;
    /// The same, to move its bytes.
    fn screenshot_mut(&mut self) -> Option<&mut Screenshot>;
}

impl CarriesShot for Screenshot {
    fn screenshot(&self) -> Option<&Screenshot> {
        Some(self)
    }
    fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
        Some(self)
    }
}

impl CarriesShot for ResetResponse {
    fn screenshot(&self) -> Option<&Screenshot> {
        Some(&self.screenshot)
    }
    fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
        Some(&mut self.screenshot)
    }
}

impl CarriesShot for ActionResponse {
    fn screenshot(&self) -> Option<&Screenshot> {
        self.screenshot.as_ref()
    }
    fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
        self.screenshot.as_mut()
    }
}

impl CarriesShot for ProgramResponse {
    fn screenshot(&self) -> Option<&Screenshot> {
        self.screenshot.as_ref()
    }
    fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
        self.screenshot.as_mut()
    }
}
