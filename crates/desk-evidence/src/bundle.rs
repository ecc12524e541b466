//! Evidence bundles: [`export`] copies a session's journal, logs, artifacts and frames into a
//! directory with a signed `manifest.json`; [`verify`] checks such a directory with nothing but
//! a public key.
//!
//! Layout: `evidence.ndjson`, `events.json`, `frame_events.json`, `artifact/<name>`,
//! `frames/<sequence>.png` (optional) and `manifest.json`, a signed envelope listing every other
//! file with its SHA-256 and size. Invariant: every file of a bundle that verifies is listed in
//! the manifest and is backed by the journal: the logs by the prefix digests of receipts and of
//! `session_released`, each artifact by its last `artifact`/`checkpoint` record, each frame by
//! its `screenshot` record; the screenshot gate's decisions are journal records like the
//! others, reported with the frame each is about (`bundle/gate.rs`; a reviewer's
//! decision must follow the `review` verdict that queued it); the observer's signed
//! observations, `observations/<id>.json`, by their `observer_observation` records
//! (`bundle/observations.rs`). A released session's logs
//! and artifacts that release deleted are listed in the manifest's `not_retained` with the
//! journal's digests (`bundle/retention.rs`).
//!
//! Over 400 lines on purpose: export and verify run the same checks against the journal, and
//! they read as one beside each other.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::error::{EvidenceError, FileProblem, ManifestProblem, RecordProblem};
use crate::files;
use crate::journal::{MAX_JOURNAL_BYTES, VerifiedRecord, verify_journal};
use crate::record::{LogDigest, RECORD_SCHEMA, RecordBody, is_file_name};
use crate::sign::{Envelope, SigningKey, VerifyingKey, sha256_hex};
use crate::strict;

mod gate;
mod layout;
mod observations;
mod retention;
mod terminal;

pub use layout::{ARTIFACT_DIR, FRAMES_DIR, MANIFEST_FILE, ManifestFile};
use layout::{named, recorded_artifacts};

pub use gate::GateDecisionSeen;
pub use observations::OBSERVATIONS_DIR;

/// `schema_version` of a bundle manifest.
pub const BUNDLE_SCHEMA: &str = "deskbroker.evidence.bundle.v1";
/// The journal inside a bundle (and inside a session directory).
pub const JOURNAL_FILE: &str = "evidence.ndjson";
/// The two input logs, named as the benchmark contract names them.
pub use desk_contract::events::{EVENTS_FILE, FRAME_EVENTS_FILE};

/// Largest single file export or verify reads.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024 * 1024;

/// Where [`export`] takes a session's files from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInputs {
    /// The session's journal.
    pub journal: PathBuf,
    /// `events.json` (absent means empty).
    pub events: PathBuf,
    /// `frame_events.json` (absent means empty).
    pub frame_events: PathBuf,
    /// Candidate artifact files; each recorded artifact name must be among their file names.
    pub artifacts: Vec<PathBuf>,
    /// Directory of `<sequence>.png` frames; frames with a `screenshot` record are copied.
    pub frames_dir: Option<PathBuf>,
    /// The watchdog's public key, under which its terminal receipts must verify
    /// (`bundle/terminal.rs`); named in the manifest.
    pub watchdog_key: Option<VerifyingKey>,
    /// Directory of the observer's signed `<observation_id>.json` observations; those an
    /// `observer_observation` record names are copied (`bundle/observations.rs`).
    pub observations_dir: Option<PathBuf>,
}

