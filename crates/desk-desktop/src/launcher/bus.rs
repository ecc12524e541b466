//! The session's private accessibility bus: a session D-Bus (`dbus-daemon --session`, its socket
//! `bus` in the workspace's run directory) and, on it, `at-spi-bus-launcher`, which starts the
//! AT-SPI bus (a second `dbus-daemon`, its socket below the run directory too) and
//! `at-spi2-registryd` on it. Both run inside the session's sandbox like every desktop process;
//! the app and the worker get `DBUS_SESSION_BUS_ADDRESS` pointing at the session bus, so the
//! app's accessibility tree is visible to that session's worker and to nothing else.
//! See `docs/accessibility.md`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::LocalDesktop;
use crate::error::BackendError;

/// The session bus's socket file in the run directory.
pub(super) const SESSION_BUS_FILE: &str = "bus";

/// The AT-SPI bus launcher (Debian's at-spi2-core).
const AT_SPI_BUS_LAUNCHER: &str = "/usr/libexec/at-spi-bus-launcher";

/// How long the session bus may take to create its socket.
const BUS_TIMEOUT: Duration = Duration::from_secs(5);

/// A Unix socket path must fit `sun_path` (108 bytes with its NUL); the session bus's is
/// checked before it is started.
const MAX_SOCKET_PATH: usize = 100;

impl LocalDesktop {
    /// `DBUS_SESSION_BUS_ADDRESS` for the desktop's processes, when the session bus runs.
    pub(super) fn session_bus_address(&self) -> Option<String> {
        self.processes
            .iter()
            .any(|process| process.role == "session_bus")
            .then(|| format!("unix:path={}/{SESSION_BUS_FILE}", self.bus_dir()))
    }

    /// Starts the session bus and the AT-SPI bus launcher. Without a sandbox, a run directory
    /// too long for a socket path leaves the desktop without a bus (logged; accessibility
    /// requests then fail with a clear error) rather than failing the lease.
    pub(super) fn start_a11y_bus(&mut self) -> Result<(), BackendError> {
        let socket = format!("{}/{SESSION_BUS_FILE}", self.bus_dir());
        if socket.len() > MAX_SOCKET_PATH {
            tracing::warn!(
                path = %socket,
                "run directory too long for a bus socket: no accessibility bus"
            );
            return Ok(());
        }
        let host_dir = match self.split() {
            true => self
                .run_dir
                .parent()
                .map(|workspace| workspace.join(crate::sandbox::workspace::BUS_DIR))
                .unwrap_or_else(|| self.run_dir.clone()),
            false => self.run_dir.clone(),
        };
        let host_socket = host_dir.join(SESSION_BUS_FILE);
        super::records::remove_stale_socket(&host_socket, "bus socket")?;
        let address = format!("unix:path={socket}");
        let mut env = self.x_client_env();
        // The AT-SPI bus socket goes below the run directory, not the home directory.
        env.push(("XDG_RUNTIME_DIR".to_string(), self.bus_dir()));
        // With split identities the bus admits the app's uid too (`sandbox/host.rs`).
        let config = match (&self.sandbox, self.split()) {
            (Some(sandbox), true) => format!(
                "--config-file={}",
                sandbox
                    .host_dir()
                    .join(crate::sandbox::host_session_bus_config())
                    .display()
            ),
            _ => "--session".to_string(),
        };
        let argv: Vec<String> = [
            "dbus-daemon",
            &config,
            "--nofork",
            "--nopidfile",
            "--nosyslog",
            &format!("--address={address}"),
        ]
        .iter()
        .map(|arg| arg.to_string())
        .collect();
        self.spawn_logged(
            "session_bus",
            "session-bus",
            &argv,
            None,
            &env,
            Stdio::null(),
        )?;
        if let Err(error) = wait_for_socket(&host_socket) {
            return Err(self.with_log_tail(error, "session-bus"));
        }
        env.push(("DBUS_SESSION_BUS_ADDRESS".to_string(), address));
        let argv = vec![
            AT_SPI_BUS_LAUNCHER.to_string(),
            "--launch-immediately".to_string(),
        ];
        self.spawn_logged("a11y_bus", "a11y-bus", &argv, None, &env, Stdio::null())?;
        Ok(())
    }
}

fn wait_for_socket(path: &Path) -> Result<(), BackendError> {
    let deadline = Instant::now() + BUS_TIMEOUT;
    while !path.exists() {
        if Instant::now() >= deadline {
            return Err(BackendError::DesktopFailed(format!(
                "the session bus did not create {} within {} s",
                path.display(),
                BUS_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
