//! App profiles: data (TOML) describing how to start an app for one attempt, recognise and
//! prepare its main window, and save its work.
//!
//! A profile never runs code of its own; it names a command, environment, seeded files, the
//! attempt file template and the documented save gesture. Placeholders in `command`, `env`
//! values and seeded file contents: `{attempt}` (attempt file path), `{home}` (private home),
//! `{session}` (session directory).
//!
//! This file keeps the profile's whole schema (every table a profile file may hold, with its
//! checks) beside its loading and preparing; that is why it is over 400 lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use desk_contract::SettlePolicy;
use desk_contract::desktop::{OverlayRule, WindowRules};
use serde::Deserialize;

use crate::backend::AppLaunch;
use crate::layout::SessionDir;

/// Why a profile could not be loaded or prepared.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The TOML was malformed or had unknown fields.
    #[error("failed to parse profile {name}: {message}")]
    Parse {
        /// Profile name or path.
        name: String,
        /// Parser message.
        message: String,
    },
    /// A field had an invalid value.
    #[error("invalid profile {name}: {message}")]
    Invalid {
        /// Profile name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// No profile with that name.
    #[error("unknown profile {0:?}")]
    Unknown(String),
    /// Preparing files for an attempt failed.
    #[error("failed to prepare {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// The attempt file a profile prepares at reset and the broker checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptSpec {
    /// File name inside the session's attempt directory, e.g. `attempt.dxf`.
    pub filename: String,
    /// Initial contents.
    #[serde(default)]
    pub template: String,
    /// Initial contents as standard base64, for binary formats (FreeCAD's zipped `.FCStd`);
    /// exclusive with a non-empty `template`.
    #[serde(default)]
    pub template_base64: Option<String>,
    /// The artifact's format, naming the validator a checkpoint runs on the saved file.
    #[serde(default)]
    pub format: ArtifactFormat,
}

/// An attempt file's format and so its checkpoint validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactFormat {
    /// No validator: any changed file is accepted.
    #[default]
    Any,
    /// A DXF: must be complete (ends with `EOF`) and parse with the scorer's DXF reader.
    Dxf,
    /// A FreeCAD `.FCStd`: a zip with a bounded `Document.xml` holding a stored shape or a
    /// TechDraw page.
    Fcstd,
    /// An AutoCAD 2018 DWG: `AC1032` in its first 6 bytes and a file header that decrypts to
    /// the DWG file id.
    Dwg,
}

impl AttemptSpec {
    /// The bytes written to the attempt file at reset.
    fn initial_bytes(&self) -> Result<Vec<u8>, String> {
        match &self.template_base64 {
            None => Ok(self.template.clone().into_bytes()),
            Some(_) if !self.template.is_empty() => {
                Err("attempt.template and attempt.template_base64 are exclusive".to_string())
            }
            Some(encoded) => {
                use base64::Engine as _;
                let compact: String = encoded.split_whitespace().collect();
                base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .map_err(|error| format!("attempt.template_base64 is not base64: {error}"))
            }
        }
    }
}

/// Window recognition and preparation rules.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    /// Main window class (`WM_CLASS`), case-insensitive.
    #[serde(default)]
    pub class: Option<String>,
    /// Main window title prefix.
    #[serde(default)]
    pub title_prefix: Option<String>,
    /// Handoff waits until the title contains this; `{attempt_name}` is the attempt file name.
    #[serde(default)]
    pub ready_title_contains: Option<String>,
    /// Ask the window manager to maximize.
    #[serde(default = "yes")]
    pub maximize: bool,
    /// Milliseconds to wait for the window.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u32,
    /// Windows seat input must never reach (`[[window.prohibited]]`: label, class_contains,
    /// title_contains), and panels inside them named through AT-SPI (accessible_role,
    /// accessible_name); the worker refuses such input with `destination_prohibited`.
    #[serde(default)]
    pub prohibited: Vec<desk_contract::desktop::ProhibitedDestination>,
}

