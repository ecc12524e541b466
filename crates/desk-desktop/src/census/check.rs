//! The census's rules applied to one snapshot ([`check`], pure): each process placed by where
//! it came from (see the module documentation of `census.rs`), then the instances of each
//! program counted against their `max`.

use std::collections::BTreeMap;

use super::{
    CensusRules, DESKTOP_CHILDREN, DESKTOP_PROGRAMS, ExeIdentity, HOLDER_ADOPTS, LAUNCH_STAGES,
    Resolved, Seen, Snapshot, Violation, resolve_kept,
};

/// Where an allowed process belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    Holder,
    /// A launch stage (`nsenter`, `env`) of a recorded wrapper's child.
    Stage,
    /// A desktop process running this program.
    Desktop(String),
    /// A process of the app's tree.
    App,
    /// Gone or a zombie: nothing to check.
    Gone,
}

struct Checker<'a> {
    snapshot: &'a Snapshot,
    rules: &'a CensusRules,
    by_pid: BTreeMap<u32, &'a Seen>,
    places: BTreeMap<u32, Result<Place, String>>,
    /// [`resolve_kept`]'s answers by name.
    resolved: Resolved,
}

impl Checker<'_> {
    fn resolve(&mut self, program: &str) -> Option<String> {
        let root = self.snapshot.root.as_deref();
        resolve_kept(root, program, &mut self.resolved)
            // An absolute path the sandbox does not show stays as written (nothing runs it).
            .or_else(|| program.starts_with('/').then(|| program.to_string()))
    }

    /// The app's rule for `exe`: its `max`.
    fn app_max(&mut self, exe: &str) -> Option<u32> {
        let rules = self.rules;
        rules
            .app
            .iter()
            .find(|allowed| self.resolve(&allowed.path).as_deref() == Some(exe))
            .map(|allowed| allowed.max)
    }

    /// The worker's program (the holder's).
    fn worker_program(&self) -> Option<String> {
        self.by_pid
            .get(&self.snapshot.holder)
            .and_then(|holder| holder.exe.clone())
    }

    /// Whether `exe` is one of [`DESKTOP_PROGRAMS`] or the worker (the holder's program).
    fn desktop_program(&mut self, exe: &str) -> bool {
        self.worker_program().as_deref() == Some(exe)
            || DESKTOP_PROGRAMS
                .iter()
                .any(|program| self.resolve(program).as_deref() == Some(exe))
    }

    fn allowed_for_app(&mut self, exe: &str) -> bool {
        self.app_max(exe).is_some()
    }

    fn place(&mut self, pid: u32, depth: usize) -> Result<Place, String> {
        if let Some(place) = self.places.get(&pid) {
            return place.clone();
        }
        let place = self.place_uncached(pid, depth);
        self.places.insert(pid, place.clone());
        place
    }

    fn place_uncached(&mut self, pid: u32, depth: usize) -> Result<Place, String> {
        if pid == self.snapshot.holder {
            return Ok(Place::Holder);
        }
        let Some(seen) = self.by_pid.get(&pid).copied() else {
            return Ok(Place::Gone);
        };
        let Some(exe) = seen.exe.clone() else {
            return Ok(Place::Gone);
        };
        if depth > 64 {
            return Err("its ancestry is too deep to check".to_string());
        }
        if let Some(wrapper) = self.snapshot.wrappers.get(&seen.ppid) {
            if LAUNCH_STAGES
                .iter()
                .any(|stage| self.resolve(stage).as_deref() == Some(exe.as_str()))
            {
                return Ok(Place::Stage);
            }
            if wrapper.role == "app" && self.worker_program().as_deref() == Some(exe.as_str()) {
                // `deskbroker-worker confine` between `env` and the app (`sandbox/confine.rs`).
                return Ok(Place::Stage);
            }
            if seen.identity == ExeIdentity::Foreign {
                return Err(format!(
                    "its program is not the host's file at {exe} (started as the {})",
                    wrapper.role
                ));
            }
            if wrapper.role == "app" {
                return if self.allowed_for_app(&exe) {
                    Ok(Place::App)
                } else {
                    Err("the app's entry runs a program the profile does not allow".to_string())
                };
            }
            return if wrapper.program.as_deref() == Some(exe.as_str()) {
                Ok(Place::Desktop(exe))
            } else {
                Err(format!(
                    "the {} runs another program than the one it was started with",
                    wrapper.role
                ))
            };
        }
        if seen.identity != ExeIdentity::Host {
            return Err(format!("its program is not the host's file at {exe}"));
        }
        if seen.ppid == self.snapshot.holder {
            // The holder starts nothing; it only adopts what the accessibility bus daemonizes.
            let adopted = HOLDER_ADOPTS
                .iter()
                .any(|orphan| self.resolve(orphan).as_deref() == Some(exe.as_str()));
            return if adopted {
                Ok(Place::Desktop(exe))
            } else {
                Err("a child of the sandbox's first process (or an orphan it adopted)".to_string())
            };
        }
        if !self.by_pid.contains_key(&seen.ppid) {
            if self.snapshot.wrapper_died {
                // Orphaned by a dead wrapper: a failed desktop, named by the liveness check.
                return Ok(Place::Desktop(exe));
            }
            if self.snapshot.launch_parents.contains(&seen.ppid) && self.desktop_program(&exe) {
                // A desktop program a launch wrapper runs that is not (or no longer) recorded.
                return Ok(Place::Desktop(exe));
            }
            return Err(
                "started from outside the sandbox by no process of the desktop".to_string(),
            );
        }
        match self.place(seen.ppid, depth + 1)? {
            Place::App if self.allowed_for_app(&exe) => Ok(Place::App),
            Place::App => Err("the app started a program the profile does not allow".to_string()),
            Place::Desktop(parent) => {
                let allowed = DESKTOP_CHILDREN.iter().any(|(from, to, _)| {
                    self.resolve(from).as_deref() == Some(parent.as_str())
                        && self.resolve(to).as_deref() == Some(exe.as_str())
                });
                if allowed {
                    Ok(Place::Desktop(exe))
                } else {
                    Err(format!("{parent} does not start this program"))
                }
            }
            Place::Holder => Err("a child of the sandbox's first process".to_string()),
            Place::Stage => Err("started by a launch stage that did not exec".to_string()),
            Place::Gone => Err("its parent is gone".to_string()),
        }
    }
}

