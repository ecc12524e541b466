//! [`Gated`]: a fake desktop that stops inside its `execute` number `gate_at` until the test
//! says go, shared by the tests that need a request caught inside the desktop (a Stop
//! mid-program in `control_stop.rs`, a kill mid-action in `kill_fence.rs`), and
//! [`gated_harness`], a broker whose every desktop is one.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use desk_broker::{BackendRequest, Broker};
use desk_contract::desktop::{ActionOutcome, DesktopFacts, Frame, Handoff};
use desk_contract::{DisplaySize, InputAction, SettlePolicy};
use desk_desktop::fake::{FakeHandle, FakeSave};
use desk_desktop::{AppLaunch, BackendError, DesktopBackend, FakeDesktop, Unsupported};
use desk_server::router;

use crate::support::{Harness, config};

/// A fake desktop whose `execute` number `gate_at` (0-based) tells the test it started and
/// waits for the test's go-ahead: the moment a Stop lands mid-program.
pub(crate) struct Gated {
    pub(crate) inner: FakeDesktop,
    pub(crate) executed: usize,
    pub(crate) gate_at: usize,
    pub(crate) started: mpsc::Sender<()>,
    pub(crate) proceed: Arc<Mutex<mpsc::Receiver<()>>>,
}

impl DesktopBackend for Gated {
    fn display_size(&self) -> DisplaySize {
        self.inner.display_size()
    }
    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError> {
        self.inner.start_app(launch)
    }
    fn capture(&mut self) -> Result<Frame, BackendError> {
        self.inner.capture()
    }
    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        let outcome = self.inner.execute(action, settle);
        if self.executed == self.gate_at {
            let _ = self.started.send(());
            let _ = self.proceed.lock().unwrap().recv();
        }
        self.executed += 1;
        outcome
    }
    fn facts(&mut self) -> Result<DesktopFacts, BackendError> {
        self.inner.facts()
    }
    fn release_held(&mut self) -> Result<Vec<String>, BackendError> {
        self.inner.release_held()
    }
    fn stop_app(&mut self) -> Result<(), BackendError> {
        self.inner.stop_app()
    }
    fn shutdown(&mut self) -> Result<(), BackendError> {
        self.inner.shutdown()
    }
    fn process_ids(&self) -> Vec<u32> {
        Vec::new()
    }
    /// Declares nothing beyond the common methods (as before the trait had no defaults): the
    /// clipboard and accessibility refuse, and there are no windows to list.
    fn clipboard_read(
        &mut self,
        _max_output_bytes: u64,
    ) -> Result<desk_contract::clipboard::ClipboardText, BackendError> {
        Err(BackendError::unsupported(Unsupported::Clipboard))
    }
    fn clipboard_write(
        &mut self,
        _text: &str,
    ) -> Result<desk_contract::clipboard::ClipboardWritten, BackendError> {
        Err(BackendError::unsupported(Unsupported::Clipboard))
    }
    fn accessibility(
        &mut self,
        _limits: desk_contract::a11y::AxLimits,
    ) -> Result<desk_contract::a11y::AxTree, BackendError> {
        Err(BackendError::unsupported(Unsupported::Accessibility))
    }
    fn windows(&mut self) -> Result<Vec<desk_contract::desktop::AppWindowInfo>, BackendError> {
        Ok(Vec::new())
    }
    fn capabilities(&self) -> desk_desktop::BackendCapabilities {
        desk_desktop::BackendCapabilities::NONE
    }
}

/// A broker over the router whose desktops are [`Gated`] at `execute` number `gate_at`, on a
/// fake that saves its attempt file; with the receiver told when the gated step started and
/// the sender that lets it go on.
pub(crate) fn gated_harness(
    gate_at: usize,
) -> (Arc<Harness>, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeHandle::default();
    fake.set_save(FakeSave::AttemptFromArgv);
    let (started_tx, started_rx) = mpsc::channel();
    let (proceed_tx, proceed_rx) = mpsc::channel();
    let proceed = Arc::new(Mutex::new(proceed_rx));
    let handle = fake.clone();
    let broker = Broker::open(
        config(dir.path().to_path_buf()),
        move |request: &BackendRequest| {
            let desktop: Box<dyn DesktopBackend> = Box::new(Gated {
                inner: FakeDesktop::with_handle(request.display, handle.clone()),
                executed: 0,
                gate_at,
                started: started_tx.clone(),
                proceed: Arc::clone(&proceed),
            });
            Ok::<_, BackendError>(desktop)
        },
    )
    .unwrap();
    let harness = Arc::new(Harness {
        app: router(broker.clone()),
        broker,
        fake,
        dir,
    });
    (harness, started_rx, proceed_tx)
}
