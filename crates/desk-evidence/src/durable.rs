//! Durable batches: the one home for making several already-written files durable at once.
//!
//! A step that writes N records to N files used to fsync each right after its write, so its
//! caller waited for N disk flushes one after another. Here the caller writes every record
//! first and then hands the files to [`sync_each`], which fsyncs them concurrently (one scoped
//! thread per file beyond the first, the first on the caller's thread) and returns only when
//! every fsync has returned. The durability is the same (each file is `fdatasync`ed or
//! `fsync`ed, as its [`Durable`] says); what changes is that ext4 (and most journaling file
//! systems) commit the concurrent flushes of one transaction together, so the step waits for
//! about one flush instead of N. [`join`] runs two durable steps of other kinds (a SQLite commit
//! beside an evidence append) the same way.
//!
//! Invariant: a `sync_each` result is `Ok` for a file only when its own fsync returned `Ok`;
//! one file's failure never hides or fails another's (each caller decides what a failure of
//! each file means). Nothing here orders the files among themselves: a caller that needs one
//! record durable before another is written must not put both in one batch.

use std::fs::File;
use std::path::Path;

use crate::error::EvidenceError;

/// What must reach the disk for one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// `fdatasync`: the contents and the metadata needed to read them back (its size), not
    /// times. For appends to and fresh writes of regular files.
    Data,
    /// `fsync`: everything, for a directory whose entries changed (a rename or a new file).
    All,
}

/// One file of a durable batch: an open handle to what was written, its path (for errors) and
/// what must reach the disk.
#[derive(Debug, Clone, Copy)]
pub struct Durable<'a> {
    /// The open file or directory.
    pub file: &'a File,
    /// Its path, named in an error.
    pub path: &'a Path,
    /// `fdatasync` or `fsync`.
    pub kind: SyncKind,
}

impl<'a> Durable<'a> {
    /// A regular file whose written bytes must be durable (`fdatasync`).
    pub fn data(file: &'a File, path: &'a Path) -> Durable<'a> {
        Durable {
            file,
            path,
            kind: SyncKind::Data,
        }
    }

    /// A directory whose entries changed (`fsync`).
    pub fn directory(file: &'a File, path: &'a Path) -> Durable<'a> {
        Durable {
            file,
            path,
            kind: SyncKind::All,
        }
    }

    /// Flushes this one file now.
    pub fn sync(&self) -> Result<(), EvidenceError> {
        let (operation, result) = match self.kind {
            SyncKind::Data => ("fdatasync", self.file.sync_data()),
            SyncKind::All => ("fsync", self.file.sync_all()),
        };
        result.map_err(|error| EvidenceError::io(operation, self.path, error))
    }
}

/// Runs `first` and `second` concurrently (`second` on a scoped thread) and returns both
/// results when both have returned. For two durable steps that need not be ordered among
/// themselves, e.g. a database commit beside an evidence append. A panic in either is
/// propagated.
pub fn join<A, B>(first: impl FnOnce() -> A + Send, second: impl FnOnce() -> B + Send) -> (A, B)
where
    A: Send,
    B: Send,
{
    std::thread::scope(|scope| {
        let other = scope.spawn(second);
        let a = first();
        match other.join() {
            Ok(b) => (a, b),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Flushes every file of `batch` concurrently and returns when all are done: one result per
/// file, in `batch`'s order. An empty batch does nothing; a batch of one flushes on the
/// caller's thread.
pub fn sync_each(batch: &[Durable<'_>]) -> Vec<Result<(), EvidenceError>> {
    match batch {
        [] => Vec::new(),
        [only] => vec![only.sync()],
        [first, rest @ ..] => std::thread::scope(|scope| {
            let others: Vec<_> = rest
                .iter()
                .map(|durable| scope.spawn(move || durable.sync()))
                .collect();
            let mut results = vec![first.sync()];
            for (handle, durable) in others.into_iter().zip(rest) {
                results.push(handle.join().unwrap_or_else(|_| {
                    Err(EvidenceError::io(
                        "fsync",
                        durable.path,
                        std::io::Error::other("the thread flushing this file panicked"),
                    ))
                }));
            }
            results
        }),
    }
}

/// [`sync_each`], failing with the first failure (in `batch`'s order) once every flush has
/// returned.
pub fn sync_all(batch: &[Durable<'_>]) -> Result<(), EvidenceError> {
    sync_each(batch).into_iter().collect()
}

#[cfg(test)]
mod tests;
