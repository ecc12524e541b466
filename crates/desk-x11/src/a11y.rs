//! The worker's accessibility requests: the app's AT-SPI tree through `desk-a11y`, read on the
//! session's private bus (`DBUS_SESSION_BUS_ADDRESS`, set by the launcher).

use desk_a11y::{A11yError, Accessibility};
use desk_contract::a11y::{AxLimits, AxTree};

use crate::error::X11Error;
use crate::session::X11Session;

impl X11Session {
    /// Drops the current accessibility observation (a new app is about to start).
    pub fn invalidate_accessibility(&mut self) -> &mut X11Session {
        if let Some(a11y) = &mut self.a11y {
            a11y.invalidate();
        }
        self
    }

    fn accessibility_handle(&mut self) -> Result<&mut Accessibility, X11Error> {
        if self.a11y.is_none() {
            self.a11y = Some(Accessibility::new()?);
        }
        self.a11y
            .as_mut()
            .ok_or_else(|| X11Error::Accessibility(A11yError::Unavailable("no handle".into())))
    }

    /// The app's tree within `limits`; it becomes the current observation.
    pub fn accessibility(&mut self, limits: AxLimits) -> Result<AxTree, X11Error> {
        let pid = self.app_pid().ok_or_else(|| {
            X11Error::Accessibility(A11yError::AppNotRegistered(
                "no app has been started on this desktop".to_string(),
            ))
        })?;
        let tree = self.accessibility_handle()?.snapshot(pid, limits)?;
        tracing::info!(
            observation = %tree.observation_id,
            nodes = tree.nodes.len(),
            truncated = tree.truncated,
            elapsed_ms = tree.elapsed_ms,
            "accessibility snapshot"
        );
        Ok(tree)
    }
}
