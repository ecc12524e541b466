//! Memory per desktop during `bench run` with the in-process broker: once a second, every
//! session directory's recorded processes (`processes.json`) and all their descendants (the
//! sandbox's Xvfb, window manager, app and worker) are summed, `Pss` and `Rss` from
//! `/proc/PID/smaps_rollup` (`Rss` from `/proc/PID/status` counts as `Pss` where smaps is not
//! readable). Each desktop's peak and the largest total at one sample go into the summary.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use desk_harness::DesktopMemory;
use desk_harness::plan::MemoryReading;
use serde::Deserialize;
use tokio::task::JoinHandle;

#[derive(Deserialize)]
struct Recorded {
    pid: u32,
}

#[derive(Default)]
struct Peaks {
    /// Per session: (peak Pss, peak Rss), KiB.
    sessions: HashMap<String, (u64, u64)>,
    max_total_pss_kib: u64,
}

/// A running sampler; [`Sampler::reading`] gives the summary's reading, [`Sampler::stop`]
/// ends it.
pub(crate) struct Sampler {
    peaks: Arc<Mutex<Peaks>>,
    task: JoinHandle<()>,
}

impl Sampler {
    /// Samples `state_dir/sessions/*` every second until stopped.
    pub(crate) fn start(state_dir: &Path) -> Sampler {
        let peaks = Arc::new(Mutex::new(Peaks::default()));
        let sessions = state_dir.join("sessions");
        let shared = Arc::clone(&peaks);
        let task = tokio::spawn(async move {
            loop {
                let dir = sessions.clone();
                let sample = tokio::task::spawn_blocking(move || sample(&dir))
                    .await
                    .unwrap_or_default();
                if let Ok(mut peaks) = shared.lock() {
                    let mut total = 0;
                    for (session, (pss, rss)) in sample {
                        total += pss;
                        let peak = peaks.sessions.entry(session).or_default();
                        peak.0 = peak.0.max(pss);
                        peak.1 = peak.1.max(rss);
                    }
                    peaks.max_total_pss_kib = peaks.max_total_pss_kib.max(total);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Sampler { peaks, task }
    }

    /// What was sampled so far (none when no desktop was seen).
    pub(crate) fn reading(&self) -> MemoryReading {
        let peaks = Arc::clone(&self.peaks);
        Arc::new(move || {
            let peaks = peaks.lock().ok()?;
            let n = peaks.sessions.len() as u64;
            if n == 0 {
                return None;
            }
            let pss: Vec<u64> = peaks.sessions.values().map(|peak| peak.0).collect();
            let rss_sum: u64 = peaks.sessions.values().map(|peak| peak.1).sum();
            Some(DesktopMemory {
                desktops: pss.len(),
                mean_peak_pss_kib: pss.iter().sum::<u64>() / n,
                max_peak_pss_kib: pss.iter().copied().max().unwrap_or(0),
                mean_peak_rss_kib: rss_sum / n,
                max_total_pss_kib: peaks.max_total_pss_kib,
            })
        })
    }

    pub(crate) fn stop(self) {
        self.task.abort();
    }
}

/// One sample: (Pss, Rss) in KiB of each session with live processes.
fn sample(sessions: &Path) -> HashMap<String, (u64, u64)> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir(sessions) else {
        return out;
    };
    let children = child_map();
    for entry in entries.flatten() {
        let dir: PathBuf = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join("processes.json")) else {
            continue;
        };
        let Ok(recorded) = serde_json::from_str::<Vec<Recorded>>(&text) else {
            continue;
        };
        let mut pids: HashSet<u32> = HashSet::new();
        let mut stack: Vec<u32> = recorded.iter().map(|process| process.pid).collect();
        while let Some(pid) = stack.pop() {
            if pids.insert(pid)
                && let Some(kids) = children.get(&pid)
            {
                stack.extend(kids);
            }
        }
        let (mut pss, mut rss) = (0, 0);
        for pid in pids {
            if let Some((p, r)) = memory_kib(pid) {
                pss += p;
                rss += r;
            }
        }
        if rss > 0 {
            out.insert(entry.file_name().to_string_lossy().into_owned(), (pss, rss));
        }
    }
    out
}

/// Parent pid → children, from `/proc/*/stat`.
pub(crate) fn child_map() -> HashMap<u32, Vec<u32>> {
    let mut map: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return map;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields resume after the last ')': state, then ppid.
        let ppid = stat
            .rfind(')')
            .and_then(|at| stat.get(at + 2..))
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|field| field.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            map.entry(ppid).or_default().push(pid);
        }
    }
    map
}

fn field_kib(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// (Pss, Rss) of one process in KiB; Rss stands in for Pss when smaps is not readable.
pub(crate) fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        && let (Some(pss), Some(rss)) = (field_kib(&rollup, "Pss:"), field_kib(&rollup, "Rss:"))
    {
        return Some((pss, rss));
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = field_kib(&status, "VmRSS:")?;
    Some((rss, rss))
}
