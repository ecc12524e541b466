//! Moving a helper service (the watchdog, the observer) to a uid of its own under a root
//! broker: the one sequence `watchdog.rs` and `observer.rs` share.

use std::path::Path;

use anyhow::{Context, Result};
use desk_desktop::BackendError;
use desk_desktop::sandbox::Ids;

/// Makes `dir` (the service's directory beside the state directory, 0700) if it is missing,
/// claims the service's uid/gid with `claim` (`"no uid for the <service>"` when it fails),
/// gives `dir` and everything in it to that uid, keeps `dir` 0700 and `dir/<key_file>` 0600,
/// then drops to it with no supplementary group, `kept` alone and `NoNewPrivs`
/// (`drop_ids.rs`). Single-threaded callers only, before anything else.
pub(crate) fn move_to_own_uid(
    service: &str,
    dir: &Path,
    key_file: &str,
    claim: impl FnOnce(&Path) -> Result<Ids, BackendError>,
    kept: rustix::thread::CapabilitySet,
) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    match std::fs::symlink_metadata(dir) {
        Ok(metadata) if !metadata.is_dir() => {
            anyhow::bail!("{} is not a directory", dir.display())
        }
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("failed to create {}", dir.display()))?;
        }
        Err(error) => return Err(error).context(format!("failed to read {}", dir.display())),
    }
    let ids = claim(dir).with_context(|| format!("no uid for the {service}"))?;
    crate::chown::chown_tree(dir, ids.uid, ids.gid)
        .with_context(|| format!("failed to give {} to uid {}", dir.display(), ids.uid))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("failed to make {} 0700", dir.display()))?;
    let key = dir.join(key_file);
    if key.exists() {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("failed to make {} 0600", key.display()))?;
    }
    crate::drop_ids::drop_ids(ids.uid, ids.gid, kept, true).map_err(|error| {
        anyhow::anyhow!("the {service} cannot drop to uid {}: {error}", ids.uid)
    })?;
    tracing::info!(
        uid = ids.uid,
        gid = ids.gid,
        "{service} runs under its own uid"
    );
    Ok(())
}
