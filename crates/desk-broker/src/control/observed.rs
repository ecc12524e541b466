//! The control state's in-memory records, beside the durable part: the geometry of each
//! screenshot handed out (`shots.rs`) and the current accessibility observation (`ax.rs`),
//! both kept under the scope they were issued in.

use desk_contract::DisplaySize;
use desk_contract::a11y::AxTree;
use desk_contract::api::Screenshot;
use desk_contract::control::PixelRect;
use desk_desktop::SessionDir;

use super::Controls;
use super::ax::Observation;
use super::scope::Scope;
use super::shots::{Geometry, new_screenshot_id};
use crate::error::BrokerError;
use crate::ids::SessionId;

impl Controls {
    /// Gives `screenshot` its id and geometry (the whole image shows the whole display) and
    /// records that geometry under the session's current scope.
    pub(crate) fn identify(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        screenshot: &mut Screenshot,
        display: DisplaySize,
    ) -> Result<(), BrokerError> {
        let bounds = PixelRect {
            x: 0,
            y: 0,
            width: display.width,
            height: display.height,
        };
        self.identify_region(session_id, dir, screenshot, bounds)
    }

    /// Gives `screenshot` its id and geometry (the whole image shows the screen region
    /// `bounds`, a zoom's) and records that geometry under the session's current scope.
    pub(crate) fn identify_region(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        screenshot: &mut Screenshot,
        bounds: PixelRect,
    ) -> Result<(), BrokerError> {
        if screenshot.width == 0 || screenshot.height == 0 {
            return Err(BrokerError::Internal(
                "a screenshot without pixels has no geometry".to_string(),
            ));
        }
        let id = new_screenshot_id()?;
        let content = PixelRect {
            x: 0,
            y: 0,
            width: screenshot.width,
            height: screenshot.height,
        };
        self.with(session_id, dir, |state| {
            let scope = state.scope();
            state.shots.push(Geometry {
                id: id.clone(),
                scope,
                image: (screenshot.width, screenshot.height),
                content,
                bounds,
            });
            Ok(())
        })?;
        screenshot.screenshot_id = Some(id);
        screenshot.image_content_rect = Some(content);
        screenshot.image_global_bounds = Some(bounds);
        Ok(())
    }

    /// The geometry of screenshot `id`, which must have been issued under `scope`.
    pub(crate) fn geometry(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        id: &str,
        scope: Scope,
    ) -> Result<Geometry, BrokerError> {
        self.with(session_id, dir, |state| state.shots.find(id, scope))
    }
}

impl Controls {
    /// Records `tree` as the session's current observation, under the current scope.
    pub(crate) fn observed(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        tree: &AxTree,
    ) -> Result<(), BrokerError> {
        self.with(session_id, dir, |state| {
            state.ax = Some(Observation {
                id: tree.observation_id.clone(),
                scope: state.scope(),
                windows: tree.nodes.iter().map(|node| node.window).collect(),
            });
            Ok(())
        })
    }

    /// The session's current observation, if any.
    pub(crate) fn observation(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
    ) -> Result<Option<Observation>, BrokerError> {
        self.with(session_id, dir, |state| Ok(state.ax.clone()))
    }
}
