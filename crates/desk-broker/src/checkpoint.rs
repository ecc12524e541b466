//! Checkpoints and retrieval: proving that post-reset changes reached the attempt file, and
//! handing out the checkpointed bytes and the input logs.
//!
//! Checkpoint: the attempt file is accepted as the agent saved it (`already_saved`) when its
//! SHA-256 differs from the reset SHA-256 and it last changed no earlier than the last input the
//! broker sent for an action (`events.json`; 50 ms of slack for the kernel's coarse file clock). Otherwise (unchanged, or saved before a later edit) the profile's
//! save chord is sent when one is documented and an app-owned window is active, and the file is
//! polled for up to `save_timeout_ms` until it was written again, differs from reset and holds
//! still (`controller_save`). The gesture's input is logged like an action's (`provenance`
//! `broker_action`) with `origin` `checkpoint` and the last accepted action's index. A foreign
//! window in front, a missing save chord, or a file the gesture did not rewrite is
//! `checkpoint_failed`. Either way the bytes must then pass the validator of the profile's
//! `[attempt] format` (`artifact`), else `artifact_invalid` and no checkpoint is recorded. The
//! checkpointed bytes are copied to `<session>/checkpoint/<file>`; `retrieve_artifact` returns
//! that copy after verifying its hash. Both write a signed record (`checkpoint`, `artifact`)
//! before answering; the evidence keeps its own copy of the bytes.
//!
//! Just over 400 lines: save detection, the checkpoint copy and retrieval share the attempt file's
//! rules.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use desk_contract::api::{ArtifactResponse, CheckpointResponse, SaveMethod};
use desk_contract::events::Origin;
use desk_contract::{Action, b64, validate_action};

use crate::artifact::read::{
    FileStamp, MAX_ATTEMPT_BYTES, Reader, read_workspace_file, workspace_file_stamp,
};
use crate::broker::{Broker, Inner, wrong_state};
use crate::door::{Door, Need};
use crate::error::BrokerError;
use crate::evidence;
use crate::ids::SessionId;
use crate::ledger::records::Checkpointed;
use crate::logs::{EventLogs, FrameTiming};
use crate::reset::file_digest;
use crate::store::SessionRow;

const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// How much earlier than the last input a file may appear modified and still count as saved
/// after it: Linux stamps files from its coarse clock, up to a scheduler tick (10 ms at 100 Hz)
/// behind the clock input is stamped with, and an app writes its save right after the keys.
const MTIME_SLACK_MS: u64 = 50;

fn method_name(method: SaveMethod) -> &'static str {
    match method {
        SaveMethod::AlreadySaved => "already_saved",
        SaveMethod::ControllerSave => "controller_save",
    }
}

fn checkpoint_copy_path(session: &SessionRow, attempt_path: &Path) -> PathBuf {
    let file_name = attempt_path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "attempt".into());
    session.dir().checkpoint_file(&file_name)
}

impl Inner {
    fn checkpoint(&self, session_id: &SessionId) -> Result<CheckpointResponse, BrokerError> {
        self.enter(session_id, "checkpoint", Need::Observe, |door| {
            self.checkpoint_in(session_id, door)
        })
    }

