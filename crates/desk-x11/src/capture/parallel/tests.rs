//! Unit tests for the encoder's threads: results in index order whatever thread computed them,
//! handed on in that order exactly once, and the staged form's early items and failed rest.

use super::*;

#[test]
fn parallel_map_hands_results_on_in_order_exactly_once() {
    // Items of uneven cost, so that they finish out of order on several threads.
    for n_threads in [1, 2, 3, 8] {
        for n_items in [0, 1, 2, 5, 40] {
            let mut drained = Vec::new();
            let results = parallel_map(
                n_items,
                n_threads,
                |idx| {
                    if idx % 3 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(300));
                    }
                    idx * 2
                },
                |&result| drained.push(result),
            )
            .unwrap();
            let expected: Vec<usize> = (0..n_items).map(|idx| idx * 2).collect();
            assert_eq!(results, expected);
            assert_eq!(drained, expected, "{n_items} items on {n_threads} threads");
        }
    }
}

#[test]
fn staged_map_runs_early_items_before_the_rest_arrives() {
    for n_threads in [1, 2, 4] {
        let started = AtomicUsize::new(0);
        let early = |first: &usize, idx: usize| {
            started.fetch_add(1, Ordering::SeqCst);
            idx * 10 + first
        };
        // Another thread takes the early items while this one waits for the rest.
        let rest = || {
            if n_threads > 1 {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while started.load(Ordering::SeqCst) == 0 {
                    assert!(std::time::Instant::now() < deadline);
                    std::thread::yield_now();
                }
            }
            Ok(5)
        };
        let mut drained = Vec::new();
        let (results, rest) = staged_map(
            7,
            n_threads,
            3,
            (|| Ok(1), rest),
            early,
            |rest, idx| idx * 10 + rest,
            |&result| drained.push(result),
        )
        .unwrap();
        assert_eq!(rest, 5);
        // Early items may also run after the rest arrived, through `early`.
        assert_eq!(results, [1, 11, 21, 35, 45, 55, 65]);
        assert_eq!(drained, results);
    }
}

#[test]
fn staged_map_fails_when_a_part_fails_and_always_waits_for_the_rest() {
    for n_threads in [1, 2, 4] {
        let failed = || Err::<usize, _>(X11Error::Capture("x".into()));
        let rest_called = AtomicUsize::new(0);
        let rest = || {
            rest_called.fetch_add(1, Ordering::SeqCst);
            Ok(5)
        };
        let early = |_: &usize, idx: usize| idx;
        let no_rest = staged_map(
            7,
            n_threads,
            3,
            (|| Ok(1), failed),
            early,
            |_, idx| idx,
            |_| {},
        );
        assert!(no_rest.is_err());
        let no_first = staged_map(7, n_threads, 3, (failed, rest), early, |_, idx| idx, |_| {});
        assert!(no_first.is_err());
        assert_eq!(rest_called.load(Ordering::SeqCst), 1);
    }
}
