//! [`Hooked`]: a fake desktop that calls a test's hook around its captures and actions, the one
//! wrapper behind the tests that need a request held inside the desktop: [`gated_harness`] (a
//! Stop mid-program in `control_stop.rs`, a kill mid-action in `kill_fence.rs`) and the slow
//! desktops of `fair.rs`. It declares nothing beyond the common methods: the clipboard and
//! accessibility refuse, and there are no windows to list.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use desk_broker::{BackendRequest, Broker, BrokerConfig};
use desk_contract::desktop::{ActionOutcome, DesktopFacts, Frame, Handoff};
use desk_contract::{DisplaySize, InputAction, SettlePolicy};
use desk_desktop::fake::{FakeHandle, FakeSave};
use desk_desktop::{AppLaunch, BackendError, DesktopBackend, FakeDesktop, Unsupported};
use desk_server::router;

use crate::support::{Harness, config};

/// When a [`Hooked`] desktop calls its hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moment {
    BeforeCapture,
    BeforeExecute,
    AfterExecute,
}

/// The hook a [`Hooked`] desktop calls; one per desktop.
pub(crate) type Hook = Box<dyn FnMut(Moment) + Send>;

/// A fake desktop that calls `hook` before each capture and before and after each action.
pub(crate) struct Hooked {
    inner: FakeDesktop,
    hook: Hook,
}

impl DesktopBackend for Hooked {
    fn display_size(&self) -> DisplaySize {
        self.inner.display_size()
    }
    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError> {
        self.inner.start_app(launch)
    }
    fn capture(&mut self) -> Result<Frame, BackendError> {
        (self.hook)(Moment::BeforeCapture);
        self.inner.capture()
    }
    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        (self.hook)(Moment::BeforeExecute);
        let outcome = self.inner.execute(action, settle);
        (self.hook)(Moment::AfterExecute);
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
        self.inner.process_ids()
    }
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

/// A broker over the router whose every desktop is [`Hooked`] with a hook from `make_hook`, on a
/// fake that saves its attempt file; `adjust` edits the broker's configuration first.
pub(crate) fn hooked_harness(
    adjust: impl FnOnce(&mut BrokerConfig),
    make_hook: impl Fn() -> Hook + Send + Sync + 'static,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path().to_path_buf());
    adjust(&mut config);
    let fake = FakeHandle::default();
    fake.set_save(FakeSave::AttemptFromArgv);
    let handle = fake.clone();
    let broker = Broker::open(config, move |request: &BackendRequest| {
        let desktop: Box<dyn DesktopBackend> = Box::new(Hooked {
            inner: FakeDesktop::with_handle(request.display, handle.clone()),
            hook: make_hook(),
        });
        Ok::<_, BackendError>(desktop)
    })
    .unwrap();
    Harness {
        app: router(broker.clone()),
        broker,
        fake,
        dir,
    }
}

/// A [`hooked_harness`] whose desktops stop after their action number `gate_at` (0-based),
/// tell the test through the returned receiver, and wait for the returned sender's go-ahead:
/// the moment a Stop or a kill lands mid-action.
pub(crate) fn gated_harness(
    gate_at: usize,
) -> (Arc<Harness>, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started_tx, started_rx) = mpsc::channel();
    let (proceed_tx, proceed_rx) = mpsc::channel();
    let proceed = Arc::new(Mutex::new(proceed_rx));
    let started_tx = Mutex::new(started_tx);
    let harness = hooked_harness(
        |_| {},
        move || {
            let started = started_tx.lock().unwrap().clone();
            let proceed = Arc::clone(&proceed);
            let mut executed = 0;
            Box::new(move |moment| {
                if moment != Moment::AfterExecute {
                    return;
                }
                if executed == gate_at {
                    let _ = started.send(());
                    let _ = proceed.lock().unwrap().recv();
                }
                executed += 1;
            })
        },
    );
    (Arc::new(harness), started_rx, proceed_tx)
}
