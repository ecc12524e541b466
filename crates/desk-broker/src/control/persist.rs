//! `<session>/control.json`: the durable part of a session's control state, written 0600
//! through a temporary file and a rename, fsynced, before the answer that changed it.

use std::io::Write as _;

use desk_contract::control::{ControlMode, StopReason};
use desk_desktop::SessionDir;
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;

/// What `control.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Persisted {
    pub(super) owner: Option<String>,
    pub(super) mode: ControlMode,
    pub(super) generation: u64,
    pub(super) target_revision: u64,
    pub(super) stopped: bool,
    pub(super) stop_reason: Option<StopReason>,
}

impl Default for Persisted {
    fn default() -> Persisted {
        Persisted {
            owner: None,
            mode: ControlMode::Act,
            generation: 1,
            target_revision: 0,
            stopped: false,
            stop_reason: None,
        }
    }
}

pub(super) fn load(dir: &SessionDir) -> Result<Persisted, BrokerError> {
    let path = dir.control_file();
    match std::fs::read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(BrokerError::json("read the control state"))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Persisted::default()),
        Err(error) => Err(BrokerError::io("read the control state", &path)(error)),
    }
}

/// Writes `control.json` 0600 through a temporary file and a rename, fsynced.
pub(super) fn save(dir: &SessionDir, persisted: &Persisted) -> Result<(), BrokerError> {
    let path = dir.control_file();
    let temporary = path.with_extension("json.tmp");
    let bytes =
        serde_json::to_vec(persisted).map_err(BrokerError::json("encode the control state"))?;
    let write = || -> std::io::Result<()> {
        let mut file = crate::private::create_file(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
    };
    write().map_err(BrokerError::io("write the control state", &path))
}