    fn checkpoint_in(
        &self,
        session_id: &SessionId,
        mut door: Door<'_>,
    ) -> Result<CheckpointResponse, BrokerError> {
        let session = door.session().clone();
        let (Some(attempt_path), Some(reset_sha)) = (
            session.attempt_path.clone().map(PathBuf::from),
            session.reset_sha.clone(),
        ) else {
            return Err(wrong_state("checkpoint", &session));
        };
        let profile = self
            .config
            .profiles
            .get(&session.profile)
            .map_err(|_| BrokerError::NotFound(format!("profile {:?}", session.profile)))?;
        // Read by a child as the session's app uid (`artifact::read`), never by the broker.
        let reader = Reader::for_session(self.config.workspace_reader.as_deref(), &session.dir());
        let saved = SavedFile::read(&attempt_path, &reader)?;
        // An artifact that last changed before the last input is not proof of the last edit.
        let last_input_ms = EventLogs::new(&session.dir()).last_edit_input_ms()?;
        let stale = last_input_ms
            .is_some_and(|input_ms| saved.modified_ms.saturating_add(MTIME_SLACK_MS) < input_ms);
        if !stale
            && session.checkpoint_sha.as_deref() == Some(saved.sha256.as_str())
            && let Some(method) = session.checkpoint_method.as_deref()
        {
            let method = if method == "controller_save" {
                SaveMethod::ControllerSave
            } else {
                SaveMethod::AlreadySaved
            };
            return Ok(CheckpointResponse {
                session_id: session.id.to_string(),
                method,
                sha256: saved.sha256,
                size: saved.size,
                reset_sha256: reset_sha,
            });
        }
        let (method, saved) = if saved.sha256 != reset_sha && !stale {
            (SaveMethod::AlreadySaved, saved)
        } else {
            let why = if stale {
                "the attempt file last changed before the last input"
            } else {
                "the attempt file is unchanged since reset"
            };
            if profile.save_keys.is_empty() {
                return Err(BrokerError::CheckpointFailed(format!(
                    "{why} and profile {:?} documents no save gesture; save from the app \
                     first",
                    profile.name
                )));
            }
            let Some(backend) = door.runtime().backend.as_mut() else {
                return Err(BrokerError::CheckpointFailed(format!(
                    "{why} and the session's desktop is gone"
                )));
            };
            let facts = backend
                .facts()
                .map_err(BrokerError::desktop("read desktop facts"))?;
            match facts.focus.active {
                Some(window) if window.is_app => {}
                Some(window) => {
                    return Err(BrokerError::CheckpointFailed(format!(
                        "{why}, and a window not owned by the app ({:?}) is in front; finish \
                         or close that dialog first, then checkpoint again",
                        window.title
                    )));
                }
                None => {
                    return Err(BrokerError::CheckpointFailed(format!(
                        "{why}, and no app window is active; activate the app first, then \
                         checkpoint again"
                    )));
                }
            }
            let save_action = Action::Key {
                keys: profile.save_keys.clone(),
                intent: "checkpoint save".into(),
            };
            let validated = validate_action(&save_action, door.display()).map_err(|error| {
                BrokerError::Internal(format!("profile save gesture is invalid: {error}"))
            })?;
            let Some(backend) = door.runtime().backend.as_mut() else {
                return Err(BrokerError::Internal("desktop vanished".to_string()));
            };
            tracing::info!(%session_id, keys = ?profile.save_keys, stale, "checkpoint: controller save");
            let outcome = backend
                .execute(validated.input(), self.config.settle)
                .map_err(BrokerError::desktop("send the save gesture"))?;
            let timing = outcome.frame.as_ref().map(|frame| {
                let handoff_ms = session.handoff_ms.unwrap_or(frame.captured_at_ms);
                FrameTiming {
                    sequence: session.last_sequence + 1,
                    captured_at_ms: frame.captured_at_ms,
                    handoff_ms,
                    previous_frame_ms: session.last_frame_ms.unwrap_or(handoff_ms),
                }
            });
            EventLogs::new(&session.dir()).append(
                &outcome,
                Origin::Checkpoint,
                session.next_action_index().checked_sub(1),
                timing,
            )?;
            if let Some(timing) = timing {
                let session = door.session_mut();
                session.last_sequence = timing.sequence;
                session.last_frame_ms = Some(timing.captured_at_ms);
            }
            door.commit()?;
            let resaved = wait_for_save(
                &attempt_path,
                &reader,
                &saved,
                &reset_sha,
                profile.save_timeout_ms,
            )?;
            (SaveMethod::ControllerSave, resaved)
        };
        self.config
            .validators
            .validate(profile.attempt.format, &saved.bytes)?;
        let SavedFile {
            sha256,
            size,
            bytes,
            ..
        } = saved;
        let copy_path = checkpoint_copy_path(&session, &attempt_path);
        write_synced(&copy_path, &bytes)?;
        let file_name = copy_path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        crate::ledger::records::checkpoint(
            self,
            &mut door,
            Checkpointed {
                file_name: &file_name,
                bytes: &bytes,
                sha256: &sha256,
                size,
                method: method_name(method),
            },
        )?;
        tracing::info!(
            %session_id,
            sha256,
            size,
            method = method_name(method),
            "checkpointed"
        );
        Ok(CheckpointResponse {
            session_id: session.id.to_string(),
            method,
            sha256,
            size,
            reset_sha256: reset_sha,
        })
    }

    fn artifact(&self, session_id: &SessionId) -> Result<ArtifactResponse, BrokerError> {
        self.enter(session_id, "retrieve_artifact", Need::Live, |door| {
            self.artifact_in(session_id, door.session())
        })
    }

    fn artifact_in(
        &self,
        session_id: &SessionId,
        session: &SessionRow,
    ) -> Result<ArtifactResponse, BrokerError> {
        let (Some(checkpoint_sha), Some(attempt_path)) =
            (session.checkpoint_sha.clone(), session.attempt_path.clone())
        else {
            return Err(BrokerError::CheckpointRequired(
                "no checkpoint yet; call checkpoint before retrieving the artifact".to_string(),
            ));
        };
        let attempt_path = PathBuf::from(attempt_path);
        let (sha256, size, bytes) = file_digest(&checkpoint_copy_path(session, &attempt_path))?;
        if sha256 != checkpoint_sha {
            return Err(BrokerError::Internal(format!(
                "checkpointed artifact of session {session_id} no longer matches its hash"
            )));
        }
        let filename = attempt_path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        evidence::artifact(self.evidence(), session, &filename, &sha256, size)?;
        Ok(ArtifactResponse {
            filename,
            bytes_base64: b64::encode(&bytes),
            sha256,
            size,
        })
    }