impl ExportInputs {
    /// The broker's session directory layout: `evidence.ndjson`, `events.json`,
    /// `frame_events.json`, `checkpoint/*` as artifacts and `frames/`.
    pub fn from_session_dir(session_dir: &Path) -> Result<Self, EvidenceError> {
        let checkpoint_dir = session_dir.join("checkpoint");
        let mut artifacts = Vec::new();
        if checkpoint_dir.is_dir() {
            for entry in fs::read_dir(&checkpoint_dir)
                .map_err(|error| EvidenceError::io("list", &checkpoint_dir, error))?
            {
                let entry =
                    entry.map_err(|error| EvidenceError::io("list", &checkpoint_dir, error))?;
                artifacts.push(entry.path());
            }
        }
        artifacts.sort();
        let frames_dir = session_dir.join(FRAMES_DIR);
        let observations_dir = session_dir.join(OBSERVATIONS_DIR);
        Ok(Self {
            journal: session_dir.join(JOURNAL_FILE),
            events: session_dir.join(EVENTS_FILE),
            frame_events: session_dir.join(FRAME_EVENTS_FILE),
            artifacts,
            frames_dir: frames_dir.is_dir().then_some(frames_dir),
            watchdog_key: None,
            observations_dir: observations_dir.is_dir().then_some(observations_dir),
        })
    }
}

/// Versions a manifest records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestVersions {
    /// Version of `desk-evidence` that exported the bundle.
    pub desk_evidence: String,
    /// [`RECORD_SCHEMA`].
    pub record_schema: String,
    /// [`BUNDLE_SCHEMA`].
    pub bundle_schema: String,
}

/// What the manifest says about the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestJournal {
    /// Number of records.
    pub n_records: u64,
    /// Envelope digest of the last record.
    pub last_envelope_sha256: String,
    /// Whether the last record is `session_released`.
    pub released: bool,
}

/// The signed payload of `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`BUNDLE_SCHEMA`].
    pub schema_version: String,
    /// The session.
    pub session_id: String,
    /// Export time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Fingerprint of the signing key.
    pub signer_fingerprint: String,
    /// Versions.
    pub versions: ManifestVersions,
    /// Summary of the journal.
    pub journal: ManifestJournal,
    /// Every file but `manifest.json`, sorted by path.
    pub files: Vec<ManifestFile>,
    /// Logs and artifacts that release deleted, with the digests the journal signed for them
    /// (see `bundle/retention.rs`); absent from bundles that keep everything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_retained: Vec<ManifestFile>,
    /// The watchdog's public key (standard base64 of its 32 bytes), under which every
    /// `watchdog` terminal receipt of the journal verifies (`bundle/terminal.rs`); absent when
    /// the exporter knew none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog_key: Option<String>,
    /// The frame retention a released session's journal records (`delete_at_release`,
    /// `keep`), so a bundle states whether its frames outlived the attempt
    /// (`bundle/retention.rs`); absent before release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_retention: Option<String>,
}

/// What a successful [`verify`] checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// The session.
    pub session_id: String,
    /// Fingerprint of the key that signed everything.
    pub signer_fingerprint: String,
    /// Journal records verified.
    pub n_records: usize,
    /// Actions accepted.
    pub n_actions: usize,
    /// Receipts.
    pub n_receipts: usize,
    /// Whether the journal ends with `session_released`.
    pub released: bool,
    /// Files checked against the manifest.
    pub n_files: usize,
    /// Frames checked against their `screenshot` records.
    pub n_frames: usize,
    /// Artifacts checked: name and SHA-256.
    pub artifacts: Vec<(String, String)>,
    /// Files release deleted, checked against the journal's digests instead of bytes.
    pub not_retained: Vec<String>,
    /// Terminal receipts checked under their killer's key.
    pub n_terminal_receipts: usize,
    /// Fingerprint of the watchdog key the manifest names, if any.
    pub watchdog_fingerprint: Option<String>,
    /// The frame retention the manifest is stamped with (the journal's).
    pub frame_retention: Option<String>,
    /// The screenshot gate's decisions, in journal order, each with the bundle's frame it is
    /// about (`bundle/gate.rs`).
    pub gate_decisions: Vec<GateDecisionSeen>,
    /// The observer's signed observations the bundle carries, each checked against its
    /// `observer_observation` record (`bundle/observations.rs`).
    pub n_observations: usize,
    /// Fingerprint of the observer key given to [`verify_observed`], if any.
    pub observer_fingerprint: Option<String>,
    /// Of those, how many were checked under the observer's key (all of them when it was given).
    pub n_observation_signatures: usize,
}

