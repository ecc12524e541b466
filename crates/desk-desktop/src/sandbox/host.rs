//! What the broker writes for a sandbox and the sandbox may only read: `<workspace>/host/`,
//! bound read-only inside. It holds the account files (`passwd`, `group`: the app's and the
//! desktop's uids have an entry, because toolkits such as Qt and FreeCAD crash or misbehave
//! without one; with split identities the broker's observer's uid has one too, so the buses
//! admit it: `identity/observer.rs`), the lease deadline the sandbox's first process enforces
//! and, when the app has an identity of its own, the configurations of the session bus and the
//! AT-SPI bus that admit both uids (a bus admits only its own uid by default).
//!
//! The first process (pid 1 of the sandbox's pid namespace, so nothing inside can stop or kill
//! it) is our own holder, `deskbroker-worker hold` (no shell): it reads `deadline` (Unix
//! seconds) every [`CHECK_INTERVAL_SECS`], exits once it has passed, and reaps the orphans it
//! adopts as the namespace's init. When it exits, the kernel kills every process in the
//! namespace: a desktop whose broker never comes back stops at its lease expiry plus the grace
//! period, without the broker. The broker rewrites the file at each lease renewal (see
//! [`set_lease_deadline`]); a file that never appears ends the sandbox after
//! [`MISSING_DEADLINE_SECS`].

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::BackendError;
use crate::layout::SessionDir;

/// The host-written, read-only directory in a workspace.
pub(super) const HOST_DIR: &str = "host";

/// The lease deadline file in [`HOST_DIR`].
pub(super) const DEADLINE_FILE: &str = "deadline";

/// How often the first process reads the deadline.
pub(super) const CHECK_INTERVAL_SECS: u32 = 2;

/// How long the first process waits for a deadline file that is missing or unreadable.
pub(super) const MISSING_DEADLINE_SECS: u32 = 120;

/// The user name the app's uid has inside.
const SANDBOX_USER: &str = "desk";

/// The user name the desktop's uid has inside, when it is not the app's.
const DESKTOP_USER: &str = "desk-desktop";

/// The user name the broker's observer has inside (it runs outside; the buses need its name).
pub(super) const OBSERVER_USER: &str = "desk-observer";

/// The session bus's configuration in [`HOST_DIR`] (split identities).
pub(crate) const SESSION_BUS_CONFIG_FILE: &str = "session-bus.conf";

/// The AT-SPI bus's configuration in [`HOST_DIR`] (split identities), bound over the shipped
/// one.
pub(super) const AT_SPI_CONFIG_FILE: &str = "accessibility.conf";

/// Admits every uid that reaches the socket (inside the sandbox: the desktop's and the app's).
const ALLOW_EVERY_UID: &str = r#"  <policy context="default">
    <allow user="*"/>
  </policy>"#;

/// The session bus: the system's session configuration, admitting both uids.
fn session_bus_config() -> String {
    format!(
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \
         \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig>\n  \
         <include>/usr/share/dbus-1/session.conf</include>\n{ALLOW_EVERY_UID}\n</busconfig>\n"
    )
}

