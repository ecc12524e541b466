//! One rollout end to end: lease, reset (the verified handoff), play, checkpoint, retrieval,
//! release, scoring, and the `rollout.json` record.
//!
//! Invariants: the session is always released once leased; the gold (a drawing, or a 3D
//! task's `.FCStd` path) is used only by the scorer here and never reaches the broker; budgets
//! are clamped to the contract's ceilings. A task that names its app profile is leased in it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use desk_cad::{DrawingType, Gold, Task, TaskScore};
use desk_client::Client;
use desk_contract::DisplaySize;
use desk_contract::api::{LeaseRequest, ResetRequest, SaveMethod};
use desk_contract::sha256_hex;

use crate::agent::{Agent, ObservedImage, TaskBrief, TokenUsage};
use crate::error::{HarnessError, write_file, write_json};
use crate::play::{Play, PlayEnd, chain};
use crate::record::{
    ArtifactInfo, EffectiveBudgets, ROLLOUT_FILE, RolloutPaths, RolloutRecord, RolloutStatus,
};

/// The action ceiling of every task.
pub const MAX_ACTIONS: u64 = 5_000;
/// Wall time of a 2D task, from the handoff.
pub const WALL_TIME_2D_S: u64 = 900;
/// Wall time of a 3D task, from the handoff.
pub const WALL_TIME_3D_S: u64 = 1_800;

/// How to run one rollout.
#[derive(Debug, Clone)]
pub struct RolloutOptions {
    /// Prefix of every request id; unique per rollout.
    pub rollout_id: String,
    /// The lease's attempt id.
    pub attempt_id: String,
    /// The rollout's directory (frames, logs, artifact, `rollout.json`).
    pub dir: PathBuf,
    /// The deskbroker version, recorded in results.
    pub broker_version: String,
    /// App, X server, window manager, OS and deskbroker versions, recorded in results.
    pub versions: crate::versions::SoftwareVersions,
    /// App profile when the task names none; the broker's default when `None` too.
    pub profile: Option<String>,
    /// The corpus version the task comes from, recorded in results.
    pub corpus_version: String,
    /// A lower action budget (tests); never raises the ceiling.
    pub max_actions: Option<u64>,
    /// A lower wall-time budget (tests); never raises the ceiling.
    pub wall_time: Option<Duration>,
    /// Refuse to play unless the reset reports a sandboxed workspace whose facts passed every
    /// rule (`bench run`, which hosts its own broker); the rollout is then an infrastructure
    /// failure saying why. Off for fake brokers, which have no workspace.
    pub require_sandbox: bool,
}

/// The contract's wall time for a task of `kind`, in seconds.
pub(crate) fn wall_time_ceiling_s(kind: DrawingType) -> u64 {
    match kind {
        DrawingType::TwoD => WALL_TIME_2D_S,
        DrawingType::ThreeD => WALL_TIME_3D_S,
    }
}

/// Effective budgets: the task's declared action budget clamped to [`MAX_ACTIONS`], and the
/// contract's wall time for the drawing type (900 s for 2D, 1,800 s for 3D).
pub fn effective_budgets(task: &Task, options: &RolloutOptions) -> (EffectiveBudgets, Duration) {
    let declared_actions = u64::from(task.budgets.max_actions);
    let mut max_actions = declared_actions.min(MAX_ACTIONS);
    if let Some(lower) = options.max_actions {
        max_actions = max_actions.min(lower);
    }
    let ceiling_s = wall_time_ceiling_s(task.drawing_type);
    // The contract fixes wall time per drawing type; the declared value is only recorded.
    let mut wall_time = Duration::from_secs(ceiling_s);
    if let Some(lower) = options.wall_time {
        wall_time = wall_time.min(lower);
    }
    let budgets = EffectiveBudgets {
        max_actions,
        wall_time_s: wall_time.as_secs(),
        declared_max_actions: declared_actions,
        declared_wall_time_s: u64::from(task.budgets.wall_time_s),
    };
    (budgets, wall_time)
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    let read = |at: usize| {
        png.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_be_bytes)
    };
    (read(16), read(20))
}

