//! How the watchdog runs ([`WatchdogConfig`]) and when it kills ([`due`], with the refused-action
//! count the broker records): what the watchdog's loop and its readback share, naming neither.

use std::path::PathBuf;
use std::time::Duration;

use super::identity::WatchdogIdentity;
use crate::config::SessionLimits;
use crate::kill::{Limit, SessionFacts};

/// How the watchdog runs.
#[derive(Debug, Clone)]
pub struct WatchdogConfig {
    /// The broker's state directory.
    pub state_dir: PathBuf,
    /// The operator's limits (flags); the watchdog tightens them by the signed policy it
    /// verifies itself ([`crate::policy::watchdog_policy`]).
    pub limits: SessionLimits,
    /// The operator's signed policy (`None`: the broker's signed default in the state
    /// directory).
    pub policy: Option<crate::config::PolicyConfig>,
    /// How long past its lease expiry a session is killed when no broker released it.
    pub lease_grace: Duration,
    /// The broker process (pid), watched to know when to exit.
    pub broker_pid: Option<u32>,
    /// How often sessions are checked.
    pub interval: Duration,
    /// Whose uid the watchdog runs under (stamped in its readback).
    pub identity: WatchdogIdentity,
}

/// Which limit, if any, `facts` reached at `now_ms` with `refused` refused actions.
pub(crate) fn due(
    facts: &SessionFacts,
    refused: u64,
    limits: &SessionLimits,
    lease_grace: Duration,
    now_ms: u64,
) -> Option<(Limit, String)> {
    let ms = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if now_ms > facts.expires_at_ms.saturating_add(ms(lease_grace)) {
        return Some((
            Limit::LeaseExpiry,
            "the lease expired and no broker released it".to_string(),
        ));
    }
    if let (Some(max_task), Some(handoff)) = (limits.max_task, facts.handoff_ms)
        && now_ms >= handoff.saturating_add(ms(max_task))
    {
        return Some((
            Limit::MaxTaskMinutes,
            format!(
                "task time limit reached ({} ms since handoff)",
                now_ms - handoff
            ),
        ));
    }
    if let Some(max_refused) = limits.max_refused_actions
        && refused >= max_refused
    {
        return Some((
            Limit::MaxRefusedActions,
            format!("refused-action limit reached ({refused} refused)"),
        ));
    }
    if let (Some(idle_limit), Some(handoff)) = (limits.idle_limit, facts.handoff_ms)
        && !facts.action_in_flight
    {
        let since = facts.last_action_end_ms.unwrap_or(handoff).max(handoff);
        if now_ms >= since.saturating_add(ms(idle_limit)) {
            return Some((
                Limit::IdleLimit,
                format!("idle limit reached ({} ms idle)", now_ms - since),
            ));
        }
    }
    None
}

/// The refused-action count the broker recorded for a session (0 when none).
pub(crate) fn refused_actions(session_dir: &desk_desktop::SessionDir) -> u64 {
    std::fs::read_to_string(session_dir.refused_actions_file())
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0)
}
