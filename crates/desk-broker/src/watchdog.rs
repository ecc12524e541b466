//! The watchdog: a process of its own (`deskbroker watchdog`, started by `serve` in its own
//! process group), so it keeps enforcing limits while the broker is stopped, hung or dead.
//!
//! Every [`WatchdogConfig::interval`] (200 ms) it reads, without the broker, every session
//! neither released nor killed (the store opened read-only: handoff time, lease expiry, the
//! last action's end, whether an action is in flight) and each session's refused-action count
//! (`<session>/refused_actions`, written by the broker, so it survives a broker restart), and
//! kills ([`crate::kill::kill_session`], the kill switch's path) a session that reached a limit
//! ([`due`]), and finishes every kill interrupted before its receipt
//! ([`crate::kill::finish_interrupted_kills`]). Each round it also takes the census of every
//! live session's sandbox (`watchdog/census.rs`, `desk_desktop::census`) and kills a session
//! running a prohibited process (`prohibited_process`). It holds `<state_dir>/watchdog.lock` (its pid inside); a newer watchdog on the
//! same state directory asks the older one to stop (SIGTERM) and takes over. It exits when the
//! state directory is gone, or when its broker is gone and no session is live.

use std::io::{Read as _, Seek as _, Write as _};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use desk_desktop::StateDir;
use desk_desktop::launcher::RecordedProcess;

use crate::config::SessionLimits;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::kill::{KillOutcome, KillSource, Limit, SessionFacts, kill_session};
use crate::util::now_ms;

pub(crate) mod census;

/// How the watchdog runs.
#[derive(Debug, Clone)]
pub struct WatchdogConfig {
    /// The broker's state directory.
    pub state_dir: PathBuf,
    /// The limits to enforce.
    pub limits: SessionLimits,
    /// How long past its lease expiry a session is killed when no broker released it.
    pub lease_grace: Duration,
    /// The evidence signing key (`None`: `<state_dir>/evidence/signing.key`).
    pub signing_key: Option<PathBuf>,
    /// The broker process (pid), watched to know when to exit.
    pub broker_pid: Option<u32>,
    /// How often sessions are checked.
    pub interval: Duration,
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

impl crate::broker::Inner {
    /// Counts one refused action of `session_id` in `<session>/refused_actions` (under a file
    /// lock: refusals of one session may run at once), then records the denial in the
    /// session's evidence (`action_refused`, with the new count) before the refusal is
    /// answered. A count or record that cannot be written is logged; the refusal itself stands
    /// (it changed nothing).
    pub(crate) fn count_refused(
        &self,
        session_id: &SessionId,
        request_id: &str,
        refusal: &BrokerError,
    ) {
        let Ok(Some(session)) = self.store.session(session_id) else {
            return;
        };
        let path = session.dir().refused_actions_file();
        let counted = crate::private::open_lock_file(&path).and_then(|mut file| {
            file.lock()?;
            let mut text = String::new();
            file.read_to_string(&mut text)?;
            let count = text.trim().parse::<u64>().unwrap_or(0).saturating_add(1);
            file.set_len(0)?;
            file.rewind()?;
            write!(file, "{count}")?;
            file.sync_all()?;
            Ok(count)
        });
        let count = match counted {
            Ok(count) => Some(count),
            Err(error) => {
                tracing::warn!(%session_id, error = %error, "failed to count a refused action");
                None
            }
        };
        let code = refusal.status_and_code().1;
        if let Err(error) =
            crate::evidence::action_refused(self.evidence(), &session, request_id, code, count)
        {
            tracing::warn!(%session_id, error = %error, "failed to record a refused action");
        }
    }
}

fn broker_process(pid: Option<u32>) -> Option<RecordedProcess> {
    let pid = pid?;
    Some(RecordedProcess {
        role: "broker".to_string(),
        pid,
        start_ticks: desk_desktop::destroy::start_time(pid)?,
    })
}

/// Takes `<state_dir>/watchdog.lock`, asking an older watchdog holding it to stop first.
fn take_lock(state: &StateDir) -> Result<std::fs::File, BrokerError> {
    let path = state.watchdog_lock();
    let mut file = crate::private::open_lock_file(&path).map_err(BrokerError::io("open", &path))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut asked = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                if !asked {
                    asked = true;
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    stop_older(text.trim().parse().ok());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(BrokerError::Internal(format!(
                    "another watchdog holds {}",
                    path.display()
                )));
            }
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(BrokerError::io("lock", &path)(error));
            }
        }
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| write!(file, "{}", std::process::id()))
        .and_then(|()| file.sync_all())
        .map_err(BrokerError::io("write", &path))?;
    Ok(file)
}

