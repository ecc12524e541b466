//! Screenshot identity and geometry: every screenshot the broker hands out gets a random
//! `screenshot_id`, its `image_content_rect` (image pixels that show the screen) and
//! `image_global_bounds` (the screen region they show). The broker keeps that geometry, never
//! the pixels, for the last [`HISTORY`] images, tagged with the control generation and target
//! revision they were issued under; naming an image in a request makes it the most recent.
//!
//! A program naming a `screenshot_id` has its coordinates checked against that geometry and
//! mapped to the screen exactly once ([`Geometry::to_screen`]): an id not in the history is
//! `screenshot_unknown`, one from another generation or revision `screenshot_stale`, a point in
//! the padding or beyond the image `point_outside_image`. Nothing is ever clamped.

use std::collections::VecDeque;

use desk_contract::ErrorCode;
use desk_contract::control::PixelRect;

use super::scope::{Scope, refusal};
use crate::error::BrokerError;

/// Geometry entries kept per session.
pub(crate) const HISTORY: usize = 16;

/// The geometry of one issued screenshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) id: String,
    pub(crate) scope: Scope,
    /// The image's size in pixels.
    pub(crate) image: (u32, u32),
    pub(crate) content: PixelRect,
    pub(crate) bounds: PixelRect,
}

/// The last [`HISTORY`] geometries of a session, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    entries: VecDeque<Geometry>,
}

pub(super) fn new_screenshot_id() -> Result<String, BrokerError> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).map_err(|error| {
        BrokerError::Internal(format!("failed to draw a screenshot id: {error}"))
    })?;
    Ok(format!("shot_{}", hex::encode(bytes)))
}

impl History {
    pub(super) fn push(&mut self, geometry: Geometry) {
        if self.entries.len() == HISTORY {
            self.entries.pop_front();
        }
        self.entries.push_back(geometry);
    }

    /// The geometry of `id`, which must have been issued under `scope`. A found image becomes
    /// the most recently used: a batch of actions all read from one image keeps it in the
    /// history however many frames its items return.
    pub(super) fn find(&mut self, id: &str, scope: Scope) -> Result<Geometry, BrokerError> {
        let Some(position) = self.entries.iter().position(|entry| entry.id == id) else {
            return Err(refusal(
                ErrorCode::ScreenshotUnknown,
                format!(
                    "screenshot_id {:?} is not among the session's last {HISTORY} screenshots",
                    desk_contract::strict::clip(id)
                ),
            ));
        };
        let Some(found) = self.entries.remove(position) else {
            return Err(BrokerError::Internal(
                "a screenshot geometry vanished".to_string(),
            ));
        };
        self.entries.push_back(found.clone());
        if found.scope != scope {
            return Err(refusal(
                ErrorCode::ScreenshotStale,
                format!(
                    "screenshot_id {id:?} was taken under control generation {} and target \
                     revision {}; the current ones are {} and {}",
                    found.scope.generation,
                    found.scope.target_revision,
                    scope.generation,
                    scope.target_revision
                ),
            ));
        }
        Ok(found)
    }
}

fn span(start: u32, length: u32) -> i64 {
    i64::from(start) + i64::from(length)
}

impl Geometry {
    /// Maps the image pixel `(x, y)` to the screen: refused unless it lies inside the content
    /// rectangle; scaled once from the content rectangle onto the global bounds.
    pub(crate) fn to_screen(&self, field: &str, x: i64, y: i64) -> Result<(i64, i64), BrokerError> {
        let content = self.content;
        let inside_image = x >= 0 && y >= 0;
        let inside_content = x >= i64::from(content.x)
            && y >= i64::from(content.y)
            && x < span(content.x, content.width)
            && y < span(content.y, content.height);
        if !inside_content {
            let in_image =
                inside_image && x < i64::from(self.image.0) && y < i64::from(self.image.1);
            let place = if in_image {
                "in the image's padding"
            } else {
                "outside the image"
            };
            return Err(refusal(
                ErrorCode::PointOutsideImage,
                format!(
                    "{field} ({x}, {y}) is {place}: screenshot {} shows the screen in image \
                     pixels x {}..{}, y {}..{}",
                    self.id,
                    content.x,
                    span(content.x, content.width),
                    content.y,
                    span(content.y, content.height)
                ),
            ));
        }
        let bounds = self.bounds;
        let map = |value: i64, origin: u32, from: u32, onto_origin: u32, onto: u32| {
            // Exact integer scaling; both lengths are positive (checked at issue).
            i64::from(onto_origin)
                + (value - i64::from(origin)) * i64::from(onto) / i64::from(from.max(1))
        };
        Ok((
            map(x, content.x, content.width, bounds.x, bounds.width),
            map(y, content.y, content.height, bounds.y, bounds.height),
        ))
    }
}