impl VerifyReport {
    /// The gate decisions about the frame `png` (same SHA-256 and size): what the gate decided
    /// about a frame a verifier holds, withheld from the agent or not.
    pub fn gate_decisions_about<'a>(
        &'a self,
        png: &'a [u8],
    ) -> impl Iterator<Item = &'a GateDecisionSeen> + 'a {
        self.gate_decisions
            .iter()
            .filter(move |seen| seen.decision.is_about(png))
    }
}

fn export_error(out_dir: &Path, reason: impl Into<String>) -> EvidenceError {
    EvidenceError::Export {
        path: out_dir.to_path_buf(),
        reason: reason.into(),
    }
}

/// Whether nothing (not even a link) is at `path`.
fn is_absent(path: &Path) -> bool {
    matches!(fs::symlink_metadata(path), Err(error) if error.kind() == std::io::ErrorKind::NotFound)
}

fn read_optional(path: &Path) -> Result<Vec<u8>, EvidenceError> {
    match fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        _ => files::read_limited(path, MAX_FILE_BYTES),
    }
}

/// Writes a bundle of the session described by `inputs` into `out_dir` (which must not exist),
/// signing the manifest with `key`. The journal is verified first and every copied file is
/// checked against it, so a bundle that exports also verifies.
pub fn export(
    inputs: &ExportInputs,
    key: &SigningKey,
    out_dir: &Path,
    created_at_ms: u64,
) -> Result<Manifest, EvidenceError> {
    let verifying_key = key.verifying_key();
    let journal_bytes = files::read_limited(&inputs.journal, MAX_JOURNAL_BYTES)?;
    let records = verify_journal(&journal_bytes, &verifying_key)?;
    let Some(last) = records.last() else {
        return Err(export_error(out_dir, "the journal has no records"));
    };
    let session_id = last.record().session_id.clone();

    let mut planned: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut not_retained: BTreeMap<String, ManifestFile> = BTreeMap::new();
    planned.insert(JOURNAL_FILE.to_string(), journal_bytes.clone());
    let released_logs = retention::released_logs(&records);
    for (name, path) in [
        (EVENTS_FILE, &inputs.events),
        (FRAME_EVENTS_FILE, &inputs.frame_events),
    ] {
        // A released session's log that is gone but was not empty: deleted at release.
        let deleted = released_logs
            .as_ref()
            .and_then(|logs| logs.iter().find(|(log, _)| *log == name))
            .filter(|(_, digest)| digest.len > 0 && is_absent(path));
        match deleted {
            Some((_, digest)) => {
                not_retained.insert(
                    name.to_string(),
                    retention::entry(name, &digest.sha256, digest.len),
                );
            }
            None => {
                planned.insert(name.to_string(), read_optional(path)?);
            }
        }
    }
    let recorded_artifacts = recorded_artifacts(&records);
    let mut seen_names = BTreeSet::new();
    for artifact_path in &inputs.artifacts {
        let name = artifact_path
            .file_name()
            .and_then(|name| name.to_str())
            .filter(|name| is_file_name(name))
            .ok_or_else(|| {
                export_error(
                    out_dir,
                    format!(
                        "artifact {} has no usable file name",
                        artifact_path.display()
                    ),
                )
            })?;
        if !recorded_artifacts.contains_key(name) {
            return Err(export_error(
                out_dir,
                format!("artifact {name} has no artifact or checkpoint record"),
            ));
        }
        seen_names.insert(name.to_string());
        planned.insert(
            format!("{ARTIFACT_DIR}/{name}"),
            files::read_limited(artifact_path, MAX_FILE_BYTES)?,
        );
    }
    for (name, (_, sha256, size)) in &recorded_artifacts {
        if seen_names.contains(name) {
            continue;
        }
        if released_logs.is_none() {
            return Err(export_error(
                out_dir,
                format!("recorded artifact {name} is not among the inputs"),
            ));
        }
        let path = format!("{ARTIFACT_DIR}/{name}");
        not_retained.insert(path.clone(), retention::entry(&path, sha256, *size));
    }
    if let Some(frames_dir) = &inputs.frames_dir {
        for record in &records {
            if let RecordBody::Screenshot(screenshot) = &record.record().body {
                let frame_path = frames_dir.join(format!("{}.png", screenshot.sequence));
                if frame_path.is_file() {
                    planned.insert(
                        format!("{FRAMES_DIR}/{}.png", screenshot.sequence),
                        files::read_limited(&frame_path, MAX_FILE_BYTES)?,
                    );
                }
            }
        }
    }
    if let Some(observations_dir) = &inputs.observations_dir {
        for path in observations::recorded(&records).into_keys() {
            let file_name = path.trim_start_matches(&format!("{OBSERVATIONS_DIR}/"));
            let source = observations_dir.join(file_name);
            if source.is_file() {
                planned.insert(path, files::read_limited(&source, MAX_FILE_BYTES)?);
            }
        }
    }
    let bundle_files: BTreeMap<String, BundleFile> = planned
        .iter()
        .map(|(path, bytes)| (path.clone(), BundleFile::Bytes(bytes)))
        .collect();
    check_against_journal(&records, &bundle_files, &not_retained)
        .map_err(|error| export_error(out_dir, error.to_string()))?;
    terminal::check(&records, &verifying_key, inputs.watchdog_key.as_ref())
        .map_err(|error| export_error(out_dir, error.to_string()))?;
    let frame_retention = retention::frame_retention(&records);
    let has_frames = planned
        .keys()
        .any(|path| path.starts_with(&format!("{FRAMES_DIR}/")));
    retention::check_stamp(&records, frame_retention.as_deref(), has_frames)
        .map_err(|error| export_error(out_dir, error.to_string()))?;

    fs::create_dir(out_dir).map_err(|error| EvidenceError::io("create", out_dir, error))?;
    for directory in [ARTIFACT_DIR, FRAMES_DIR, OBSERVATIONS_DIR] {
        let path = out_dir.join(directory);
        fs::create_dir(&path).map_err(|error| EvidenceError::io("create", &path, error))?;
    }
    let mut listed = Vec::new();
    for (path, bytes) in &planned {
        files::write_new(&out_dir.join(path), bytes, 0o644)?;
        listed.push(ManifestFile {
            path: path.clone(),
            sha256: sha256_hex(bytes),
            size: bytes.len() as u64,
        });
    }
    let manifest = Manifest {
        schema_version: BUNDLE_SCHEMA.to_string(),
        session_id,
        created_at_ms,
        signer_fingerprint: verifying_key.fingerprint(),
        versions: ManifestVersions {
            desk_evidence: env!("CARGO_PKG_VERSION").to_string(),
            record_schema: RECORD_SCHEMA.to_string(),
            bundle_schema: BUNDLE_SCHEMA.to_string(),
        },
        journal: ManifestJournal {
            n_records: records.len() as u64,
            last_envelope_sha256: last.envelope_sha256().to_string(),
            released: matches!(last.record().body, RecordBody::SessionReleased(_)),
        },
        files: listed,
        not_retained: not_retained.into_values().collect(),
        watchdog_key: inputs.watchdog_key.as_ref().map(VerifyingKey::to_base64),
        frame_retention,
    };
    let mut manifest_bytes = Envelope::sign(&manifest, key)?.canonical_bytes()?;
    manifest_bytes.push(b'\n');
    files::write_new(&out_dir.join(MANIFEST_FILE), &manifest_bytes, 0o644)?;
    Ok(manifest)
}

