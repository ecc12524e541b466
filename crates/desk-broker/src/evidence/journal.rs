//! One session's open evidence journal: the signed writer, the running digests of both input
//! logs, and the chain state the hooks check; opened from disk or created with its
//! `session_started` record, and cached per session in [`Journals`].

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use desk_desktop::SessionDir;
use desk_evidence::durable::{self, Durable};
use desk_evidence::record::{ActionReceipt, LogDigest, NOT_INJECTED, SessionStarted};
use desk_evidence::{EvidenceError, EvidenceWriter, RecordBody, SigningKey};
use sha2::{Digest as _, Sha256};

use super::keys::load_or_create_key;
use super::shared::{
    JOURNAL_FILE, STAGING_DIR, create_private_dir, io_error, lock, session_evidence_dir,
};
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::logs::{EVENTS_FILE, FRAME_EVENTS_FILE};
use crate::store::SessionRow;
use crate::util::now_ms;

/// What every evidence hook needs: the broker's settings and its journals.
#[derive(Clone, Copy)]
pub(crate) struct Evidence<'a> {
    pub(crate) config: &'a BrokerConfig,
    pub(crate) journals: &'a Journals,
    /// What release does with frames (the policy in force's `retention.frames`).
    pub(crate) frames: desk_policy::FrameRetention,
}

/// One broker's loaded signing key and open journals (held by the broker, not its settings).
#[derive(Default)]
pub(crate) struct Journals {
    pub(super) key: Mutex<Option<SigningKey>>,
    pub(super) open: Mutex<HashMap<SessionId, Arc<Mutex<SessionJournal>>>>,
}

/// Length and running SHA-256 of an append-only log, updated with the bytes added since.
#[derive(Default)]
pub(super) struct LogHasher {
    len: u64,
    hasher: Sha256,
}

impl LogHasher {
    /// The digest of the whole file now. A file that shrank (reset truncates) is rehashed.
    pub(super) fn digest(&mut self, path: &Path) -> Result<LogDigest, EvidenceError> {
        let mut file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                *self = LogHasher::default();
                return Ok(LogDigest::of(b""));
            }
            Err(error) => return Err(io_error("open", path)(error)),
        };
        let file_len = file.metadata().map_err(io_error("stat", path))?.len();
        if file_len < self.len {
            *self = LogHasher::default();
        }
        file.seek(SeekFrom::Start(self.len))
            .map_err(io_error("seek", path))?;
        let mut added = Vec::new();
        file.take(file_len - self.len)
            .read_to_end(&mut added)
            .map_err(io_error("read", path))?;
        self.hasher.update(&added);
        self.len += added.len() as u64;
        Ok(LogDigest {
            len: self.len,
            sha256: hex::encode(self.hasher.clone().finalize()),
        })
    }
}

/// A file written into the evidence directory by [`SessionJournal::place_unsynced`], not yet
/// flushed, with its directory (whose new entry must be flushed too).
pub(super) struct Placed {
    file: File,
    path: PathBuf,
    directory: File,
    directory_path: PathBuf,
}

impl Placed {
    /// The two flushes that make the file durable under its name: its bytes and its directory.
    pub(super) fn durable(&self) -> [Durable<'_>; 2] {
        [
            Durable::data(&self.file, &self.path),
            Durable::directory(&self.directory, &self.directory_path),
        ]
    }
}

/// One session's open journal and what the broker needs to know about it.
pub(super) struct SessionJournal {
    pub(super) writer: EvidenceWriter,
    pub(super) directory: PathBuf,
    pub(super) session_dir: SessionDir,
    pub(super) events: LogHasher,
    pub(super) frame_events: LogHasher,
    // Invariant: mirror the journal's chain state (open actions, count, released).
    pub(super) open_actions: BTreeSet<u64>,
    pub(super) n_actions: u64,
    pub(super) released: bool,
}

impl SessionJournal {
    pub(super) fn observe(&mut self, body: &RecordBody) {
        match body {
            RecordBody::ActionAccepted(accepted) => {
                self.open_actions.insert(accepted.index);
                self.n_actions += 1;
            }
            RecordBody::ActionReceipt(receipt) => {
                self.open_actions.remove(&receipt.index);
                if receipt.settle_outcome == NOT_INJECTED {
                    self.n_actions = self.n_actions.saturating_sub(1);
                }
            }
            RecordBody::SessionReleased(_) | RecordBody::SessionKilled(_) => self.released = true,
            _ => {}
        }
    }

    pub(super) fn append(&mut self, body: RecordBody) -> Result<(), EvidenceError> {
        self.append_alongside(body, &[]).0
    }

