//! The broker's one view of a desktop: the [`DesktopBackend`] trait, its in-process
//! [`FakeDesktop`], and [`LocalDesktop`], which launches a session's processes (Xvfb, window
//! manager, app, desktop worker) and talks to the worker over its JSONL pipe.
//!
//! Invariant: nothing in this crate connects to an X server. The only process that does is the
//! worker (`deskbroker-worker`, implemented in `desk-x11`).
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod backend;
pub mod census;
pub mod conformance;
mod control;
pub mod destroy;
mod error;
mod factory;
pub mod fake;
pub mod fake_dxf;
pub mod launcher;
pub mod layout;
pub mod profile;
pub mod remote;
pub mod sandbox;
mod worker_client;

pub use backend::{AppLaunch, DesktopBackend};
pub use control::{
    BackendCapabilities, RecordedControl, SessionControl, UnsignalledControl, WorkspaceControl,
};
pub use error::{BackendError, Unsupported};
pub use factory::{BackendFactory, BackendRequest, FakeFactory, LocalFactory};
pub use fake::FakeDesktop;
pub use launcher::{LocalDesktop, LocalDesktopConfig, OPENBOX_CONFIG};
pub use layout::{SessionDir, StateDir};
pub use profile::{AppProfile, ArtifactFormat, ProfileError, ProfileSet};
pub use remote::{RemoteDesktop, RemoteFactory, RemoteWorker};
pub use sandbox::SandboxPolicy;