/// A bundle file's bytes: in memory at export, on disk at verify.
enum BundleFile<'a> {
    Bytes(&'a [u8]),
    Disk(Vec<u8>),
}

impl BundleFile<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Self::Bytes(bytes) => bytes,
            Self::Disk(bytes) => bytes,
        }
    }
}

/// Checks the logs, artifacts and frames against the digests the journal recorded.
/// Files listed as not retained are checked against the journal instead (`retention`).
fn check_against_journal(
    records: &[VerifiedRecord],
    bundle_files: &BTreeMap<String, BundleFile<'_>>,
    not_retained: &BTreeMap<String, ManifestFile>,
) -> Result<(usize, Vec<(String, String)>), EvidenceError> {
    retention::check(records, not_retained, |path| {
        bundle_files.contains_key(path)
    })?;
    for log_name in [EVENTS_FILE, FRAME_EVENTS_FILE] {
        if not_retained.contains_key(log_name) {
            continue;
        }
        let bytes = bundle_files
            .get(log_name)
            .map(BundleFile::bytes)
            .ok_or_else(|| EvidenceError::File {
                name: log_name.to_string(),
                problem: FileProblem::Missing,
            })?;
        check_log_prefixes(records, log_name, bytes)?;
    }
    let recorded = recorded_artifacts(records);
    let mut artifacts = Vec::new();
    for (name, (record, sha256, size)) in &recorded {
        let path = format!("{ARTIFACT_DIR}/{name}");
        if not_retained.contains_key(&path) {
            artifacts.push((name.clone(), sha256.clone()));
            continue;
        }
        let actual = bundle_files
            .get(&path)
            .map(|file| LogDigest::of(file.bytes()));
        let actual_text = actual.as_ref().map_or_else(
            || "missing file".to_string(),
            |digest| format!("{} ({} bytes)", digest.sha256, digest.len),
        );
        if actual
            .as_ref()
            .is_none_or(|digest| digest.sha256 != *sha256 || digest.len != *size)
        {
            return Err(named(
                record,
                RecordProblem::DigestMismatch {
                    file: path,
                    expected: format!("{sha256} ({size} bytes)"),
                    actual: actual_text,
                },
            ));
        }
        artifacts.push((name.clone(), sha256.clone()));
    }
    let screenshots: BTreeMap<String, &VerifiedRecord> = records
        .iter()
        .filter_map(|record| match &record.record().body {
            RecordBody::Screenshot(screenshot) => {
                Some((format!("{FRAMES_DIR}/{}.png", screenshot.sequence), record))
            }
            _ => None,
        })
        .collect();
    let observations = observations::recorded(records);
    let mut n_frames = 0;
    for (path, file) in bundle_files {
        if let Some(name) = path.strip_prefix(&format!("{ARTIFACT_DIR}/")) {
            if !recorded.contains_key(name) {
                return Err(EvidenceError::File {
                    name: path.clone(),
                    problem: FileProblem::NotRecorded(
                        "no artifact or checkpoint record names it".to_string(),
                    ),
                });
            }
        } else if path.starts_with(&format!("{FRAMES_DIR}/")) {
            let record = screenshots.get(path).ok_or_else(|| EvidenceError::File {
                name: path.clone(),
                problem: FileProblem::NotRecorded(
                    "no screenshot record has its sequence".to_string(),
                ),
            })?;
            let RecordBody::Screenshot(screenshot) = &record.record().body else {
                continue;
            };
            let actual = LogDigest::of(file.bytes());
            if actual.sha256 != screenshot.sha256 || actual.len != screenshot.size {
                return Err(named(
                    record,
                    RecordProblem::DigestMismatch {
                        file: path.clone(),
                        expected: format!("{} ({} bytes)", screenshot.sha256, screenshot.size),
                        actual: format!("{} ({} bytes)", actual.sha256, actual.len),
                    },
                ));
            }
            n_frames += 1;
        } else if path.starts_with(&format!("{OBSERVATIONS_DIR}/")) {
            observations::check_file(&observations, path, file.bytes())?;
        } else if ![JOURNAL_FILE, EVENTS_FILE, FRAME_EVENTS_FILE].contains(&path.as_str()) {
            return Err(EvidenceError::File {
                name: path.clone(),
                problem: FileProblem::NotRecorded("not part of the bundle layout".to_string()),
            });
        }
    }
    Ok((n_frames, artifacts))
}