/// The AT-SPI bus: at-spi2-core 2.46's shipped configuration, admitting both uids.
fn at_spi_config() -> String {
    format!(
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \
         \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig>\n  \
         <type>accessibility</type>\n  \
         <servicedir>/usr/share/dbus-1/accessibility-services</servicedir>\n  \
         <auth>EXTERNAL</auth>\n  <listen>unix:dir=/tmp</listen>\n{ALLOW_EVERY_UID}\n  \
         <policy context=\"default\">\n    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n    \
         <allow eavesdrop=\"true\"/>\n    <allow own=\"*\"/>\n  </policy>\n  \
         <limit name=\"max_incoming_bytes\">1000000000</limit>\n  \
         <limit name=\"max_outgoing_bytes\">1000000000</limit>\n  \
         <limit name=\"max_message_size\">1000000000</limit>\n  \
         <limit name=\"service_start_timeout\">120000</limit>\n  \
         <limit name=\"auth_timeout\">240000</limit>\n  \
         <limit name=\"max_completed_connections\">100000</limit>\n  \
         <limit name=\"max_incomplete_connections\">10000</limit>\n  \
         <limit name=\"max_connections_per_user\">100000</limit>\n  \
         <limit name=\"max_pending_service_starts\">10000</limit>\n  \
         <limit name=\"max_names_per_connection\">50000</limit>\n  \
         <limit name=\"max_match_rules_per_connection\">50000</limit>\n  \
         <limit name=\"max_replies_per_connection\">50000</limit>\n  \
         <limit name=\"reply_timeout\">300000</limit>\n</busconfig>\n"
    )
}

/// Creates `<workspace>/host` (0755, the broker's) with `passwd` and `group` naming the app's
/// account (`identities.app`, `home`) and, when split, the desktop's, beside root and nobody,
/// and then the bus configurations. Returns the directory.
pub(crate) fn prepare(
    workspace: &Path,
    identities: &super::Identities,
    home: &Path,
) -> Result<PathBuf, BackendError> {
    let dir = workspace.join(HOST_DIR);
    let io = |what: &'static str, path: &Path| {
        let what = format!("{what} {}", path.display());
        move |source| BackendError::Spawn { what, source }
    };
    std::fs::create_dir_all(&dir).map_err(io("sandbox host directory", &dir))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
        .map_err(io("sandbox host directory", &dir))?;
    let (uid, gid) = (identities.app.uid, identities.app.gid);
    let mut passwd = format!(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n\
         {SANDBOX_USER}:x:{uid}:{gid}:{SANDBOX_USER}:{home}:/usr/sbin/nologin\n",
        home = home.display()
    );
    let mut group = format!("root:x:0:\n{SANDBOX_USER}:x:{gid}:\n");
    let mut files = Vec::new();
    if identities.split() {
        let desktop = identities.desktop;
        passwd.push_str(&format!(
            "{DESKTOP_USER}:x:{}:{}:{DESKTOP_USER}:/tmp:/usr/sbin/nologin\n",
            desktop.uid, desktop.gid
        ));
        group.push_str(&format!("{DESKTOP_USER}:x:{}:\n", desktop.gid));
        // The broker's observer (containment G001) reads the app's tree on the buses from
        // outside; a bus admits only a uid it can name.
        if let Some(observer) = identities
            .slot
            .and_then(super::identity::observer::observer_for_slot)
        {
            passwd.push_str(&format!(
                "{OBSERVER_USER}:x:{}:{}:{OBSERVER_USER}:/nonexistent:/usr/sbin/nologin\n",
                observer.uid, observer.gid
            ));
            group.push_str(&format!("{OBSERVER_USER}:x:{}:\n", observer.gid));
        }
        files.push((SESSION_BUS_CONFIG_FILE, session_bus_config()));
        files.push((AT_SPI_CONFIG_FILE, at_spi_config()));
    }
    passwd.push_str("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    group.push_str("nogroup:x:65534:\n");
    files.push(("passwd", passwd));
    files.push(("group", group));
    for (name, text) in files {
        let path = dir.join(name);
        write_replacing(&path, text.as_bytes()).map_err(io("sandbox account file", &path))?;
    }
    Ok(dir)
}

/// The first process's argv: `<holder> hold --every .. --missing .. <host_dir>/deadline`, where
/// `holder` is the worker program (`deskbroker-worker`), bound read-only at the same path.
pub(crate) fn holder_argv(holder: &Path, host_dir: &Path) -> Vec<String> {
    vec![
        holder.display().to_string(),
        "hold".to_string(),
        "--every".to_string(),
        CHECK_INTERVAL_SECS.to_string(),
        "--missing".to_string(),
        MISSING_DEADLINE_SECS.to_string(),
        host_dir.join(DEADLINE_FILE).display().to_string(),
    ]
}

