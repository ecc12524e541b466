//! Unit tests of the job count: the smallest bound decides, at least one job, unknown memory.

use super::*;

const GIB: u64 = 1 << 30;

fn basis(cores: u32, available_gib: Option<u64>, desktop_gib: u64, n_tasks: usize) -> JobsBasis {
    JobsBasis {
        cores,
        available_memory_bytes: available_gib.map(|value| value * GIB),
        desktop_memory_bytes: desktop_gib * GIB,
        desktop_profile: if desktop_gib == 1 {
            "librecad"
        } else {
            "freecad"
        }
        .to_owned(),
        n_tasks,
        broker_sessions: Some(8),
    }
}

#[test]
fn the_smallest_bound_decides() {
    // This machine: 2 cores, plenty of memory, the dev split's 7 tasks: the cores decide.
    let chosen = default_jobs(&basis(2, Some(23), 2, 7));
    assert_eq!(chosen.jobs, 2);
    assert_eq!(
        chosen.reason,
        "min(2 cores, 23.0 GiB available / 2.0 GiB per freecad desktop = 11, 7 tasks, \
         8 broker sessions) = 2"
    );
    // A 4 GiB pod with 16 cores: memory decides, per the largest desktop of the run.
    assert_eq!(default_jobs(&basis(16, Some(4), 2, 50)).jobs, 2);
    assert_eq!(default_jobs(&basis(16, Some(4), 1, 50)).jobs, 4);
    assert_eq!(
        default_jobs(&basis(16, Some(5), 2, 50)).jobs,
        2,
        "rounded down"
    );
    // Fewer tasks than slots: one desktop per task, no more.
    assert_eq!(default_jobs(&basis(16, Some(64), 1, 3)).jobs, 3);
    // The broker's session cap.
    assert_eq!(default_jobs(&basis(16, Some(64), 1, 50)).jobs, 8);
    let mut unknown_broker = basis(64, Some(1024), 1, 500);
    unknown_broker.broker_sessions = None;
    let chosen = default_jobs(&unknown_broker);
    assert_eq!(chosen.jobs, MAX_JOBS);
    assert!(
        chosen.reason.ends_with("at most 32) = 32"),
        "{}",
        chosen.reason
    );
}

#[test]
fn one_job_at_least() {
    let chosen = default_jobs(&basis(2, Some(1), 2, 7));
    assert_eq!(chosen.jobs, 1);
    assert!(
        chosen.reason.contains("= 0") && chosen.reason.contains("one at a time"),
        "{}",
        chosen.reason
    );
    assert_eq!(
        default_jobs(&basis(0, Some(8), 1, 7)).jobs,
        1,
        "no cores read"
    );
    assert_eq!(default_jobs(&basis(2, Some(8), 1, 0)).jobs, 1, "no tasks");
    let mut zero_desktop = basis(2, Some(8), 1, 7);
    zero_desktop.desktop_memory_bytes = 0;
    assert_eq!(default_jobs(&zero_desktop).jobs, 2, "no division by zero");
}

#[test]
fn unknown_memory_leaves_the_other_bounds() {
    let chosen = default_jobs(&basis(4, None, 2, 7));
    assert_eq!(chosen.jobs, 4);
    assert_eq!(
        chosen.reason,
        "min(4 cores, memory unknown, 7 tasks, 8 broker sessions) = 4"
    );
    assert!(
        default_jobs(&basis(1, None, 2, 1))
            .reason
            .starts_with("min(1 core, ")
    );
}