/// Checks every prefix digest of `log_name` recorded by receipts and by `session_released`.
fn check_log_prefixes(
    records: &[VerifiedRecord],
    log_name: &str,
    bytes: &[u8],
) -> Result<(), EvidenceError> {
    let mut hasher = Sha256::new();
    let mut hashed_len = 0_usize;
    for record in records {
        let (digest, whole) = match &record.record().body {
            RecordBody::ActionReceipt(receipt) if log_name == EVENTS_FILE => {
                (&receipt.events, false)
            }
            RecordBody::ActionReceipt(receipt) => (&receipt.frame_events, false),
            RecordBody::SessionReleased(released) if log_name == EVENTS_FILE => {
                (&released.events, true)
            }
            RecordBody::SessionReleased(released) => (&released.frame_events, true),
            _ => continue,
        };
        let mismatch = |actual: String| {
            named(
                record,
                RecordProblem::DigestMismatch {
                    file: log_name.to_string(),
                    expected: format!("{} (first {} bytes)", digest.sha256, digest.len),
                    actual,
                },
            )
        };
        let len = usize::try_from(digest.len).unwrap_or(usize::MAX);
        if len < hashed_len {
            return Err(mismatch(format!(
                "log shrank: an earlier record covered {hashed_len} bytes"
            )));
        }
        if len > bytes.len() {
            return Err(mismatch(format!("file has only {} bytes", bytes.len())));
        }
        hasher.update(&bytes[hashed_len..len]);
        hashed_len = len;
        let actual = hex::encode(hasher.clone().finalize());
        if actual != digest.sha256 {
            return Err(mismatch(actual));
        }
        if whole && len != bytes.len() {
            return Err(mismatch(format!(
                "{} bytes follow session_released",
                bytes.len() - len
            )));
        }
    }
    Ok(())
}

