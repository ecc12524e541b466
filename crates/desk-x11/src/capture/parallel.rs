//! The encoder's threads: a map over a frame's bands on up to as many threads as asked, each
//! taking the next band not yet taken, and its staged form for a frame that arrives in two
//! parts (`staged.rs`), whose first bands start while the rest is still being copied. Finished
//! results are handed on in index order while later ones are still computed (`framing.rs` frames
//! and hashes them there), by the calling thread between its own items, so the other threads
//! only compute and a thread preempted by other load never holds the others up mid-hand-on.
//!
//! Invariant: results come back, and are handed on, in index order whatever thread computed
//! them, so the bands' order (and the PNG's bytes) never depends on scheduling.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::X11Error;

/// Runs `task` on every index below `n_items` on up to `n_threads` threads (this one included;
/// a thread that cannot start leaves its share to the others), hands each result to `drain` in
/// index order and returns them in index order. Each thread takes the next index not yet taken,
/// so a frame whose busy bands sit together (a toolbar on top, a flat canvas below) still keeps
/// every thread busy to the end.
pub(super) fn parallel_map<T: Send + Sync>(
    n_items: usize,
    n_threads: usize,
    task: impl Fn(usize) -> T + Sync,
    drain: impl FnMut(&T),
) -> Result<Vec<T>, X11Error> {
    let (results, ()) = staged_map(
        n_items,
        n_threads,
        n_items,
        (|| Ok(()), || Ok(())),
        |(), idx| task(idx),
        |(), idx| task(idx),
        drain,
    )?;
    Ok(results)
}

/// Like [`parallel_map`] for input that arrives in two parts, `first` and `rest`, each waited
/// for on this thread: the items below `n_early` need only the first part and run (`early`)
/// on the other threads, started before the first part is waited for, while this thread
/// waits for the rest; every later item runs once `rest` returned, with its value (`late`).
/// Each result goes to `drain` in index order, exactly once, on this thread, as soon as it and
/// every earlier one are done and this thread is between items. Returns the results in index
/// order and `rest`'s value. When a part fails nothing more starts and its error is returned;
/// `rest` is called even when `first` failed.
pub(super) fn staged_map<T: Send + Sync, F: Send + Sync, R: Send + Sync>(
    n_items: usize,
    n_threads: usize,
    n_early: usize,
    (first, rest): (
        impl FnOnce() -> Result<F, X11Error>,
        impl FnOnce() -> Result<R, X11Error>,
    ),
    early: impl Fn(&F, usize) -> T + Sync,
    late: impl Fn(&R, usize) -> T + Sync,
    drain: impl FnMut(&T),
) -> Result<(Vec<T>, R), X11Error> {
    let n_workers = n_threads.clamp(1, n_items.max(1));
    let next = AtomicUsize::new(0);
    // `Some` once the first part or the rest arrived, `None` when it failed.
    let first_ready: OnceLock<Option<F>> = OnceLock::new();
    let ready: OnceLock<Option<R>> = OnceLock::new();
    let slots: Vec<OnceLock<T>> = std::iter::repeat_with(OnceLock::new)
        .take(n_items)
        .collect();
    let mut drainer = Drainer {
        next: 0,
        drain,
        slots: &slots,
    };
    // Computes item `idx` into its slot; `false` when a part it needs failed.
    let run = |idx: usize| {
        let result = if idx < n_early {
            match first_ready.wait() {
                Some(first) => early(first, idx),
                None => return false,
            }
        } else if let Some(rest) = ready.wait() {
            late(rest, idx)
        } else {
            return false;
        };
        if let Some(slot) = slots.get(idx) {
            let _ = slot.set(result);
        }
        true
    };
    let work = || {
        loop {
            let idx = next.fetch_add(1, Ordering::Relaxed);
            if idx >= n_items || !run(idx) {
                return;
            }
        }
    };
    let work = &work;
    let arrived = std::thread::scope(|scope| {
        let spawned: Vec<_> = (1..n_workers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("png-band".into())
                    .spawn_scoped(scope, work)
                    .ok()
            })
            .collect();
        let arrived = match first() {
            Ok(value) => {
                let _ = first_ready.set(Some(value));
                rest()
            }
            Err(error) => {
                let _ = first_ready.set(None);
                let _ = rest();
                Err(error)
            }
        };
        let arrived = match arrived {
            Ok(value) => {
                let _ = ready.set(Some(value));
                // This thread hands on what is ready between its own items, the other threads
                // only compute: a thread preempted in the middle of `drain` would hold up the
                // join below.
                loop {
                    let idx = next.fetch_add(1, Ordering::Relaxed);
                    if idx >= n_items || !run(idx) {
                        break;
                    }
                    drainer.run();
                }
                drainer.run();
                Ok(())
            }
            Err(error) => {
                let _ = ready.set(None);
                Err(error)
            }
        };
        let mut panicked = false;
        for handle in spawned {
            panicked |= handle.join().is_err();
        }
        if panicked {
            return Err(X11Error::Capture("a png band encoder panicked".into()));
        }
        arrived
    });
    arrived?;
    drainer.run();
    let n_drained = drainer.next;
    drop(drainer);
    let rest = ready
        .into_inner()
        .flatten()
        .ok_or_else(|| X11Error::Capture("a frame's rest did not arrive".into()))?;
    let results = slots
        .into_iter()
        .map(OnceLock::into_inner)
        .collect::<Option<Vec<T>>>()
        .filter(|_| n_drained == n_items)
        .ok_or_else(|| X11Error::Capture("a png band was not encoded".into()))?;
    Ok((results, rest))
}

/// The consumer of results in index order and how far it got.
struct Drainer<'s, T, D> {
    // Invariant: every result below `next` was handed to `drain`, once, in order.
    next: usize,
    drain: D,
    slots: &'s [OnceLock<T>],
}

impl<T, D: FnMut(&T)> Drainer<'_, T, D> {
    /// Hands on every result ready from `next` on, in order.
    fn run(&mut self) {
        while let Some(result) = self.slots.get(self.next).and_then(OnceLock::get) {
            (self.drain)(result);
            self.next += 1;
        }
    }
}

#[cfg(test)]
mod tests;