    fn log_text(&self, session_id: &SessionId, frame_aligned: bool) -> Result<String, BrokerError> {
        self.enter(session_id, "retrieve_events", Need::Live, |door| {
            let logs = EventLogs::new(&door.session().dir());
            if frame_aligned {
                logs.read_frame_events()
            } else {
                logs.read_events()
            }
        })
    }
}

/// An attempt file as read at one moment.
struct SavedFile {
    sha256: String,
    size: u64,
    bytes: Vec<u8>,
    /// Modification time, milliseconds since the Unix epoch (floored).
    modified_ms: u64,
}

impl SavedFile {
    /// Reads the attempt file without trusting it (`artifact::read`: by a child as `reader`, no
    /// link, a plain file of bounded size, read from the descriptor it was checked on).
    fn read(path: &Path, reader: &Reader) -> Result<SavedFile, BrokerError> {
        let file = read_workspace_file(path, MAX_ATTEMPT_BYTES, reader)?;
        let sha256 = crate::util::sha256_hex(&file.bytes);
        Ok(SavedFile {
            sha256,
            size: u64::try_from(file.bytes.len()).unwrap_or(u64::MAX),
            bytes: file.bytes,
            modified_ms: file.modified_ms,
        })
    }

    fn same_as(&self, other: &SavedFile) -> bool {
        self.sha256 == other.sha256 && self.modified_ms == other.modified_ms
    }
}

/// Polls until the file was written again after `before` (its hash or modification time
/// differs), differs from `reset_sha`, and reads the same twice in a row. A poll whose
/// [`FileStamp`] equals the previous poll's, when that poll read no save, reads nothing.
fn wait_for_save(
    path: &Path,
    reader: &Reader,
    before: &SavedFile,
    reset_sha: &str,
    timeout_ms: u32,
) -> Result<SavedFile, BrokerError> {
    let deadline = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
    let mut previous: Option<SavedFile> = None;
    // The stamp of the last poll that read no save yet: while the name's stamp stays the same,
    // the file was not written, so the read (a child process and the whole file) is skipped.
    // A changed file is always read, the confirming read included.
    let mut unchanged_at: Option<FileStamp> = None;
    loop {
        let stamp = workspace_file_stamp(path);
        if stamp.is_none() || stamp != unchanged_at {
            // The app may replace the file by rename; a brief absence is not a failure.
            let current = SavedFile::read(path, reader).ok();
            unchanged_at = None;
            match current {
                Some(current) if !current.same_as(before) && current.sha256 != reset_sha => {
                    if previous
                        .as_ref()
                        .is_some_and(|previous| previous.same_as(&current))
                    {
                        return Ok(current);
                    }
                    previous = Some(current);
                }
                _ => {
                    previous = None;
                    unchanged_at = stamp;
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(BrokerError::CheckpointFailed(format!(
                "the save gesture did not write a changed attempt file within {timeout_ms} ms"
            )));
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), BrokerError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(BrokerError::io("create", dir))?;
    }
    let mut file =
        std::fs::File::create(path).map_err(BrokerError::io("create the checkpoint copy", path))?;
    std::io::Write::write_all(&mut file, bytes)
        .map_err(BrokerError::io("write the checkpoint copy", path))?;
    file.sync_all()
        .map_err(BrokerError::io("fsync the checkpoint copy", path))
}

impl Broker {
    /// `checkpoint_save`.
    pub async fn checkpoint(
        &self,
        session_id: &SessionId,
    ) -> Result<CheckpointResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.checkpoint(&session_id)
        })
        .await
        .map_err(crate::journal::store_unavailable("checkpoint_save"))
    }

    /// `retrieve_artifact`: the checkpointed bytes; `checkpoint_required` before a checkpoint.
    pub async fn artifact(&self, session_id: &SessionId) -> Result<ArtifactResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.artifact(&session_id)
        })
        .await
    }

    /// `retrieve_events`: `events.json` as NDJSON text.
    pub async fn events(&self, session_id: &SessionId) -> Result<String, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.log_text(&session_id, false)
        })
        .await
    }

    /// `retrieve_frame_events`: `frame_events.json` as NDJSON text.
    pub async fn frame_events(&self, session_id: &SessionId) -> Result<String, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.log_text(&session_id, true)
        })
        .await
    }
}

#[cfg(test)]
mod tests;