fn yes() -> bool {
    true
}
fn default_timeout() -> u32 {
    20_000
}

/// Overlay dismissal rule as written in TOML.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlaySpec {
    /// Title substring.
    pub title_contains: String,
    /// Chord to dismiss it.
    pub dismiss_keys: Vec<String>,
}

/// One app profile.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppProfile {
    /// Profile name.
    pub name: String,
    /// What the profile is for.
    #[serde(default)]
    pub description: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Host paths the session's sandbox shows read-only at the same place: the app's own
    /// install outside `/usr`, task inputs. Absolute, without `..`, never `/`. There is no
    /// writable counterpart: the attempt directory and home are the only writable paths, and
    /// a handoff whose workspace shows a forbidden path is still refused.
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// The host filesystem the session's sandbox shows (`[sandbox]`, see
    /// [`crate::sandbox::view`]): `view = "allowlist"` with the programs, paths and run-time
    /// libraries the app needs beyond its command, or `view = "broad"` (all of `/usr` and
    /// `/etc`), which is also what a profile without the table gets.
    #[serde(default)]
    pub sandbox: Option<crate::sandbox::ViewSpec>,
    /// Files written below the private home before launch: relative path → contents.
    #[serde(default)]
    pub home_files: BTreeMap<String, String>,
    /// The attempt file.
    pub attempt: AttemptSpec,
    /// Main window rules.
    pub window: WindowSpec,
    /// Known overlays.
    #[serde(default)]
    pub overlays: Vec<OverlaySpec>,
    /// The documented save gesture, e.g. `["ctrl", "s"]`.
    #[serde(default)]
    pub save_keys: Vec<String>,
    /// Milliseconds to wait for the save gesture to change the attempt file.
    #[serde(default = "default_save_timeout")]
    pub save_timeout_ms: u32,
    /// What the app's process tree may run, checked from outside by the census
    /// (`crate::census`): the app's own program and each helper it really starts, with how
    /// many may run at once. Empty: the command's program alone, one instance.
    #[serde(default)]
    pub allowed_executables: Vec<crate::census::AllowedExecutable>,
    /// The session's limits (`[limits]`), each field overriding the default of
    /// [`crate::sandbox::cgroup::Limits`]; see [`AppProfile::limits`].
    #[serde(default)]
    pub limits: Option<LimitsSpec>,
}

/// A profile's `[limits]` table: what one session of it may use, enforced by its cgroups
/// (`sandbox::cgroup`). A missing field keeps the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Memory of all the session's processes together, in MiB (64 to 65,536).
    pub memory_mib: Option<u64>,
    /// Processes and threads of the session (64 to 65,536: the desktop alone takes about 40).
    pub pids: Option<u64>,
    /// CPU time in percent of one core (10 to 6,400).
    pub cpu_percent: Option<u32>,
}

impl LimitsSpec {
    /// The bounds of each field.
    const MEMORY_MIB: std::ops::RangeInclusive<u64> = 64..=65_536;
    const PIDS: std::ops::RangeInclusive<u64> = 64..=65_536;
    const CPU_PERCENT: std::ops::RangeInclusive<u32> = 10..=6_400;

    /// The first field out of its bounds, described.
    fn check(&self) -> Result<(), String> {
        let out = |field: &str, value: String, bounds: String| {
            Err(format!("limits.{field} = {value} is outside {bounds}"))
        };
        if let Some(value) = self.memory_mib.filter(|v| !Self::MEMORY_MIB.contains(v)) {
            return out(
                "memory_mib",
                value.to_string(),
                format!("{:?}", Self::MEMORY_MIB),
            );
        }
        if let Some(value) = self.pids.filter(|v| !Self::PIDS.contains(v)) {
            return out("pids", value.to_string(), format!("{:?}", Self::PIDS));
        }
        if let Some(value) = self.cpu_percent.filter(|v| !Self::CPU_PERCENT.contains(v)) {
            return out(
                "cpu_percent",
                value.to_string(),
                format!("{:?}", Self::CPU_PERCENT),
            );
        }
        Ok(())
    }
}