fn manifest_error(problem: ManifestProblem) -> EvidenceError {
    EvidenceError::Manifest(problem)
}

/// Lists every entry under `root` as `/`-separated relative paths; symlinks and other
/// non-regular entries are refused.
fn list_files(
    root: &Path,
    relative: &str,
    out: &mut BTreeSet<String>,
) -> Result<(), EvidenceError> {
    let directory = if relative.is_empty() {
        root.to_path_buf()
    } else {
        root.join(relative)
    };
    for entry in
        fs::read_dir(&directory).map_err(|error| EvidenceError::io("list", &directory, error))?
    {
        let entry = entry.map_err(|error| EvidenceError::io("list", &directory, error))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if relative.is_empty() {
            name
        } else {
            format!("{relative}/{name}")
        };
        let file_type = entry
            .file_type()
            .map_err(|error| EvidenceError::io("stat", entry.path(), error))?;
        if file_type.is_dir() {
            list_files(root, &path, out)?;
        } else if file_type.is_file() {
            out.insert(path);
        } else {
            return Err(EvidenceError::File {
                name: path,
                problem: FileProblem::NotRegular,
            });
        }
    }
    Ok(())
}

fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && Path::new(path)
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
        && path.split('/').all(is_file_name)
}

/// Verifies the bundle at `bundle_dir` against `key`. The error names the first bad thing:
/// the manifest, then the first bad journal record (by line, `seq` and `kind`), then the first
/// file whose bytes differ from the manifest, then the first record whose recorded digest does
/// not match the file it describes.
pub fn verify(bundle_dir: &Path, key: &VerifyingKey) -> Result<VerifyReport, EvidenceError> {
    verify_pinned(bundle_dir, key, None)
}

/// [`verify`], and when `watchdog_key` is given the manifest must name exactly that key as
/// the watchdog's (a verifier that knows the watchdog's key pins it, so a manifest cannot
/// substitute another).
pub fn verify_pinned(
    bundle_dir: &Path,
    key: &VerifyingKey,
    watchdog_key: Option<&VerifyingKey>,
) -> Result<VerifyReport, EvidenceError> {
    verify_observed(bundle_dir, key, watchdog_key, None)
}

