//! Plain-file helpers: bounded reads, create-new writes with fsync of the file and its
//! directory. No sockets and no other I/O live in this crate.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use crate::error::EvidenceError;

/// Reads at most `limit` bytes; a longer file is refused rather than truncated.
pub(crate) fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, EvidenceError> {
    let file = File::open(path).map_err(|error| EvidenceError::io("open", path, error))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| EvidenceError::io("read", path, error))?;
    if bytes.len() as u64 > limit {
        return Err(EvidenceError::io(
            "read",
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("larger than {limit} bytes"),
            ),
        ));
    }
    Ok(bytes)
}

/// Creates `path` (which must not exist) with `mode`, writes `bytes`, and fsyncs the file and
/// its parent directory.
pub(crate) fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), EvidenceError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|error| EvidenceError::io("create", path, error))?;
    file.write_all(bytes)
        .map_err(|error| EvidenceError::io("write", path, error))?;
    file.sync_all()
        .map_err(|error| EvidenceError::io("fsync", path, error))?;
    sync_parent(path)
}

/// Fsyncs the directory holding `path`, so a newly created entry survives a crash.
pub(crate) fn sync_parent(path: &Path) -> Result<(), EvidenceError> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|directory| directory.sync_all())
        .map_err(|error| EvidenceError::io("fsync directory", parent, error))
}
