//! The default of `--jobs`: as many rollouts at once as the machine can hold, the smallest of
//! its cores, its available memory over one desktop's memory, the tasks to play and the
//! sessions the broker admits (never less than 1, never more than [`MAX_JOBS`]).
//!
//! A pure function of the facts the caller measured ([`JobsBasis`]), so the rule is tested
//! without a machine; the reason it returns names every bound, and which one decided.

/// The most rollouts a run plays at once: each needs a desktop (an X server, a window manager
/// and the app, a few hundred MB), so more is a typo, not a plan.
pub const MAX_JOBS: u32 = 32;

/// What the machine offers and what one desktop of the run needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobsBasis {
    /// CPUs this process may run on.
    pub cores: u32,
    /// Memory available to new desktops, bytes; `None` when it could not be read.
    pub available_memory_bytes: Option<u64>,
    /// The memory one desktop may use, bytes: the largest among the profiles the tasks play in.
    pub desktop_memory_bytes: u64,
    /// The profile of that largest desktop (named in the reason).
    pub desktop_profile: String,
    /// Tasks to play.
    pub n_tasks: usize,
    /// Sessions the broker admits at once, when known.
    pub broker_sessions: Option<u32>,
}

/// The chosen default and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultJobs {
    /// Rollouts at once, 1 to [`MAX_JOBS`].
    pub jobs: u32,
    /// Every bound and its value, e.g. `min(2 cores, 22.9 GiB available / 2.0 GiB per freecad
    /// desktop = 11, 7 tasks, 8 broker sessions) = 2`.
    pub reason: String,
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// The default of `--jobs` for `basis`.
pub fn default_jobs(basis: &JobsBasis) -> DefaultJobs {
    let mut bounds: Vec<(u64, String)> = vec![(
        u64::from(basis.cores),
        format!(
            "{} core{}",
            basis.cores,
            if basis.cores == 1 { "" } else { "s" }
        ),
    )];
    match basis.available_memory_bytes {
        Some(available) => {
            let fits = available / basis.desktop_memory_bytes.max(1);
            bounds.push((
                fits,
                format!(
                    "{} available / {} per {} desktop = {fits}",
                    gib(available),
                    gib(basis.desktop_memory_bytes),
                    basis.desktop_profile
                ),
            ));
        }
        None => bounds.push((u64::MAX, "memory unknown".to_owned())),
    }
    bounds.push((
        basis.n_tasks as u64,
        format!(
            "{} task{}",
            basis.n_tasks,
            if basis.n_tasks == 1 { "" } else { "s" }
        ),
    ));
    if let Some(sessions) = basis.broker_sessions {
        bounds.push((u64::from(sessions), format!("{sessions} broker sessions")));
    }
    bounds.push((u64::from(MAX_JOBS), format!("at most {MAX_JOBS}")));
    let smallest = bounds.iter().map(|(value, _)| *value).min().unwrap_or(1);
    // At least one rollout runs: a machine short of one desktop's memory still plays, one at a
    // time, as `--jobs 1` would.
    let jobs = u32::try_from(smallest.max(1)).unwrap_or(MAX_JOBS);
    let listed: Vec<&str> = bounds
        .iter()
        .filter(|(value, _)| *value != u64::from(MAX_JOBS) || smallest == u64::from(MAX_JOBS))
        .map(|(_, text)| text.as_str())
        .collect();
    let mut reason = format!("min({}) = {jobs}", listed.join(", "));
    if smallest == 0 {
        reason.push_str(" (less than one desktop's memory available: one at a time)");
    }
    DefaultJobs { jobs, reason }
}

#[cfg(test)]
mod tests;