/// [`verify_pinned`], and when `observer_key` is given every signed observation the bundle
/// carries must verify under it and be the observation its record names
/// (`bundle/observations.rs`); without it each is checked against its record's digest only.
pub fn verify_observed(
    bundle_dir: &Path,
    key: &VerifyingKey,
    watchdog_key: Option<&VerifyingKey>,
    observer_key: Option<&VerifyingKey>,
) -> Result<VerifyReport, EvidenceError> {
    let manifest_path = bundle_dir.join(MANIFEST_FILE);
    if !manifest_path.is_file() {
        return Err(manifest_error(ManifestProblem::Missing));
    }
    let manifest_bytes = files::read_limited(&manifest_path, 64 * 1024 * 1024)?;
    let envelope = Envelope::parse(&manifest_bytes)
        .map_err(|error| manifest_error(ManifestProblem::Malformed(error.to_string())))?;
    let manifest: Manifest = envelope
        .decode_payload()
        .map_err(|error| manifest_error(ManifestProblem::Malformed(error.to_string())))?;
    if manifest.signer_fingerprint != key.fingerprint() {
        return Err(manifest_error(ManifestProblem::KeyMismatch {
            expected: key.fingerprint(),
            found: manifest.signer_fingerprint,
        }));
    }
    envelope
        .verify(key)
        .map_err(|_| manifest_error(ManifestProblem::BadSignature))?;
    if manifest.schema_version != BUNDLE_SCHEMA {
        return Err(manifest_error(ManifestProblem::Malformed(format!(
            "schema {:?}, expected {BUNDLE_SCHEMA:?}",
            manifest.schema_version
        ))));
    }

    let journal_path = bundle_dir.join(JOURNAL_FILE);
    if !journal_path.is_file() {
        return Err(EvidenceError::File {
            name: JOURNAL_FILE.to_string(),
            problem: FileProblem::Missing,
        });
    }
    let records = verify_journal(&files::read_limited(&journal_path, MAX_JOURNAL_BYTES)?, key)?;
    let Some(last) = records.last() else {
        return Err(EvidenceError::File {
            name: JOURNAL_FILE.to_string(),
            problem: FileProblem::NotRecorded("the journal has no records".to_string()),
        });
    };
    let released = matches!(last.record().body, RecordBody::SessionReleased(_));
    let summary = ManifestJournal {
        n_records: records.len() as u64,
        last_envelope_sha256: last.envelope_sha256().to_string(),
        released,
    };
    if summary != manifest.journal || manifest.session_id != last.record().session_id {
        return Err(manifest_error(ManifestProblem::JournalMismatch(format!(
            "manifest lists {} records ending in {}, the journal has {} ending in {} (seq {}, kind {})",
            manifest.journal.n_records,
            manifest.journal.last_envelope_sha256,
            summary.n_records,
            summary.last_envelope_sha256,
            last.record().seq,
            last.record().kind().as_str()
        ))));
    }

    let mut on_disk = BTreeSet::new();
    list_files(bundle_dir, "", &mut on_disk)?;
    on_disk.remove(MANIFEST_FILE);
    let mut bundle_files = BTreeMap::new();
    for listed in &manifest.files {
        if !is_plain_relative(&listed.path) || listed.path == MANIFEST_FILE {
            return Err(EvidenceError::File {
                name: listed.path.clone(),
                problem: FileProblem::BadPath,
            });
        }
        if bundle_files.contains_key(&listed.path) {
            return Err(manifest_error(ManifestProblem::Malformed(format!(
                "{} listed twice",
                listed.path
            ))));
        }
        if !on_disk.remove(&listed.path) {
            return Err(EvidenceError::File {
                name: listed.path.clone(),
                problem: FileProblem::Missing,
            });
        }
        let bytes = files::read_limited(&bundle_dir.join(&listed.path), MAX_FILE_BYTES)?;
        if bytes.len() as u64 != listed.size {
            return Err(EvidenceError::File {
                name: listed.path.clone(),
                problem: FileProblem::SizeMismatch {
                    expected: listed.size,
                    actual: bytes.len() as u64,
                },
            });
        }
        let actual = sha256_hex(&bytes);
        if actual != listed.sha256 {
            return Err(EvidenceError::File {
                name: listed.path.clone(),
                problem: FileProblem::Sha256Mismatch {
                    expected: listed.sha256.clone(),
                    actual,
                },
            });
        }
        bundle_files.insert(listed.path.clone(), BundleFile::Disk(bytes));
    }
    if let Some(unlisted) = on_disk.into_iter().next() {
        return Err(EvidenceError::File {
            name: unlisted,
            problem: FileProblem::Unlisted,
        });
    }
    let mut not_retained = BTreeMap::new();
    for listed in &manifest.not_retained {
        if !is_plain_relative(&listed.path)
            || not_retained
                .insert(listed.path.clone(), listed.clone())
                .is_some()
        {
            return Err(EvidenceError::File {
                name: listed.path.clone(),
                problem: FileProblem::BadPath,
            });
        }
    }
    let (n_frames, artifacts) = check_against_journal(&records, &bundle_files, &not_retained)?;
    let named_watchdog = manifest
        .watchdog_key
        .as_deref()
        .map(VerifyingKey::from_base64)
        .transpose()
        .map_err(|error| manifest_error(ManifestProblem::WatchdogKey(error.to_string())))?;
    if let Some(pinned) = watchdog_key
        && named_watchdog.as_ref() != Some(pinned)
    {
        return Err(manifest_error(ManifestProblem::WatchdogKey(format!(
            "the manifest names {}, expected {}",
            named_watchdog.map_or_else(|| "none".to_string(), |key| key.fingerprint()),
            pinned.fingerprint()
        ))));
    }
    let n_terminal_receipts = terminal::check(&records, key, named_watchdog.as_ref())?;
    retention::check_stamp(&records, manifest.frame_retention.as_deref(), n_frames > 0)?;
    gate::check_reviews(&records)?;
    let frames_prefix = format!("{FRAMES_DIR}/");
    let gate_decisions = gate::decisions(
        &records,
        bundle_files
            .iter()
            .filter(|(path, _)| path.starts_with(&frames_prefix))
            .map(|(path, file)| (path, file.bytes())),
    );
    let observations_prefix = format!("{OBSERVATIONS_DIR}/");
    let observation_files = || {
        bundle_files
            .iter()
            .filter(|(path, _)| path.starts_with(&observations_prefix))
            .map(|(path, file)| (path, file.bytes()))
    };
    let n_observations = observation_files().count();
    let n_observation_signatures = match observer_key {
        Some(observer) => observations::check_signatures(
            &observations::recorded(&records),
            observation_files(),
            observer,
        )?,
        None => 0,
    };
    let count = |kind: fn(&RecordBody) -> bool| {
        records
            .iter()
            .filter(|record| kind(&record.record().body))
            .count()
    };
    Ok(VerifyReport {
        session_id: manifest.session_id,
        signer_fingerprint: manifest.signer_fingerprint,
        n_records: records.len(),
        n_actions: count(|body| matches!(body, RecordBody::ActionAccepted(_)))
            - count(|body| {
                matches!(body, RecordBody::ActionReceipt(receipt)
                    if receipt.settle_outcome == crate::record::NOT_INJECTED)
            }),
        n_receipts: count(|body| matches!(body, RecordBody::ActionReceipt(_))),
        released,
        n_files: manifest.files.len(),
        n_frames,
        artifacts,
        not_retained: not_retained.into_keys().collect(),
        n_terminal_receipts,
        watchdog_fingerprint: named_watchdog.map(|key| key.fingerprint()),
        frame_retention: manifest.frame_retention,
        gate_decisions,
        n_observations,
        observer_fingerprint: observer_key.map(VerifyingKey::fingerprint),
        n_observation_signatures,
    })
}

/// Parses `manifest.json` bytes without verifying them (for display tools).
pub fn read_manifest_unverified(bytes: &[u8]) -> Result<Manifest, EvidenceError> {
    let value: Value = strict::parse_value(bytes)?;
    let envelope: Envelope = strict::from_value_exact(value, "$")?;
    envelope.decode_payload()
}
