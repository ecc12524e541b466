//! [`BackendFactory`]: how a broker gets a desktop for a session, next to the
//! [`DesktopBackend`] it returns, and this crate's two factories: [`LocalFactory`] (a sandboxed
//! [`LocalDesktop`] per session, reattached across broker restarts) and [`FakeFactory`] (a
//! [`FakeDesktop`] per session, for `serve --backend fake`).

use std::path::PathBuf;

use desk_contract::DisplaySize;
use desk_contract::desktop::LimitsMode;

use crate::LocalDesktopConfig;
use crate::fake::FakeSave;
use crate::layout::SessionDir;
use crate::{BackendCapabilities, BackendError, DesktopBackend, FakeDesktop, LocalDesktop};
use crate::{SandboxPolicy, launcher};

/// What a factory needs to create one session's desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendRequest {
    /// The session the desktop belongs to.
    pub session_id: String,
    /// `<state_dir>/sessions/<id>`; exists when the factory is called.
    pub session_dir: SessionDir,
    /// The display size to create.
    pub display: DisplaySize,
    /// The app profile's read-only paths, shown inside the desktop's sandbox.
    pub read_only: Vec<PathBuf>,
    /// The app profile's filesystem view (`AppProfile::fs_view`).
    pub view: crate::sandbox::FsView,
    /// The workspace policy's writable directories as the policy names them (relative to the
    /// workspace: `attempt` or below it), the only host-backed paths the desktop's sandbox may
    /// write besides its run directory. Plain paths: a sandboxing factory checks and turns them
    /// into its binds (anything else is refused, [`BackendError::Rejected`]). Empty: the
    /// attempt directory alone.
    pub writable: Vec<PathBuf>,
    /// The session's memory, process and CPU limits (`sandbox::cgroup`); a reattached desktop
    /// keeps those it started with.
    pub limits: crate::sandbox::cgroup::Limits,
}

/// Creates one desktop per session, on the session's first reset, and adopts surviving desktops
/// when a broker restarts. Called on a blocking thread, so it may launch processes and wait for
/// them.
pub trait BackendFactory: Send + Sync + 'static {
    /// Creates the desktop for `request`.
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError>;

    /// Adopts the desktop a previous broker run left running for `request`'s session, so the
    /// session continues across a broker restart (crash or upgrade). Called by the broker at
    /// start for every unreleased session that had no action in flight.
    ///
    /// `Ok(None)`: no desktop was ever created for the session. `Err`: one existed but cannot be
    /// adopted (a process died, the worker does not answer, the display differs); the broker then
    /// reaps it with [`BackendFactory::reap_orphans`] and the session fails with
    /// `desktop_failed`. Must not kill anything itself. The default adopts nothing.
    fn reattach(
        &self,
        _request: &BackendRequest,
    ) -> Result<Option<Box<dyn DesktopBackend>>, BackendError> {
        Ok(None)
    }

    /// Whether this factory can create a desktop on this machine at all, asked before a new
    /// lease is granted (a sandboxing factory checks that the kernel allows its sandbox:
    /// [`BackendError::SandboxUnavailable`] otherwise). Called on a blocking thread. The
    /// default can always create.
    fn check_available(&self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Kills whatever a previous broker run left running for the session in `session_dir` (its
    /// desktop was not reattached). Returns how many processes were found. Called at startup
    /// for every unreleased session that is not reattached and for every session directory the
    /// store does not know as unreleased, and on release when the session has no live desktop.
    /// The default finds nothing.
    fn reap_orphans(&self, _session_dir: &SessionDir) -> usize {
        0
    }

    /// What every desktop this factory makes offers, asked before any exists: the broker's
    /// capabilities document says what this answers. A desktop declares its own
    /// ([`DesktopBackend::capabilities`]). The default declares nothing beyond the common
    /// methods.
    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::NONE
    }
}

