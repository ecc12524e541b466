//! The encoder's threads: a map over a frame's bands on up to as many threads as asked, each
//! taking the next band not yet taken, and its staged form for a frame that arrives in two
//! parts (`staged.rs`), whose first bands start while the rest is still being copied.
//!
//! Invariant: results come back in index order whatever thread computed them, so the bands'
//! order (and the PNG's bytes) never depends on scheduling.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::X11Error;

/// Runs `task` on every index below `n_items` on up to `n_threads` threads (this one included;
/// a thread that cannot start leaves its share to the others) and returns the results in index
/// order. Each thread takes the next index not yet taken, so a frame whose busy bands sit
/// together (a toolbar on top, a flat canvas below) still keeps every thread busy to the end.
pub(super) fn parallel_map<T: Send>(
    n_items: usize,
    n_threads: usize,
    task: impl Fn(usize) -> T + Sync,
) -> Result<Vec<T>, X11Error> {
    let (results, ()) = staged_map(
        n_items,
        n_threads,
        n_items,
        || Ok(()),
        &task,
        |(), idx| task(idx),
    )?;
    Ok(results)
}

/// Like [`parallel_map`] for input that arrives in two parts: the items below `n_early` need
/// only the first part and start at once (`early`) on the other threads, while this thread
/// waits for the rest (`rest`); every later item runs once `rest` returned, with its value
/// (`late`). Returns the results in index order and `rest`'s value. When `rest` fails nothing
/// more starts and its error is returned.
pub(super) fn staged_map<T: Send, R: Send + Sync>(
    n_items: usize,
    n_threads: usize,
    n_early: usize,
    rest: impl FnOnce() -> Result<R, X11Error>,
    early: &(dyn Fn(usize) -> T + Sync),
    late: impl Fn(&R, usize) -> T + Sync,
) -> Result<(Vec<T>, R), X11Error> {
    let n_workers = n_threads.clamp(1, n_items.max(1));
    let next = AtomicUsize::new(0);
    // `Some` once the rest arrived, `None` when it failed.
    let ready: OnceLock<Option<R>> = OnceLock::new();
    let work = || {
        let mut done = Vec::new();
        loop {
            let idx = next.fetch_add(1, Ordering::Relaxed);
            if idx >= n_items {
                return done;
            }
            if idx < n_early {
                done.push((idx, early(idx)));
            } else if let Some(rest) = ready.wait() {
                done.push((idx, late(rest, idx)));
            } else {
                return done;
            }
        }
    };
    let work = &work;
    let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None).take(n_items).collect();
    let mut place = |done: Vec<(usize, T)>| {
        for (idx, result) in done {
            if let Some(slot) = slots.get_mut(idx) {
                *slot = Some(result);
            }
        }
    };
    let arrived = std::thread::scope(|scope| {
        let spawned: Vec<_> = (1..n_workers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("png-band".into())
                    .spawn_scoped(scope, work)
                    .ok()
            })
            .collect();
        let arrived = rest();
        let arrived = match arrived {
            Ok(value) => {
                let _ = ready.set(Some(value));
                place(work());
                Ok(())
            }
            Err(error) => {
                let _ = ready.set(None);
                Err(error)
            }
        };
        for handle in spawned {
            place(
                handle
                    .join()
                    .map_err(|_| X11Error::Capture("a png band encoder panicked".into()))?,
            );
        }
        arrived
    });
    arrived?;
    let rest = ready
        .into_inner()
        .flatten()
        .ok_or_else(|| X11Error::Capture("a frame's rest did not arrive".into()))?;
    let results = slots
        .into_iter()
        .collect::<Option<Vec<T>>>()
        .ok_or_else(|| X11Error::Capture("a png band was not encoded".into()))?;
    Ok((results, rest))
}
