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
//! running a prohibited process (`prohibited_process`). It answers operators on its own socket
//! with a signed, nonce-echoing readback of what it watches (`watchdog/readback.rs`). It holds `<state_dir>/watchdog.lock` (its pid inside); a newer watchdog on the
//! same state directory asks the older one to stop (SIGTERM) and takes over. It exits when the
//! state directory is gone, or when its broker is gone and no session is live.
//!
//! Under a root broker it runs under a uid/gid of its own (`deskbroker watchdog` drops to it
//! before this loop starts: a reserved id no host account holds, no supplementary group,
//! `CAP_KILL`, `CAP_SYS_PTRACE` and `CAP_DAC_OVERRIDE` alone, `NoNewPrivs`), owning
//! `<state_dir>.watchdog/` and its key; its readback says which ([`WatchdogIdentity`]).
//!
//! Sessions are checked and killed concurrently: each round gives every live session a job on
//! a thread of its own (at most [`MAX_PARALLEL_SESSIONS`] at once, one per session) and does
//! not wait for them, so N sessions over their limits are killed in parallel and a slow kill
//! holds back no other session.
//!
//! Its configuration and the `due` rule are in `watchdog/rules.rs`, its identity in
//! `watchdog/identity.rs`, shared with its readback and the kill path's receipts.

use std::io::{Read as _, Seek as _, Write as _};
use std::time::{Duration, Instant};

use desk_desktop::StateDir;
use desk_desktop::launcher::RecordedProcess;

use crate::config::SessionLimits;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::kill::{KillOutcome, KillSource, Limit, SessionFacts, kill_session};
use crate::util::now_ms;

pub(crate) mod census;
pub(crate) mod identity;
pub mod key;
pub mod readback;
mod rules;

pub use identity::WatchdogIdentity;
pub use rules::WatchdogConfig;
pub(crate) use rules::{due, refused_actions};

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
        let code = refusal.code();
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

/// The most sessions the watchdog checks and kills at once, each on a thread of its own; a
/// session beyond it waits for a later round. Sessions are independent: one slow kill (its
/// destruction waits up to a few seconds for processes to go) or a broker stopped inside one
/// session's records (`kill::KILL_FENCE_BOUND`) delays no other session's check or kill.
pub const MAX_PARALLEL_SESSIONS: usize = 16;

/// The sessions whose check or kill runs now (at most one job per session).
#[derive(Clone, Default)]
struct Jobs(std::sync::Arc<std::sync::Mutex<std::collections::HashSet<SessionId>>>);