fn default_save_timeout() -> u32 {
    5_000
}

/// A profile resolved for one attempt: what to launch and where the attempt file lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedAttempt {
    /// What the backend launches.
    pub launch: AppLaunch,
    /// The attempt file.
    pub attempt_path: PathBuf,
    /// The documented save chord.
    pub save_keys: Vec<String>,
    /// How long the save may take.
    pub save_timeout_ms: u32,
}

fn substitute(text: &str, attempt: &Path, home: &Path, session: &Path) -> String {
    text.replace("{attempt}", &attempt.display().to_string())
        .replace("{home}", &home.display().to_string())
        .replace("{session}", &session.display().to_string())
}

impl AppProfile {
    /// Parses and checks one profile.
    pub fn from_toml(name_hint: &str, text: &str) -> Result<AppProfile, ProfileError> {
        let profile: AppProfile = toml::from_str(text).map_err(|error| ProfileError::Parse {
            name: name_hint.to_string(),
            message: error.to_string(),
        })?;
        profile.check()?;
        Ok(profile)
    }

    /// The limits of one session of this profile: the defaults (2 GiB, 512 processes and
    /// threads, one core) with the profile's `[limits]` over them.
    pub fn limits(&self) -> crate::sandbox::cgroup::Limits {
        let mut limits = crate::sandbox::cgroup::Limits::default();
        if let Some(spec) = &self.limits {
            if let Some(mib) = spec.memory_mib {
                limits.memory_bytes = mib << 20;
            }
            if let Some(pids) = spec.pids {
                limits.pids = pids;
            }
            if let Some(percent) = spec.cpu_percent {
                limits.cpu_percent = percent;
            }
        }
        limits
    }

    fn check(&self) -> Result<(), ProfileError> {
        let invalid = |message: &str| ProfileError::Invalid {
            name: self.name.clone(),
            message: message.to_string(),
        };
        if self.command.is_empty() || self.command[0].is_empty() {
            return Err(invalid("command must name a program"));
        }
        for path in &self.read_only {
            let normal = path
                .components()
                .skip(1)
                .all(|part| matches!(part, std::path::Component::Normal(_)));
            if !path.is_absolute() || !normal || path.parent().is_none() {
                return Err(invalid(&format!(
                    "read_only paths must be absolute, without `..`, and not `/`: {}",
                    path.display()
                )));
            }
        }
        if let Some(view) = &self.sandbox {
            view.check().map_err(|message| invalid(&message))?;
        }
        let filename = &self.attempt.filename;
        if filename.is_empty() || filename.contains('/') || filename.starts_with('.') {
            return Err(invalid("attempt.filename must be a plain file name"));
        }
        for relative in self.home_files.keys() {
            let path = Path::new(relative);
            if path.is_absolute() || path.components().any(|c| c.as_os_str() == "..") {
                return Err(invalid(
                    "home_files keys must be relative paths inside home",
                ));
            }
        }
        self.attempt
            .initial_bytes()
            .map_err(|message| invalid(&message))?;
        if let Some(limits) = &self.limits {
            limits.check().map_err(|message| invalid(&message))?;
        }
        for allowed in &self.allowed_executables {
            let path = Path::new(&allowed.path);
            if allowed.path.is_empty()
                || allowed.max == 0
                || path.components().any(|c| c.as_os_str() == "..")
                || (allowed.path.contains('/') && !path.is_absolute())
            {
                return Err(invalid(
                    "allowed_executables need an absolute path or a plain name and a max of 1 or more",
                ));
            }
        }
        Ok(())
    }

    /// The filesystem view its sandbox is built with (see [`crate::sandbox::ViewSpec::view_for`]).
    pub fn fs_view(&self) -> crate::sandbox::FsView {
        crate::sandbox::ViewSpec::view_for(self.sandbox.as_ref(), self.command.first())
    }