/// Sends SIGTERM to `pid` when it is a deskbroker watchdog.
fn stop_older(pid: Option<i32>) {
    let Some(pid) = pid.filter(|pid| *pid > 0) else {
        return;
    };
    let is_watchdog = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmdline| {
            cmdline
                .split(|byte| *byte == 0)
                .any(|argument| argument == b"watchdog")
        })
        .unwrap_or(false);
    if is_watchdog {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

/// Runs the watchdog until its state directory is gone, or its broker is gone and no session
/// is live. Errors of one round are logged and the next round runs.
pub fn run_watchdog(config: &WatchdogConfig) -> Result<(), BrokerError> {
    let state = StateDir::new(&config.state_dir);
    let _lock = take_lock(&state)?;
    let key = crate::evidence::load_signing_key(&config.state_dir, config.signing_key.as_deref())?;
    let broker = broker_process(config.broker_pid);
    tracing::info!(
        state_dir = %config.state_dir.display(),
        limits = ?config.limits,
        "watchdog running"
    );
    loop {
        if !config.state_dir.exists() {
            tracing::info!("state directory gone; watchdog exits");
            return Ok(());
        }
        let live = match round(&state, &key, config) {
            Ok(live) => live,
            Err(error) => {
                tracing::warn!(error = %error, "watchdog round failed");
                1
            }
        };
        if live == 0 && broker.as_ref().is_some_and(|broker| !broker.is_alive()) {
            tracing::info!("broker gone and no live session; watchdog exits");
            return Ok(());
        }
        std::thread::sleep(config.interval);
    }
}

/// One round: kills every session that reached a limit; returns how many sessions are live.
fn round(
    state: &StateDir,
    key: &desk_evidence::SigningKey,
    config: &WatchdogConfig,
) -> Result<usize, BrokerError> {
    if !state.database().exists() {
        return Ok(0);
    }
    // A kill cut between its tombstone and its receipt (its killer died) is finished here too;
    // a failure there never keeps this round from enforcing the limits.
    match crate::kill::finish_interrupted_kills(state, key) {
        Ok(receipts) => {
            for receipt in receipts {
                tracing::warn!(
                    record_id = receipt.record_id,
                    outcome = receipt.outcome,
                    "watchdog finished an interrupted kill"
                );
            }
        }
        Err(error) => tracing::error!(error = %error, "watchdog cannot finish interrupted kills"),
    }
    let sessions = crate::kill::live_sessions(&crate::kill::open_read_only(&state.database())?)?;
    let mut live = 0;
    for facts in &sessions {
        if crate::kill::read_tombstone(state, &facts.id).is_some() {
            continue;
        }
        let refused = refused_actions(&desk_desktop::SessionDir::at(&facts.session_dir));
        let Some((limit, reason)) =
            due(facts, refused, &config.limits, config.lease_grace, now_ms())
        else {
            let session_dir = desk_desktop::SessionDir::at(&facts.session_dir);
            match census::enforce(
                state,
                || Ok(key.clone()),
                &facts.id,
                &session_dir,
                "watchdog",
            ) {
                Ok(None) => live += 1,
                Ok(Some(KillOutcome::Killed(receipt))) => tracing::warn!(
                    session_id = %facts.id,
                    limit = Limit::ProhibitedProcess.as_str(),
                    outcome = receipt.outcome,
                    "watchdog killed a session"
                ),
                Ok(Some(KillOutcome::AlreadyKilled(_))) => {}
                Err(error) => {
                    live += 1;
                    tracing::error!(session_id = %facts.id, error = %error, "census kill failed");
                }
            }
            continue;
        };
        match kill_session(state, key, &facts.id, &reason, &KillSource::Watchdog(limit)) {
            Ok(KillOutcome::Killed(receipt)) => tracing::warn!(
                session_id = %facts.id,
                limit = limit.as_str(),
                outcome = receipt.outcome,
                "watchdog killed a session"
            ),
            Ok(KillOutcome::AlreadyKilled(_)) => {}
            Err(error) => {
                live += 1;
                tracing::error!(session_id = %facts.id, error = %error, "watchdog kill failed");
            }
        }
    }
    Ok(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> SessionFacts {
        SessionFacts {
            id: crate::ids::sid("s_1"),
            state: "ready".to_string(),
            session_dir: "/nonexistent".to_string(),
            next_action_index: 2,
            expires_at_ms: 100_000,
            handoff_ms: Some(10_000),
            last_action_end_ms: Some(20_000),
            action_in_flight: false,
            pending_action: None,
        }
    }

    const GRACE: Duration = Duration::from_secs(30);

    #[test]
    fn no_limit_no_kill_until_the_lease_and_its_grace_end() {
        let none = SessionLimits::default();
        assert_eq!(due(&facts(), 99, &none, GRACE, 130_000), None);
        let (limit, _) = due(&facts(), 0, &none, GRACE, 130_001).expect("due");
        assert_eq!(limit, Limit::LeaseExpiry);
    }

    #[test]
    fn each_limit_fires_at_its_threshold_and_not_before() {
        let task = SessionLimits {
            max_task: Some(Duration::from_secs(5)),
            ..SessionLimits::default()
        };
        assert_eq!(due(&facts(), 0, &task, GRACE, 14_999), None);
        assert_eq!(
            due(&facts(), 0, &task, GRACE, 15_000).map(|due| due.0),
            Some(Limit::MaxTaskMinutes)
        );
        let mut not_reset = facts();
        not_reset.handoff_ms = None;
        assert_eq!(due(&not_reset, 0, &task, GRACE, 50_000), None);

        let refused = SessionLimits {
            max_refused_actions: Some(3),
            ..SessionLimits::default()
        };
        assert_eq!(due(&facts(), 2, &refused, GRACE, 20_000), None);
        assert_eq!(
            due(&facts(), 3, &refused, GRACE, 20_000).map(|due| due.0),
            Some(Limit::MaxRefusedActions)
        );

        let idle = SessionLimits {
            idle_limit: Some(Duration::from_secs(10)),
            ..SessionLimits::default()
        };
        assert_eq!(due(&facts(), 0, &idle, GRACE, 29_999), None);
        assert_eq!(
            due(&facts(), 0, &idle, GRACE, 30_000).map(|due| due.0),
            Some(Limit::IdleLimit)
        );
        let mut busy = facts();
        busy.action_in_flight = true;
        assert_eq!(due(&busy, 0, &idle, GRACE, 60_000), None);
    }
}
