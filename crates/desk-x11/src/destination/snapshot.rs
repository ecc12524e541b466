//! The background scan's hand-back and the snapshot a session keeps of it (`accessible.rs`
//! starts the scan after a settle and collects it at the next checked input), apart from the
//! check so that the session's state names it without naming the check.

use std::sync::mpsc;
use std::time::Instant;

use desk_a11y::{Accessibility, GuardView};
use x11rb::protocol::xproto::Window;

/// What the background scan hands back: its connection (kept for the next scan) and its view.
pub(super) struct Scanned {
    pub(super) a11y: Accessibility,
    pub(super) view: Result<GuardView, String>,
    /// When the scan ended.
    pub(super) taken: Instant,
}

/// The scan started after a settle and what its view depends on.
#[derive(Debug)]
pub(crate) struct GuardSnapshot {
    /// Where the scan answers (once).
    pub(super) scanned: mpsc::Receiver<Scanned>,
    /// The app it scans.
    pub(super) app_pid: u32,
    /// The window holding the X input focus when it started (`None`: none or PointerRoot).
    pub(super) focus: Option<Window>,
}

impl std::fmt::Debug for Scanned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanned")
            .field("view", &self.view)
            .finish_non_exhaustive()
    }
}