    /// Writes the home seed and the attempt file below `session_dir` and resolves the launch,
    /// in the workspace laid out for `sandbox` (the same policy the session's desktop runs
    /// under: see [`crate::sandbox::ensure_workspace`]). `writable` are the policy's writable
    /// directories (relative to the workspace, `attempt` or below it; empty: `attempt` alone):
    /// made, and kept (emptied) across resets, because a running sandbox binds them.
    pub fn prepare(
        &self,
        session_dir: impl AsRef<Path>,
        sandbox: crate::sandbox::SandboxPolicy,
        writable: &[PathBuf],
    ) -> Result<PreparedAttempt, ProfileError> {
        use crate::sandbox::workspace::{ATTEMPT_DIR, HOME_DIR, empty_dir};
        let initial = self
            .attempt
            .initial_bytes()
            .map_err(|message| ProfileError::Invalid {
                name: self.name.clone(),
                message,
            })?;
        if self.attempt.format == ArtifactFormat::Dwg && !initial.starts_with(b"AC1032") {
            // AutoCAD cannot open an empty or foreign attempt.dwg: the clean drawing is the
            // operator's, saved by their AutoCAD (docs/windows.md).
            return Err(ProfileError::Invalid {
                name: self.name.clone(),
                message: "a dwg attempt needs attempt.template_base64 holding the clean drawing, \
                          saved by AutoCAD in the 2018 format (AC1032); nothing was prepared"
                    .to_string(),
            });
        }
        let session_dir = &SessionDir::at(session_dir.as_ref());
        // Made (or found) first, so that under a root broker home and attempt land in the
        // out-of-tree workspace the sandbox uid can reach, at the path the sandbox binds.
        let workspace =
            crate::sandbox::ensure_workspace(session_dir, sandbox).map_err(|error| {
                ProfileError::Io {
                    path: session_dir.workspace(),
                    source: std::io::Error::other(error.to_string()),
                }
            })?;
        let home = workspace.join(HOME_DIR);
        let attempt_dir = workspace.join(ATTEMPT_DIR);
        let attempt_path = attempt_dir.join(&self.attempt.filename);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ProfileError::Io { path, source }
        };
        // Emptied each reset (never made anew: see `sandbox::workspace`), so nothing a previous
        // attempt left in them, links included, survives or is written through.
        // The view's read-only home directories are bound into the running sandbox: kept.
        let read_only: Vec<PathBuf> = self
            .fs_view()
            .read_only_home_dirs()
            .iter()
            .map(|dir| home.join(dir))
            .collect();
        empty_dir(&home, &read_only).map_err(io(&home))?;
        let writable = crate::sandbox::WritableDirs::for_request(writable).map_err(|error| {
            ProfileError::Invalid {
                name: self.name.clone(),
                message: error.to_string(),
            }
        })?;
        let kept = writable.under(&workspace);
        empty_dir(&attempt_dir, &kept).map_err(io(&attempt_dir))?;
        for dir in [&home.join(".config"), &home.join("tmp")] {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        for (relative, contents) in &self.home_files {
            let path = home.join(relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            let text = substitute(contents, &attempt_path, &home, session_dir.path());
            std::fs::write(&path, text).map_err(io(&path))?;
        }
        std::fs::write(&attempt_path, initial).map_err(io(&attempt_path))?;

        let sub = |text: &str| substitute(text, &attempt_path, &home, session_dir.path());
        let mut env = vec![
            ("HOME".to_string(), home.display().to_string()),
            (
                "XDG_CONFIG_HOME".to_string(),
                home.join(".config").display().to_string(),
            ),
            (
                "XDG_DATA_HOME".to_string(),
                home.join(".local/share").display().to_string(),
            ),
            (
                "XDG_CACHE_HOME".to_string(),
                home.join(".cache").display().to_string(),
            ),
            (
                "XDG_RUNTIME_DIR".to_string(),
                home.join("tmp").display().to_string(),
            ),
            ("TMPDIR".to_string(), home.join("tmp").display().to_string()),
        ];
        env.extend(
            self.env
                .iter()
                .map(|(key, value)| (key.clone(), sub(value))),
        );
        let ready = self
            .window
            .ready_title_contains
            .as_ref()
            .map(|text| text.replace("{attempt_name}", &self.attempt.filename));
        let window = WindowRules {
            class: self.window.class.clone(),
            title_prefix: self.window.title_prefix.clone(),
            ready_title_contains: ready,
            maximize: self.window.maximize,
            overlays: self
                .overlays
                .iter()
                .map(|overlay| OverlayRule {
                    title_contains: overlay.title_contains.clone(),
                    dismiss_keys: overlay.dismiss_keys.clone(),
                })
                .collect(),
            timeout_ms: self.window.timeout_ms,
            prohibited: self.window.prohibited.clone(),
        };
        Ok(PreparedAttempt {
            launch: AppLaunch {
                argv: self.command.iter().map(|part| sub(part)).collect(),
                env,
                cwd: attempt_dir,
                window,
                settle: SettlePolicy::default(),
            },
            attempt_path,
            save_keys: self.save_keys.clone(),
            save_timeout_ms: self.save_timeout_ms,
        })
    }
}

/// The profiles a broker offers: the built-in ones plus any loaded from a directory.
#[derive(Debug, Clone, Default)]
pub struct ProfileSet {
    profiles: BTreeMap<String, AppProfile>,
}

/// Built-in profiles shipped with the binary.
const BUILTIN: &[(&str, &str)] = &[
    ("librecad", include_str!("../profiles/librecad.toml")),
    ("generic", include_str!("../profiles/generic.toml")),
    ("freecad", include_str!("../profiles/freecad.toml")),
];

impl ProfileSet {
    /// The built-in profiles.
    pub fn builtin() -> Result<ProfileSet, ProfileError> {
        let mut set = ProfileSet::default();
        for (name, text) in BUILTIN {
            set.insert(AppProfile::from_toml(name, text)?);
        }
        Ok(set)
    }

