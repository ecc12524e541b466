//! Unit tests of `bench run`'s machine read: `MemAvailable` in bytes, explicit `--jobs`, and
//! profile desktop sizes.

use super::*;

#[test]
fn mem_available_reads_the_line_in_bytes() {
    let meminfo = "MemTotal:       24683784 kB\nMemFree:        19605684 kB\n\
                   MemAvailable:   24089712 kB\nBuffers: 1 kB\n";
    assert_eq!(mem_available(meminfo), Some(24_089_712 * 1024));
    assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
}

#[test]
fn explicit_jobs_win_and_profiles_set_the_desktop_size() {
    let chosen = choose(Some(3), &[], "librecad", false).unwrap();
    assert_eq!(
        chosen,
        ChosenJobs {
            jobs: 3,
            reason: "--jobs".to_owned()
        }
    );
    // No task: the default profile's desktop; LibreCAD's limit (1 GiB) is named.
    let chosen = choose(None, &[], "librecad", false).unwrap();
    assert!(
        chosen.reason.starts_with("default: min("),
        "{}",
        chosen.reason
    );
    assert!(
        chosen.reason.contains("1.0 GiB per librecad desktop"),
        "{}",
        chosen.reason
    );
    assert!(
        chosen.reason.contains("broker sessions"),
        "{}",
        chosen.reason
    );
    assert_eq!(chosen.jobs, 1, "no task, one job");
    let external = choose(None, &[], "freecad", true).unwrap();
    assert!(
        external.reason.contains("2.0 GiB per freecad desktop"),
        "{}",
        external.reason
    );
    assert!(
        !external.reason.contains("broker sessions"),
        "{}",
        external.reason
    );
    assert!(
        external.reason.ends_with("not the broker's"),
        "{}",
        external.reason
    );
}