/// Runs one rollout of `task` with `agent` and scores the artifact against `gold` with the
/// judge of the task's kind.
///
/// Broker and agent failures become the record's status; only local file errors are `Err`.
pub async fn run_rollout(
    client: &Client,
    task: &Task,
    reference_png: &[u8],
    gold: &Gold,
    agent: &mut dyn Agent,
    options: &RolloutOptions,
) -> Result<RolloutRecord, HarnessError> {
    let started = Instant::now();
    let (budgets, wall_time) = effective_budgets(task, options);
    let dir = &options.dir;
    std::fs::create_dir_all(dir.join("frames")).map_err(|source| HarnessError::Io {
        op: "create directory",
        path: dir.join("frames"),
        source,
    })?;
    write_file(&dir.join("reference.png"), reference_png)?;
    let mut record = RolloutRecord {
        contract_version: desk_cad::CONTRACT_VERSION.to_owned(),
        corpus_version: options.corpus_version.clone(),
        broker_version: options.broker_version.clone(),
        versions: options.versions.clone(),
        rollout_id: options.rollout_id.clone(),
        attempt_id: options.attempt_id.clone(),
        session_id: None,
        task_id: task.id.to_string(),
        drawing_type: task.drawing_type,
        level: task.level,
        split: task.split,
        agent: agent.info(),
        budgets,
        actions_used: 0,
        n_turns: 0,
        n_rejected_batches: 0,
        wall_time_ms: 0,
        total_ms: 0,
        tokens: TokenUsage::default(),
        status: RolloutStatus::SetupFailed,
        infra_error: true,
        status_detail: None,
        workspace: None,
        policy_sha256: None,
        score: TaskScore::missing(task.artifact_kind()),
        artifact: None,
        paths: RolloutPaths {
            frames_dir: "frames".to_owned(),
            reference: Some("reference.png".to_owned()),
            ..RolloutPaths::default()
        },
        trace: Vec::new(),
    };
    let lease = client
        .lease(&LeaseRequest {
            task_id: task.id.to_string(),
            attempt_id: options.attempt_id.clone(),
            profile: task.profile.clone().or_else(|| options.profile.clone()),
        })
        .await;
    match lease {
        Err(error) => record.status_detail = Some(format!("lease failed: {}", chain(&error))),
        Ok(lease) => {
            record.session_id = Some(lease.session_id.clone());
            record.policy_sha256 = lease.policy_sha256.clone();
            let mut notes = Vec::new();
            let brief = Brief {
                task,
                reference_png,
                wall_time,
            };
            let end = play_session(
                client,
                &lease.session_id,
                &brief,
                agent,
                options,
                &mut record,
            )
            .await;
            if let Some(end) = end {
                record.status = end.status;
                record.status_detail = end.detail;
                record.wall_time_ms = end.wall_time_ms;
                let name = task.attempt_file_name();
                let session = &lease.session_id;
                finish(client, session, dir, &name, &mut record, &mut notes).await;
            }
            if let Err(error) = client.release(&lease.session_id).await {
                notes.push(format!("release failed: {}", chain(&error)));
            }
            if !notes.is_empty() {
                let mut detail = record.status_detail.take().unwrap_or_default();
                for note in notes {
                    if !detail.is_empty() {
                        detail.push_str("; ");
                    }
                    detail.push_str(&note);
                }
                record.status_detail = Some(detail);
            }
        }
    }
    artifact::score_artifact(gold, dir, &mut record)?;
    record.total_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    record.infra_error = record.status.is_infra_error();
    write_json(&dir.join(ROLLOUT_FILE), &record)?;
    Ok(record)
}

struct Brief<'a> {
    task: &'a Task,
    reference_png: &'a [u8],
    wall_time: Duration,
}