impl Jobs {
    fn set(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<SessionId>> {
        // A job that panicked left the set consistent (its guard removed it on unwind).
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Removes its session from [`Jobs`] when its job ends, even by a panic.
struct JobGuard {
    jobs: Jobs,
    id: SessionId,
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        self.jobs.set().remove(&self.id);
    }
}

/// Runs the watchdog until its state directory is gone, or its broker is gone and no session
/// is live (and no kill is under way). Errors of one round are logged and the next round runs.
pub fn run_watchdog(config: &WatchdogConfig) -> Result<(), BrokerError> {
    let state = StateDir::new(&config.state_dir);
    let _lock = take_lock(&state)?;
    // Its own key, never the broker's evidence key (`watchdog/key.rs`).
    let evidence_public =
        desk_evidence::VerifyingKey::read(&crate::evidence::public_key_path(&config.state_dir))
            .ok();
    let key = crate::kill::Signer::watchdog(
        &config.state_dir,
        key::load_or_create(&config.state_dir, evidence_public.as_ref())?,
        config.identity,
    );
    let broker = broker_process(config.broker_pid);
    // The limits come from the signed policy, verified here, not from the broker: flags can
    // only tighten them. A policy that does not verify leaves the flags alone (the broker
    // then refuses every lease: nothing new starts).
    let (limits, policy_sha256) =
        match crate::policy::watchdog_policy(&config.state_dir, config.policy.as_ref()) {
            Ok(policy) => (
                config.limits.tightened_by(&policy.policy().limits()),
                Some(policy.sha256().to_string()),
            ),
            Err(error) => {
                tracing::error!(%error, "watchdog: no verified policy; enforcing the flags alone");
                (config.limits, None)
            }
        };
    let config = &WatchdogConfig {
        limits,
        ..config.clone()
    };
    readback::start(readback::Responder {
        state: state.clone(),
        key: key.key.clone(),
        policy_sha256,
        config: config.clone(),
        broker: broker.clone(),
    });
    let jobs = Jobs::default();
    tracing::info!(
        state_dir = %config.state_dir.display(),
        limits = ?config.limits,
        max_parallel = MAX_PARALLEL_SESSIONS,
        "watchdog running"
    );
    loop {
        if !config.state_dir.exists() {
            tracing::info!("state directory gone; watchdog exits");
            return Ok(());
        }
        let live = match round(&state, &key, config, &jobs) {
            Ok(live) => live,
            Err(error) => {
                tracing::warn!(error = %error, "watchdog round failed");
                1
            }
        };
        if live == 0
            && jobs.set().is_empty()
            && broker.as_ref().is_some_and(|broker| !broker.is_alive())
        {
            tracing::info!("broker gone and no live session; watchdog exits");
            return Ok(());
        }
        std::thread::sleep(config.interval);
    }
}

/// One round: starts a job ([`check_session`]) for every live session that has none running
/// (at most [`MAX_PARALLEL_SESSIONS`] at once) and returns without waiting for them; returns
/// how many sessions are live (not killed).
fn round(
    state: &StateDir,
    key: &crate::kill::Signer,
    config: &WatchdogConfig,
    jobs: &Jobs,
) -> Result<usize, BrokerError> {
    if !state.database().exists() {
        return Ok(0);
    }
    // A kill cut between its tombstone and its receipt (its killer died) is finished here too;
    // a failure there never keeps this round from enforcing the limits. A kill of this
    // watchdog's under way holds its kill lock and is skipped.
    // Kills recorded in the watchdog's own directory while the state directory could not be
    // written are handed over once it can (`kill/place.rs`).
    for id in crate::kill::hand_over(state) {
        tracing::warn!(session_id = %id, "watchdog handed a kill over to the state directory");
    }
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
    for facts in sessions {
        if crate::kill::read_tombstone(state, &facts.id).is_some() {
            continue;
        }
        live += 1;
        {
            let mut running = jobs.set();
            if running.contains(&facts.id) || running.len() >= MAX_PARALLEL_SESSIONS {
                continue;
            }
            running.insert(facts.id.clone());
        }
        let guard = JobGuard {
            jobs: jobs.clone(),
            id: facts.id.clone(),
        };
        let (state, key, limits, grace) = (
            state.clone(),
            key.clone(),
            config.limits,
            config.lease_grace,
        );
        let spawned = std::thread::Builder::new()
            .name("watchdog-session".to_string())
            .spawn(move || {
                let _guard = guard;
                check_session(&state, &key, &limits, grace, &facts);
            });
        if let Err(error) = spawned {
            // The guard went with the closure and was dropped: the next round tries again.
            tracing::error!(error = %error, "watchdog cannot start a session's check");
        }
    }
    Ok(live)
}

/// One session's job: kills it when it reached a limit ([`due`]), else takes its census and
/// kills it when a prohibited process runs. Errors are logged; the next round checks again.
fn check_session(
    state: &StateDir,
    key: &crate::kill::Signer,
    limits: &SessionLimits,
    lease_grace: Duration,
    facts: &SessionFacts,
) {
    let session_dir = desk_desktop::SessionDir::at(&facts.session_dir);
    let refused = refused_actions(&session_dir);
    let Some((limit, reason)) = due(facts, refused, limits, lease_grace, now_ms()) else {
        match census::enforce(
            state,
            || Ok(key.clone()),
            &facts.id,
            &session_dir,
            "watchdog",
        ) {
            Ok(None | Some(KillOutcome::AlreadyKilled(_))) => {}
            Ok(Some(KillOutcome::Killed(receipt))) => tracing::warn!(
                session_id = %facts.id,
                limit = Limit::ProhibitedProcess.as_str(),
                outcome = receipt.outcome,
                "watchdog killed a session"
            ),
            Err(error) => {
                tracing::error!(session_id = %facts.id, error = %error, "census kill failed");
            }
        }
        return;
    };
    match kill_session(state, key, &facts.id, &reason, &KillSource::Watchdog(limit)) {
        Ok(KillOutcome::Killed(receipt)) => tracing::warn!(
            session_id = %facts.id,
            limit = limit.as_str(),
            outcome = receipt.outcome,
            action_in_doubt = ?receipt.action_in_doubt,
            "watchdog killed a session"
        ),
        Ok(KillOutcome::AlreadyKilled(_)) => {}
        Err(error) => {
            tracing::error!(session_id = %facts.id, error = %error, "watchdog kill failed");
        }
    }
}

#[cfg(test)]
mod tests;
