//! The software versions a result depends on (the benchmark contract's version boundary): the
//! app, Xvfb, the window manager, the OS, and deskbroker's own version and commit. Read once per
//! run on the host that runs the desktops; a version that cannot be read is recorded as
//! `unknown`, never guessed.

use std::process::Command;

use serde::{Deserialize, Serialize};

/// What a version that could not be read is recorded as.
pub const UNKNOWN: &str = "unknown";

/// Versions recorded in every rollout record and summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftwareVersions {
    /// The app's package and version, e.g. `librecad 2.2.0-1`.
    pub app: String,
    /// The X server, e.g. `xvfb 2:21.1.7-3+deb12u13`.
    pub xvfb: String,
    /// The window manager, e.g. `openbox 3.6.1-10`.
    pub window_manager: String,
    /// The OS (`PRETTY_NAME` of os-release) and kernel release.
    pub os: String,
    /// The deskbroker version.
    pub deskbroker: String,
    /// The git commit deskbroker was built from.
    pub deskbroker_commit: String,
}

impl Default for SoftwareVersions {
    fn default() -> SoftwareVersions {
        SoftwareVersions {
            app: UNKNOWN.to_owned(),
            xvfb: UNKNOWN.to_owned(),
            window_manager: UNKNOWN.to_owned(),
            os: UNKNOWN.to_owned(),
            deskbroker: UNKNOWN.to_owned(),
            deskbroker_commit: UNKNOWN.to_owned(),
        }
    }
}

impl SoftwareVersions {
    /// Reads the versions of the Debian packages `app_package`, `xvfb` and `openbox` and of the
    /// OS on this host; deskbroker's version and commit come from the caller (build time).
    pub fn probe(app_package: &str, deskbroker: &str, deskbroker_commit: &str) -> SoftwareVersions {
        SoftwareVersions {
            app: package_version(app_package),
            xvfb: package_version("xvfb"),
            window_manager: package_version("openbox"),
            os: os_version(),
            deskbroker: deskbroker.to_owned(),
            deskbroker_commit: deskbroker_commit.to_owned(),
        }
    }

    /// The same versions with the app probed as `app_package` (a task played in another
    /// profile than the run's default; the built-in profiles are named by their package).
    pub fn for_app(&self, app_package: &str) -> SoftwareVersions {
        SoftwareVersions {
            app: package_version(app_package),
            ..self.clone()
        }
    }
}

/// `PACKAGE VERSION` from dpkg, or `unknown`.
fn package_version(package: &str) -> String {
    let output = Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", package])
        .output();
    match output {
        Ok(output) if output.status.success() && !output.stdout.is_empty() => {
            format!(
                "{package} {}",
                String::from_utf8_lossy(&output.stdout).trim()
            )
        }
        _ => UNKNOWN.to_owned(),
    }
}

/// `PRETTY_NAME (kernel RELEASE)`, with `unknown` for a part that cannot be read.
fn os_version() -> String {
    let name = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("PRETTY_NAME="))
                .map(|value| value.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| UNKNOWN.to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|_| UNKNOWN.to_owned());
    format!("{name} (kernel {kernel})")
}
