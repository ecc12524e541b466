//! Action frames on disk: `<session>/frames/<sequence>.png`.
//!
//! A completed action's journal row caches its response without the screenshot bytes; the PNG
//! is written here first (before the row commits) and a replay re-reads it, verified against
//! the journaled sha256. This keeps the fsynced journal commit small: a 1080p frame is several
//! hundred kilobytes. The frame file is not fsynced: it survives a broker crash (the page cache
//! outlives the process) but may not survive a power loss, in which case a replay fails with
//! `internal` and still injects nothing.

use desk_contract::api::Screenshot;
use desk_desktop::SessionDir;

use crate::error::BrokerError;
use crate::util::sha256_hex;

/// Writes `png` (the screenshot of `sequence`) as its frame file.
pub(crate) fn store(
    session_dir: &SessionDir,
    sequence: u64,
    png: &[u8],
) -> Result<(), BrokerError> {
    let path = session_dir.frame_file(sequence);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(BrokerError::io("create the frames directory", dir))?;
    }
    std::fs::write(&path, png).map_err(BrokerError::io("write an action frame", &path))
}

/// Fills `screenshot.png` from its frame file, checking the digest.
pub(crate) fn load(
    session_dir: &SessionDir,
    screenshot: &mut Screenshot,
) -> Result<(), BrokerError> {
    let path = session_dir.frame_file(screenshot.sequence);
    let png = std::fs::read(&path).map_err(BrokerError::io("read a cached action frame", &path))?;
    if sha256_hex(&png) != screenshot.sha256 {
        return Err(BrokerError::Internal(format!(
            "cached frame {} does not match its journaled digest",
            screenshot.sequence
        )));
    }
    screenshot.png = Some(png.into());
    Ok(())
}