/// The processes of `snapshot` that `rules` (and the desktop's own rules above) do not allow,
/// in pid order; a process over its executable's `max` is a violation from the newest on.
pub fn check(snapshot: &Snapshot, rules: &CensusRules) -> Vec<Violation> {
    check_with(snapshot, rules, Resolved::new()).0
}

/// [`check`], its program names resolved from `resolved` where it has them (names resolved
/// earlier inside the same sandbox root), and every name it resolved, returned with the
/// violations.
pub(crate) fn check_with(
    snapshot: &Snapshot,
    rules: &CensusRules,
    resolved: Resolved,
) -> (Vec<Violation>, Resolved) {
    let mut checker = Checker {
        snapshot,
        rules,
        by_pid: snapshot
            .processes
            .iter()
            .map(|seen| (seen.pid, seen))
            .collect(),
        places: BTreeMap::new(),
        resolved,
    };
    let mut violations = Vec::new();
    // Instances per (group, program): the app's tree and each desktop helper.
    let mut instances: BTreeMap<(bool, String), Vec<&Seen>> = BTreeMap::new();
    for seen in &snapshot.processes {
        let exe = seen.exe.clone().unwrap_or_default();
        match checker.place(seen.pid, 0) {
            Ok(Place::App) => instances.entry((true, exe)).or_default().push(seen),
            Ok(Place::Desktop(_)) if !snapshot.wrappers.contains_key(&seen.ppid) => {
                instances.entry((false, exe)).or_default().push(seen)
            }
            Ok(_) => {}
            Err(why) => violations.push(violation(&checker, seen, why)),
        }
    }
    for ((app, exe), mut seen) in instances {
        let max = if app {
            checker.app_max(&exe).unwrap_or(0)
        } else {
            DESKTOP_CHILDREN
                .iter()
                .filter(|(_, to, _)| checker.resolve(to).as_deref() == Some(exe.as_str()))
                .map(|(_, _, max)| *max)
                .max()
                .unwrap_or(1)
        };
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        if seen.len() > max {
            seen.sort_by_key(|seen| (seen.start_ticks, seen.pid));
            for extra in &seen[max..] {
                let why = format!(
                    "{} instances of {exe} run at once (at most {max})",
                    seen.len()
                );
                violations.push(violation(&checker, extra, why));
            }
        }
    }
    violations.sort_by_key(|violation| violation.pid);
    (violations, checker.resolved)
}

fn violation(checker: &Checker<'_>, seen: &Seen, why: String) -> Violation {
    Violation {
        pid: seen.pid,
        start_ticks: seen.start_ticks,
        exe: seen.exe.clone().unwrap_or_default(),
        cmdline: String::new(),
        parent_pid: seen.ppid,
        parent_exe: checker
            .by_pid
            .get(&seen.ppid)
            .and_then(|parent| parent.exe.clone()),
        why,
    }
}
