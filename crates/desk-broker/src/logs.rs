//! The two per-session input logs, written next to the attempt data and fsynced before the
//! broker answers. The field-by-field schema is `docs/event-logs.md`.
//!
//! `<session>/events.json` (NDJSON, one [`EventRecord`] per line): every low-level input the
//! broker sent, in order: `{"timestamp_ms", "type", ...event fields, "sourcePid": -1,
//! "actionIndex", "provenance": "broker_action", "origin"}` with `type` one of `mouse_move`,
//! `click`, `drag`, `scroll`, `key`, `modifier_change` and `origin` `action` (the agent's action
//! `actionIndex`), `release` (a key or button found held after action `actionIndex` and
//! released; stamped with the time of the action's last input, which it immediately follows) or
//! `checkpoint` (the controller save gesture; `actionIndex` is the last action accepted before
//! it, null when none was, never the index the next action will get).
//!
//! `<session>/frame_events.json` (NDJSON, one [`FrameEventsRow`] per broker-captured action
//! frame, including `done` and checkpoint frames): `{"frame", "video_t_ms", "events"}` where
//! `frame` is the screenshot `sequence`, `video_t_ms` is the frame's capture time minus the
//! capture time of the reset handoff frame (video time 0), and `events` embeds the inputs the
//! action produced, each with `video_t_ms` (from the handoff frame) and `t_in_frame_ms` (from the
//! previous row's frame, or the handoff frame for the first row). Times saturate at 0.
//!
//! An action whose frame could not be captured or encoded (no screenshot) has no row of its
//! own: its inputs go to `events.json` at once and wait in `<session>/frame_events.pending`
//! (same records) until the next logged frame, whose row embeds them first, as the inputs
//! accepted since the prior screenshot.
//!
//! Invariant: both files are append-only after reset truncates them; each append is flushed
//! (`fdatasync`) before the answer that follows it: at once by [`EventLogs::append`], or,
//! on an action's path, by the ledger in one durable batch with the receipt that digests them
//! ([`EventLogs::write_step`]; `docs/evidence.md`, "Disk waits").

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use desk_contract::desktop::ActionOutcome;
use desk_contract::events::{
    EventRecord, FrameEvent, FrameEventsRow, InputEvent, Origin, Provenance, release_events,
};

use desk_desktop::SessionDir;
use desk_evidence::durable::Durable;

use crate::error::BrokerError;

pub(crate) use desk_contract::events::{EVENTS_FILE, FRAME_EVENTS_FILE};

/// The timing context of one logged frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameTiming {
    /// The screenshot sequence of the frame.
    pub(crate) sequence: u64,
    /// Its capture time.
    pub(crate) captured_at_ms: u64,
    /// Capture time of the handoff frame.
    pub(crate) handoff_ms: u64,
    /// Capture time of the previous logged frame.
    pub(crate) previous_frame_ms: u64,
}

/// The two logs of one session.
#[derive(Debug, Clone)]
pub(crate) struct EventLogs {
    events_path: PathBuf,
    frame_events_path: PathBuf,
    pending_path: PathBuf,
}

/// The log files one step appended to, written and not yet flushed: the caller flushes them
/// ([`Written::durable`]) in the durable batch of the record that digests them, or at once with
/// [`Written::sync`].
#[derive(Debug, Default)]
pub(crate) struct Written {
    files: Vec<(File, PathBuf)>,
}

impl Written {
    /// What must be flushed: each appended file's bytes. No directory: `init` flushed the
    /// session directory with both logs in it, and `frame_events.pending`, the one file an
    /// append may create, is a scratch list whose loss a power failure may cost (its events
    /// are in `events.json` too).
    pub(crate) fn durable(&self) -> Vec<Durable<'_>> {
        self.files
            .iter()
            .map(|(file, path)| Durable::data(file, path))
            .collect()
    }

    /// The flushes of several steps' appends, one per file (an `fdatasync` of a file flushes
    /// every earlier append to it, so a file several steps appended to is flushed once), and
    /// none for a file a later step removed (`frame_events.pending`, once a frame's row took
    /// its events): nothing of it is kept.
    pub(crate) fn durable_all<'w>(
        written: impl IntoIterator<Item = &'w Written>,
    ) -> Vec<Durable<'w>> {
        let mut batch: Vec<Durable<'w>> = Vec::new();
        for durable in written.into_iter().flat_map(Written::durable) {
            if !batch.iter().any(|seen| seen.path == durable.path)
                && std::fs::symlink_metadata(durable.path).is_ok()
            {
                batch.push(durable);
            }
        }
        batch
    }

    /// Flushes every appended file now (one durable batch).
    pub(crate) fn sync(&self) -> Result<(), BrokerError> {
        desk_evidence::durable::sync_all(&self.durable()).map_err(flush_failed)
    }

    fn append(&mut self, path: &Path, lines: &str) -> Result<(), BrokerError> {
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(BrokerError::io("open the event log", path))?;
        file.write_all(lines.as_bytes())
            .map_err(BrokerError::io("append to the event log", path))?;
        self.files.push((file, path.to_path_buf()));
        Ok(())
    }
}

/// A failed flush of an event log, as the error an unbatched `fdatasync` gave.
pub(crate) fn flush_failed(error: desk_evidence::EvidenceError) -> BrokerError {
    match error {
        desk_evidence::EvidenceError::Io { path, source, .. } => {
            BrokerError::io("fsync the event log", path)(source)
        }
        other => BrokerError::Internal(format!("fsync the event log: {other}")),
    }
}

impl EventLogs {
    pub(crate) fn new(session_dir: &SessionDir) -> EventLogs {
        EventLogs {
            events_path: session_dir.events_file(),
            frame_events_path: session_dir.frame_events_file(),
            pending_path: session_dir.pending_frame_events_file(),
        }
    }