impl<F> BackendFactory for F
where
    F: Fn(&BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> + Send + Sync + 'static,
{
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> {
        self(request)
    }
}

/// Creates a [`LocalDesktop`] per session, reattaches to the desktops an earlier broker run left
/// running, and reaps those it cannot reattach.
#[derive(Debug, Clone)]
pub struct LocalFactory {
    worker: Vec<String>,
    sandbox: SandboxPolicy,
    private_paths: Vec<PathBuf>,
    limits_mode: LimitsMode,
    cgroup_root: PathBuf,
}

impl LocalFactory {
    /// Desktops whose worker is `worker` (program and arguments), contained by `sandbox`, whose
    /// handoff is refused when any of `private_paths` is visible inside.
    pub fn new(
        worker: Vec<String>,
        sandbox: SandboxPolicy,
        private_paths: Vec<PathBuf>,
    ) -> LocalFactory {
        LocalFactory {
            worker,
            sandbox,
            private_paths,
            limits_mode: LimitsMode::Enforced,
            cgroup_root: PathBuf::from(crate::sandbox::cgroup::CGROUP_ROOT),
        }
    }

    /// Whether sessions get their limits (`Off`: the operator's `--unsafe-no-limits`), and
    /// where the cgroup v1 hierarchies are mounted.
    pub fn with_limits(mut self, mode: LimitsMode, cgroup_root: PathBuf) -> LocalFactory {
        self.limits_mode = mode;
        self.cgroup_root = cgroup_root;
        self
    }

    /// Whether a new desktop must get its limits: the sandbox is on and the operator did not
    /// turn limits off.
    fn limits_required(&self) -> bool {
        self.limits_mode.is_enforced() && matches!(self.sandbox, SandboxPolicy::On { .. })
    }

    fn config(&self, request: &BackendRequest) -> Result<LocalDesktopConfig, BackendError> {
        let mut config = LocalDesktopConfig::new(
            request.display,
            self.worker.clone(),
            request.session_dir.clone(),
        );
        config.sandbox = self.sandbox;
        config.read_only = request.read_only.clone();
        config.view = request.view.clone();
        config.writable = crate::sandbox::WritableDirs::for_request(&request.writable)?;
        config.limits = request.limits;
        config.limits_mode = self.limits_mode;
        config.cgroup_root = self.cgroup_root.clone();
        config.private_paths = self.private_paths.clone();
        Ok(config)
    }
}

impl BackendFactory for LocalFactory {
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> {
        Ok(Box::new(LocalDesktop::start(self.config(request)?)?))
    }

    fn reattach(
        &self,
        request: &BackendRequest,
    ) -> Result<Option<Box<dyn DesktopBackend>>, BackendError> {
        Ok(LocalDesktop::reattach(self.config(request)?)?
            .map(|desktop| Box::new(desktop) as Box<dyn DesktopBackend>))
    }

    fn check_available(&self) -> Result<(), BackendError> {
        crate::sandbox::probe::check(self.sandbox)?;
        if self.limits_required() {
            crate::sandbox::cgroup::check_available(&self.cgroup_root)?;
        }
        Ok(())
    }

    fn reap_orphans(&self, session_dir: &SessionDir) -> usize {
        launcher::reap_recorded(session_dir)
    }

    fn capabilities(&self) -> BackendCapabilities {
        crate::launcher::capabilities(matches!(self.sandbox, SandboxPolicy::On { .. }))
    }
}

/// `serve --backend fake`: one [`FakeDesktop`] per session, launching nothing. The save chord
/// writes the fixture DXF over the attempt file. Fake desktops live in this process only, so a
/// restarted broker reattaches none (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct FakeFactory;

impl BackendFactory for FakeFactory {
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> {
        let desktop = FakeDesktop::new(request.display);
        desktop.handle().set_save(FakeSave::FixtureDxf);
        Ok(Box::new(desktop))
    }

    /// What `serve --backend fake` documents: a clipboard; no accessibility, and no windows
    /// view (what a fake desktop lists is a test fixture's, not an app's).
    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities {
            clipboard: true,
            ..BackendCapabilities::NONE
        }
    }
}