    /// [`SessionJournal::append`] in one durable batch with `alongside` (files already written
    /// that must be durable before the same answer): `EvidenceWriter::append_alongside`. The
    /// second value holds one result per `alongside` file; each is flushed whatever happens to
    /// the record.
    pub(super) fn append_alongside(
        &mut self,
        body: RecordBody,
        alongside: &[Durable<'_>],
    ) -> (Result<(), EvidenceError>, Vec<Result<(), EvidenceError>>) {
        let (appended, others) = self
            .writer
            .append_alongside(now_ms(), body.clone(), alongside);
        if appended.is_ok() {
            self.observe(&body);
        }
        (appended.map(|_| ()), others)
    }

    /// Digests of both logs as they are now: the live ones, or the copies a kill kept in the
    /// evidence directory once the session directory is gone.
    pub(super) fn log_digests(&mut self) -> Result<(LogDigest, LogDigest), EvidenceError> {
        let at = |live: PathBuf, name: &str| {
            let kept = self.directory.join(name);
            if !live.exists() && kept.is_file() {
                kept
            } else {
                live
            }
        };
        let events_path = at(self.session_dir.events_file(), EVENTS_FILE);
        let frame_events_path = at(self.session_dir.frame_events_file(), FRAME_EVENTS_FILE);
        let events = self.events.digest(&events_path)?;
        let frame_events = self.frame_events.digest(&frame_events_path)?;
        Ok((events, frame_events))
    }

    pub(super) fn receipt(
        &mut self,
        index: u64,
        settle_outcome: &str,
        error_code: Option<&str>,
        screenshot_sha256: Option<&str>,
    ) -> Result<(), EvidenceError> {
        self.receipt_alongside(index, settle_outcome, error_code, screenshot_sha256, &[])
            .0
    }

    /// [`SessionJournal::receipt`] in one durable batch with `alongside` (the input logs it
    /// digests, written but not yet flushed); every `alongside` file is flushed even when the
    /// receipt fails.
    pub(super) fn receipt_alongside(
        &mut self,
        index: u64,
        settle_outcome: &str,
        error_code: Option<&str>,
        screenshot_sha256: Option<&str>,
        alongside: &[Durable<'_>],
    ) -> (Result<(), EvidenceError>, Vec<Result<(), EvidenceError>>) {
        let (events, frame_events) = match self.log_digests() {
            Ok(digests) => digests,
            Err(error) => return (Err(error), durable::sync_each(alongside)),
        };
        self.append_alongside(
            RecordBody::ActionReceipt(ActionReceipt {
                index,
                settle_outcome: settle_outcome.to_string(),
                error_code: error_code.map(str::to_string),
                screenshot_sha256: screenshot_sha256.map(str::to_string),
                events,
                frame_events,
            }),
            alongside,
        )
    }

    /// Writes `bytes` to `relative` below the session's evidence directory: first to a synced
    /// staging file, renamed into place by [`SessionJournal::commit_staged`].
    pub(super) fn stage(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, EvidenceError> {
        let (file, path) = self.stage_unsynced(name, bytes)?;
        file.sync_data().map_err(io_error("fsync", &path))?;
        Ok(path)
    }

    /// Writes `bytes` to a staging file named `name`, not yet flushed: the caller renames it
    /// into place ([`SessionJournal::place_unsynced`]) and flushes both in the record's durable
    /// batch.
    fn stage_unsynced(&self, name: &str, bytes: &[u8]) -> Result<(File, PathBuf), EvidenceError> {
        let staging = self.directory.join(STAGING_DIR);
        create_private_dir(&self.directory, &staging)?;
        let path = staging.join(name);
        let mut file = crate::private::create_file(&path).map_err(io_error("create", &path))?;
        file.write_all(bytes).map_err(io_error("write", &path))?;
        Ok((file, path))
    }

    /// Writes `bytes` as `<relative_dir>/<name>` below the session's evidence directory through
    /// a staging file and a rename (a partial file never carries the name), without flushing:
    /// returns the file and its directory, open, for the durable batch of the record that names
    /// them, and their paths. The rename is durable once the directory is flushed.
    pub(super) fn place_unsynced(
        &self,
        relative_dir: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<Placed, EvidenceError> {
        let (file, staged) = self.stage_unsynced(name, bytes)?;
        let directory_path = self.directory.join(relative_dir);
        create_private_dir(&self.directory, &directory_path)?;
        let path = directory_path.join(name);
        std::fs::rename(&staged, &path).map_err(io_error("rename", &path))?;
        let directory = File::open(&directory_path).map_err(io_error("open", &directory_path))?;
        Ok(Placed {
            file,
            path,
            directory,
            directory_path,
        })
    }

    pub(super) fn commit_staged(
        &self,
        staged: &Path,
        relative_dir: &str,
        name: &str,
    ) -> Result<(), EvidenceError> {
        let directory = self.directory.join(relative_dir);
        create_private_dir(&self.directory, &directory)?;
        let target = directory.join(name);
        std::fs::rename(staged, &target).map_err(io_error("rename", &target))?;
        File::open(&directory)
            .and_then(|handle| handle.sync_all())
            .map_err(io_error("fsync", &directory))
    }
}

pub(super) fn started_body(
    config: &BrokerConfig,
    session: &SessionRow,
    key: &SigningKey,
    policy_sha256: Option<&str>,
) -> RecordBody {
    RecordBody::SessionStarted(SessionStarted {
        lease_id: session.id.to_string(),
        backend: session.profile.clone(),
        screen_width: config.display.width,
        screen_height: config.display.height,
        signer_fingerprint: key.verifying_key().fingerprint(),
        policy_sha256: policy_sha256.map(str::to_string),
    })
}

/// Opens the session's journal from disk, or creates it with its `session_started` record
/// (naming `policy_sha256`, known at lease).
pub(super) fn open_journal(
    evidence: Evidence<'_>,
    session: &SessionRow,
    policy_sha256: Option<&str>,
) -> Result<SessionJournal, EvidenceError> {
    let config = evidence.config;
    let key = signing_key(evidence)?;
    let directory = session_evidence_dir(&config.state_dir, &session.id);
    create_private_dir(&config.state_dir, &directory)?;
    let path = directory.join(JOURNAL_FILE);
    let empty = match std::fs::metadata(&path) {
        Ok(metadata) => metadata.len() == 0,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => true,
        Err(error) => return Err(io_error("stat", &path)(error)),
    };
    let make = |writer| SessionJournal {
        writer,
        directory: directory.clone(),
        session_dir: session.dir(),
        events: LogHasher::default(),
        frame_events: LogHasher::default(),
        open_actions: BTreeSet::new(),
        n_actions: 0,
        released: false,
    };
    if empty {
        // A journal whose creation failed before its first record holds nothing to keep.
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error("remove", &path)(error)),
        }
        let mut writer = EvidenceWriter::create(&path, key.clone(), session.id.as_str())?;
        writer.set_sandbox(config.sandbox);
        writer.set_limits(config.limits_mode);
        let mut journal = make(writer);
        journal.append(started_body(config, session, &key, policy_sha256))?;
        return Ok(journal);
    }
    let (writer, records) = EvidenceWriter::open(&path, key)?;
    let mut journal = make(writer);
    for record in &records {
        journal.observe(&record.record().body);
    }
    Ok(journal)
}

/// Creates the session's journal at lease (its `session_started` names the policy) and caches
/// its writer; an existing journal is opened as it is.
pub(super) fn start_journal(
    evidence: Evidence<'_>,
    session: &SessionRow,
    policy_sha256: &str,
) -> Result<(), BrokerError> {
    let opened = open_journal(evidence, session, Some(policy_sha256)).map_err(|source| {
        BrokerError::Evidence {
            operation: "lease_session",
            source: Box::new(source),
        }
    })?;
    lock(&evidence.journals.open).insert(session.id.clone(), Arc::new(Mutex::new(opened)));
    Ok(())
}

/// Runs `write` on the session's journal under its lock. A failure evicts the cached writer.
pub(super) fn with_journal<R>(
    evidence: Evidence<'_>,
    session: &SessionRow,
    operation: &'static str,
    write: impl FnOnce(&mut SessionJournal) -> Result<R, EvidenceError>,
) -> Result<R, BrokerError> {
    let journals = &evidence.journals.open;
    let entry = {
        let cached = lock(journals).get(&session.id).cloned();
        match cached {
            Some(entry) => entry,
            None => {
                let opened = open_journal(evidence, session, None).map_err(|source| {
                    BrokerError::Evidence {
                        operation,
                        source: Box::new(source),
                    }
                })?;
                let entry = Arc::new(Mutex::new(opened));
                lock(journals).insert(session.id.clone(), Arc::clone(&entry));
                entry
            }
        }
    };
    let result = write(&mut lock(&entry));
    result.map_err(|source| {
        lock(journals).remove(&session.id);
        BrokerError::Evidence {
            operation,
            source: Box::new(source),
        }
    })
}

/// The broker's signing key, loaded once per broker.
pub(super) fn signing_key(evidence: Evidence<'_>) -> Result<SigningKey, EvidenceError> {
    let config = evidence.config;
    let mut cached = lock(&evidence.journals.key);
    if let Some(key) = cached.as_ref() {
        return Ok(key.clone());
    }
    let key = load_or_create_key(&config.state_dir, config.evidence.signing_key.as_deref())?;
    *cached = Some(key.clone());
    Ok(key)
}