/// Resets and plays; `None` when the reset failed (the record says why).
async fn play_session(
    client: &Client,
    session_id: &str,
    brief: &Brief<'_>,
    agent: &mut dyn Agent,
    options: &RolloutOptions,
    record: &mut RolloutRecord,
) -> Option<PlayEnd> {
    let reset = client
        .reset_png(
            session_id,
            &ResetRequest {
                request_id: format!("{}-reset", options.rollout_id),
            },
        )
        .await;
    let (reset, reset_png) = match reset {
        Ok(reset) => (reset.answer, reset.png),
        Err(error) => {
            record.status_detail = Some(format!("reset failed: {}", chain(&error)));
            return None;
        }
    };
    record.workspace = reset.workspace.clone();
    if options.require_sandbox {
        let verified = reset.workspace.as_ref().is_some_and(|facts| {
            facts.sandbox == desk_contract::desktop::SandboxMode::On && facts.failures.is_empty()
        });
        if !verified {
            record.status_detail = Some(format!(
                "sandbox unverified: the reset reports {}; refusing to play",
                match &reset.workspace {
                    None => "no workspace facts".to_string(),
                    Some(facts) => format!(
                        "sandbox {:?} with failures {:?}",
                        facts.sandbox, facts.failures
                    ),
                }
            ));
            return None;
        }
    }
    // The wall clock starts at the verified handoff.
    let handoff = Instant::now();
    let display = DisplaySize {
        width: reset.screenshot.width,
        height: reset.screenshot.height,
    };
    let (ref_width, ref_height) = png_size(brief.reference_png);
    let task_brief = TaskBrief {
        task_id: brief.task.id.to_string(),
        prompt: brief.task.prompt.clone(),
        reference: ObservedImage {
            png: brief.reference_png.to_vec(),
            width: ref_width,
            height: ref_height,
            sequence: 0,
            sha256: sha256_hex(brief.reference_png),
        },
        display,
        max_actions: record.budgets.max_actions,
        wall_time_s: record.budgets.wall_time_s,
    };
    let mut play = Play {
        client,
        session_id: session_id.to_owned(),
        rollout_id: options.rollout_id.clone(),
        display,
        dir: options.dir.clone(),
        handoff,
        deadline: handoff + brief.wall_time,
        max_actions: record.budgets.max_actions,
        actions_used: 0,
        next_index: 0,
        last_sequence: 0,
        last_shot: task_brief.reference.clone(),
        last_shot_id: None,
        last_frame: None,
        trace: Vec::new(),
        tokens: TokenUsage::default(),
        n_rejected: 0,
    };
    let end = match play.accept_frame(&reset.screenshot, reset_png.as_deref()) {
        Err(detail) => PlayEnd {
            status: RolloutStatus::FailedClosed,
            detail: Some(format!("handoff frame: {detail}")),
            wall_time_ms: 0,
        },
        Ok(_) => match agent.start(&task_brief).await {
            Err(error) => PlayEnd {
                status: RolloutStatus::AgentFailed,
                detail: Some(chain(&error)),
                wall_time_ms: 0,
            },
            Ok(()) => play.run(agent).await,
        },
    };
    record.actions_used = play.actions_used;
    record.n_turns = u32::try_from(play.trace.len()).unwrap_or(u32::MAX);
    record.n_rejected_batches = play.n_rejected;
    record.tokens = play.tokens;
    record.trace = play.trace;
    Some(end)
}

/// Checkpoint → artifact → events → frame events; failures become notes.
async fn finish(
    client: &Client,
    session_id: &str,
    dir: &Path,
    name: &str,
    record: &mut RolloutRecord,
    notes: &mut Vec<String>,
) {
    // A session killed (the census found a prohibited process, or a limit) is never scored as
    // the agent's result: the rollout is the infrastructure's (`failed_closed`).
    let killed = |error: &desk_client::ClientError, record: &mut RolloutRecord| {
        if let desk_client::ClientError::Api(body) = error
            && body.code == desk_contract::ErrorCode::SessionKilled
        {
            record.status = RolloutStatus::FailedClosed;
        }
    };
    match client.checkpoint(session_id).await {
        Err(error) => {
            killed(&error, record);
            notes.push(format!("checkpoint failed: {}", chain(&error)));
        }
        Ok(checkpoint) => match client.artifact(session_id).await {
            Err(error) => {
                killed(&error, record);
                notes.push(format!("artifact retrieval failed: {}", chain(&error)));
            }
            Ok(artifact) => match desk_contract::b64::decode(&artifact.bytes_base64) {
                None => notes.push("artifact is not base64".to_owned()),
                Some(bytes) => match write_file(&dir.join(name), &bytes) {
                    Err(error) => notes.push(chain(&error)),
                    Ok(()) => {
                        record.artifact = Some(ArtifactInfo {
                            path: name.to_owned(),
                            sha256: sha256_hex(&bytes),
                            size: bytes.len() as u64,
                            save_method: match checkpoint.method {
                                SaveMethod::AlreadySaved => "already_saved",
                                SaveMethod::ControllerSave => "controller_save",
                            }
                            .to_owned(),
                        });
                    }
                },
            },
        },
    }
    let logs = [
        ("events.json", client.events(session_id).await),
        ("frame_events.json", client.frame_events(session_id).await),
    ];
    for (name, text) in logs {
        match text {
            Err(error) => {
                killed(&error, record);
                notes.push(format!("retrieving {name} failed: {}", chain(&error)));
            }
            Ok(text) => match write_file(&dir.join(name), text.as_bytes()) {
                Err(error) => notes.push(chain(&error)),
                Ok(()) if name == "events.json" => record.paths.events = Some(name.to_owned()),
                Ok(()) => record.paths.frame_events = Some(name.to_owned()),
            },
        }
    }
}

mod artifact;
pub use artifact::write_judge_pictures;

#[cfg(test)]
mod tests;
