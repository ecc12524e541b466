//! Unit tests of progress reporting: the ETA, duration formatting and the status line.

use super::*;

#[test]
fn eta_is_the_mean_time_per_finished_rollout_times_those_left() {
    assert_eq!(
        eta(Duration::from_secs(100), 0, 7),
        None,
        "nothing finished"
    );
    assert_eq!(
        eta(Duration::from_secs(120), 2, 7),
        Some(Duration::from_secs(300))
    );
    assert_eq!(eta(Duration::from_secs(120), 7, 7), Some(Duration::ZERO));
    assert_eq!(
        eta(Duration::from_secs(1), 3, 2),
        Some(Duration::ZERO),
        "never negative"
    );
}

#[test]
fn durations_are_short() {
    for (seconds, text) in [
        (0, "0s"),
        (59, "59s"),
        (60, "1m00s"),
        (190, "3m10s"),
        (3599, "59m59s"),
        (3720, "1h02m"),
    ] {
        assert_eq!(short_duration(Duration::from_secs(seconds)), text);
    }
}

#[test]
fn status_names_running_mean_and_eta() {
    let mut counts = Counts {
        total: 7,
        running: 2,
        ..Counts::default()
    };
    assert_eq!(
        counts.status(Duration::from_secs(30)),
        "2 running, mean -, eta -"
    );
    counts.done = 3;
    counts.score_sum = 0.5 + 1.0;
    counts.n_scored = 2;
    assert_eq!(
        counts.status(Duration::from_secs(90)),
        "2 running, mean 0.7500, eta 2m00s"
    );
}