    /// Creates or truncates both logs and fsyncs them and their directory.
    pub(crate) fn init(&self) -> Result<(), BrokerError> {
        match std::fs::remove_file(&self.pending_path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(BrokerError::io(
                    "remove the pending frame events",
                    &self.pending_path,
                )(error));
            }
            _ => {}
        }
        for path in [&self.events_path, &self.frame_events_path] {
            let file = File::create(path).map_err(BrokerError::io("create the event log", path))?;
            file.sync_all()
                .map_err(BrokerError::io("fsync the event log", path))?;
        }
        if let Some(dir) = self.events_path.parent() {
            File::open(dir)
                .and_then(|handle| handle.sync_all())
                .map_err(BrokerError::io("fsync the session directory", dir))?;
        }
        Ok(())
    }

    /// Appends the inputs of one outcome to both logs and one frame row to
    /// `frame_events.json`: its events with `origin`, then what was released after it. Without
    /// a frame (`timing` `None`) the inputs wait for the next frame's row.
    pub(crate) fn append(
        &self,
        outcome: &ActionOutcome,
        origin: Origin,
        action_index: Option<u64>,
        timing: Option<FrameTiming>,
    ) -> Result<(), BrokerError> {
        self.write_step(outcome, origin, action_index, None, timing)?
            .sync()
    }

    /// [`EventLogs::append`] for step `step_index` of the input program `action_index` (every
    /// record carries the step's index), without the flush: returns the files written, which the
    /// caller must flush before it answers (the ledger flushes them with the action's receipt,
    /// which digests them, in one durable batch).
    pub(crate) fn write_step(
        &self,
        outcome: &ActionOutcome,
        origin: Origin,
        action_index: Option<u64>,
        step_index: Option<u64>,
        timing: Option<FrameTiming>,
    ) -> Result<Written, BrokerError> {
        let mut written = Written::default();
        let serialize = BrokerError::json("serialize an event record");
        let released_at_ms = match (outcome.events.last(), &outcome.frame) {
            (Some(event), _) => event.timestamp_ms,
            (None, Some(frame)) => frame.captured_at_ms,
            (None, None) => crate::util::now_ms(),
        };
        let pointer = outcome
            .focus_after
            .as_ref()
            .unwrap_or(&outcome.focus_before)
            .pointer;
        let released = release_events(&outcome.released_after, released_at_ms, pointer);
        let record = |origin: Origin| {
            move |event: &InputEvent| EventRecord {
                event: event.clone(),
                source_pid: -1,
                action_index,
                provenance: Provenance::BrokerAction,
                origin,
                step_index,
            }
        };
        let records: Vec<EventRecord> = outcome
            .events
            .iter()
            .map(record(origin))
            .chain(released.iter().map(record(Origin::Release)))
            .collect();
        let mut event_lines = String::new();
        for record in &records {
            match serde_json::to_string(record) {
                Ok(line) => {
                    event_lines.push_str(&line);
                    event_lines.push('\n');
                }
                Err(error) => return Err(serialize(error)),
            }
        }
        let Some(timing) = timing else {
            if !event_lines.is_empty() {
                written.append(&self.events_path, &event_lines)?;
                written.append(&self.pending_path, &event_lines)?;
            }
            return Ok(written);
        };
        let mut waiting = Vec::new();
        for line in read_or_empty(&self.pending_path)?.lines() {
            if !line.trim().is_empty() {
                let record: EventRecord = serde_json::from_str(line)
                    .map_err(BrokerError::json("read the pending frame events"))?;
                waiting.push(record);
            }
        }
        let row = FrameEventsRow {
            frame: timing.sequence,
            video_t_ms: timing.captured_at_ms.saturating_sub(timing.handoff_ms),
            events: waiting
                .into_iter()
                .chain(records)
                .map(|record| {
                    let at = record.event.timestamp_ms;
                    FrameEvent {
                        record,
                        video_t_ms: at.saturating_sub(timing.handoff_ms),
                        t_in_frame_ms: at.saturating_sub(timing.previous_frame_ms),
                    }
                })
                .collect(),
        };
        let mut row_line = serde_json::to_string(&row)
            .map_err(BrokerError::json("serialize a frame events row"))?;
        row_line.push('\n');
        if !event_lines.is_empty() {
            written.append(&self.events_path, &event_lines)?;
        }
        written.append(&self.frame_events_path, &row_line)?;
        match std::fs::remove_file(&self.pending_path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(BrokerError::io(
                "remove the pending frame events",
                &self.pending_path,
            )(error)),
            _ => Ok(written),
        }
    }

    /// When the broker last sent input for an action (the largest `timestamp_ms` of the
    /// `action` and `release` rows of `events.json`; a checkpoint's save gesture is no edit), or
    /// `None` when it sent none since reset.
    pub(crate) fn last_edit_input_ms(&self) -> Result<Option<u64>, BrokerError> {
        let text = self.read_events()?;
        let mut last = None;
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let record: EventRecord =
                serde_json::from_str(line).map_err(BrokerError::json("read the event log"))?;
            if record.origin != Origin::Checkpoint {
                last = last.max(Some(record.event.timestamp_ms));
            }
        }
        Ok(last)
    }

    /// The raw input log; empty before reset.
    pub(crate) fn read_events(&self) -> Result<String, BrokerError> {
        read_or_empty(&self.events_path)
    }

    /// The frame-aligned log; empty before reset.
    pub(crate) fn read_frame_events(&self) -> Result<String, BrokerError> {
        read_or_empty(&self.frame_events_path)
    }
}

fn read_or_empty(path: &Path) -> Result<String, BrokerError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(BrokerError::io("read the event log", path)(error)),
    }
}