    /// Adds or replaces a profile.
    pub fn insert(&mut self, profile: AppProfile) {
        self.profiles.insert(profile.name.clone(), profile);
    }

    /// Loads every `*.toml` in `dir`, replacing built-ins of the same name.
    pub fn load_dir(&mut self, dir: &Path) -> Result<(), ProfileError> {
        let entries = std::fs::read_dir(dir).map_err(|source| ProfileError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| ProfileError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let path = entry.path();
            if path.extension().is_some_and(|ext| ext == "toml") {
                let text = std::fs::read_to_string(&path).map_err(|source| ProfileError::Io {
                    path: path.clone(),
                    source,
                })?;
                self.insert(AppProfile::from_toml(&path.display().to_string(), &text)?);
            }
        }
        Ok(())
    }

    /// Looks a profile up by name.
    pub fn get(&self, name: &str) -> Result<&AppProfile, ProfileError> {
        self.profiles
            .get(name)
            .ok_or_else(|| ProfileError::Unknown(name.to_string()))
    }

    /// Profile names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }
}

// Here rather than in `sandbox/cgroup.rs` beside `Limits`: the profiles name the sandbox's
// types, so the sandbox names no profile.
impl crate::sandbox::cgroup::Limits {
    /// The limits of a session of the built-in profile `name` (its `[limits]` table over the
    /// defaults, `AppProfile::limits`): LibreCAD 1 GiB, FreeCAD and generic the default 2 GiB;
    /// 512 processes and threads and one core for all. A name that is not built in gets the
    /// defaults.
    pub fn for_profile(name: &str) -> crate::sandbox::cgroup::Limits {
        ProfileSet::builtin()
            .ok()
            .and_then(|set| set.get(name).ok().map(|profile| profile.limits()))
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