/// Records that the desktop of `session_dir` may run until `deadline_unix_secs` (its lease
/// expiry plus grace). A session without a sandbox workspace has nothing to record.
///
/// Every renewal calls this (each action, screenshot, checkpoint), so a deadline less than one
/// check interval later than the recorded one is not written: the holder reads the file only
/// that often, and the grace period dwarfs the difference.
pub(crate) fn set_lease_deadline(
    session_dir: impl AsRef<Path>,
    deadline_unix_secs: u64,
) -> std::io::Result<()> {
    let dir = SessionDir::at(session_dir.as_ref())
        .workspace()
        .join(HOST_DIR);
    if !dir.is_dir() {
        return Ok(());
    }
    let path = dir.join(DEADLINE_FILE);
    let recorded = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    if recorded.is_some_and(|recorded| {
        (recorded..recorded + u64::from(CHECK_INTERVAL_SECS)).contains(&deadline_unix_secs)
    }) {
        return Ok(());
    }
    write_replacing(&path, format!("{deadline_unix_secs}\n").as_bytes())
}

/// Writes `path` through a temporary sibling and a rename (0644), so a reader sees the old or
/// the new contents, and a directory bind sees the new file.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = path.with_extension("tmp");
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&temporary)?;
    file.write_all(bytes)?;
    // Readable by the sandbox uid whatever the broker's umask (0077 under `serve`).
    file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    drop(file);
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_files_name_the_sandbox_user_and_the_deadline_is_replaced() {
        let root = tempfile::tempdir().unwrap();
        let session = root.path();
        let workspace = session.join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let single = super::super::Identities::single(61234, 61235);
        let dir = prepare(&workspace, &single, &workspace.join("home")).unwrap();
        let passwd = std::fs::read_to_string(dir.join("passwd")).unwrap();
        assert!(passwd.contains(&format!(
            "desk:x:61234:61235:desk:{}/home:",
            workspace.display()
        )));
        assert!(!passwd.contains(DESKTOP_USER));
        assert!(!dir.join(AT_SPI_CONFIG_FILE).exists());
        let split = super::super::Identities {
            desktop: super::super::Ids {
                uid: 70000,
                gid: 70000,
            },
            app: super::super::Ids {
                uid: 70001,
                gid: 70001,
            },
            slot: Some(3),
        };
        prepare(&workspace, &split, &workspace.join("home")).unwrap();
        let passwd = std::fs::read_to_string(dir.join("passwd")).unwrap();
        assert!(passwd.contains("desk:x:70001:70001:desk:"), "{passwd}");
        assert!(passwd.contains("desk-desktop:x:70000:70000:"), "{passwd}");
        for name in [AT_SPI_CONFIG_FILE, SESSION_BUS_CONFIG_FILE] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            assert!(text.contains(r#"<allow user="*"/>"#), "{text}");
        }
        let read = || std::fs::read_to_string(dir.join(DEADLINE_FILE)).unwrap();
        set_lease_deadline(session, 100).unwrap();
        set_lease_deadline(session, 200).unwrap();
        assert_eq!(read(), "200\n");
        // Less than one check interval later: not rewritten. Earlier, or later by more: written.
        set_lease_deadline(session, 201).unwrap();
        assert_eq!(read(), "200\n");
        set_lease_deadline(session, 202).unwrap();
        assert_eq!(read(), "202\n");
        set_lease_deadline(session, 150).unwrap();
        assert_eq!(read(), "150\n");
        for name in [DEADLINE_FILE, "passwd", "group"] {
            let mode = std::fs::metadata(dir.join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o644, "{name} is readable by the sandbox uid");
        }
        // No workspace: nothing to do, no error.
        set_lease_deadline(root.path().join("elsewhere"), 1).unwrap();
    }
}
