//! Default locations: the broker socket and the state directory.

use std::path::PathBuf;

fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// `$XDG_RUNTIME_DIR/deskbroker.sock`, or `/tmp/deskbroker-$UID/deskbroker.sock`.
pub(crate) fn default_socket() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("deskbroker.sock"),
        _ => PathBuf::from(format!("/tmp/deskbroker-{}", uid())).join("deskbroker.sock"),
    }
}

/// `$XDG_STATE_HOME/deskbroker`, or `~/.local/state/deskbroker`.
pub(crate) fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|dir| !dir.is_empty()) {
        return PathBuf::from(dir).join("deskbroker");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".local/state/deskbroker")
}
