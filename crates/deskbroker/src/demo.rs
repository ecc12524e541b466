//! `deskbroker demo`, the main job: a local broker leases a LibreCAD desktop, an agent-like
//! script draws a figure through broker actions (command line and mouse), the broker checkpoints,
//! and the retrieved DXF is checked for the expected entities. Everything lands in a run folder:
//! `screenshots/NNN-*.png`, `events.json`, `frame_events.json`, `attempt.dxf`, `summary.json`.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use desk_client::Client;
use desk_contract::Action;
use desk_contract::api::{ActionRequest, ActionResponse, LeaseRequest, ResetRequest};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::cli::DemoArgs;
use crate::dxf_check::{self, Expected};
use crate::local::LocalBroker;
use crate::session::write_file;

fn key(keys: &[&str], intent: &str) -> Action {
    Action::Key {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        intent: intent.to_string(),
    }
}
fn text(text: &str, intent: &str) -> Action {
    Action::Type {
        text: text.to_string(),
        intent: intent.to_string(),
    }
}
fn click(x: i64, y: i64, intent: &str) -> Action {
    Action::Click {
        x,
        y,
        button: Default::default(),
        modifiers: vec![],
        intent: intent.to_string(),
    }
}

/// Types a command-line entry and confirms it with Return, as two actions.
fn enter(entry: &str, intent: &str, steps: &mut Vec<Action>) {
    steps.push(text(entry, intent));
    steps.push(key(&["return"], "confirm the command-line entry"));
}

/// The figure: a 100x50 rectangle of lines and a circle typed at LibreCAD's command line, then a
/// free line drawn with two mouse clicks on the canvas.
pub(crate) fn figure_script(display: (u32, u32)) -> Vec<Action> {
    let (width, height) = (i64::from(display.0), i64::from(display.1));
    let mut steps = vec![
        click(
            width * 3 / 10,
            height / 2,
            "click the drawing canvas to give it focus",
        ),
        key(&["ctrl", "m"], "focus the command line"),
    ];
    enter("line", "start the line command", &mut steps);
    for point in ["0,0", "100,0", "100,50", "0,50", "0,0"] {
        enter(point, "next corner of the rectangle", &mut steps);
    }
    steps.push(key(&["escape"], "finish the line command"));
    steps.push(key(&["escape"], "leave the command"));
    steps.push(key(&["ctrl", "m"], "focus the command line again"));
    enter("circle", "start the circle command", &mut steps);
    enter("50,25", "circle center", &mut steps);
    enter("20", "circle radius", &mut steps);
    steps.push(key(&["escape"], "leave the circle command"));
    steps.push(key(
        &["ctrl", "m"],
        "focus the command line for a mouse-drawn line",
    ));
    enter("line", "start a line to draw with the mouse", &mut steps);
    steps.push(click(
        width * 2 / 10,
        height * 3 / 10,
        "first point of the mouse line",
    ));
    steps.push(click(
        width * 4 / 10,
        height * 4 / 10,
        "second point of the mouse line",
    ));
    steps.push(key(&["escape"], "finish the mouse line"));
    steps.push(key(&["escape"], "leave the command"));
    steps.push(Action::Done {
        intent: "the figure is drawn".to_string(),
    });
    steps
}

/// The entities the typed part of the figure must produce, in drawing units (mm).
pub(crate) fn expected_entities() -> Vec<Expected> {
    let corners = [(0.0, 0.0), (100.0, 0.0), (100.0, 50.0), (0.0, 50.0)];
    let mut expected: Vec<Expected> = (0..4)
        .map(|i| Expected::Line {
            from: corners[i],
            to: corners[(i + 1) % 4],
        })
        .collect();
    expected.push(Expected::Circle {
        center: (50.0, 25.0),
        radius: 20.0,
    });
    expected
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn save_png(dir: &Path, name: &str, png_base64: &str) -> Result<()> {
    let bytes = desk_contract::b64::decode(png_base64).context("screenshot is not base64")?;
    write_file(&dir.join(name), &bytes)
}

pub(crate) async fn run(args: DemoArgs) -> Result<()> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("runs/demo-{}", unix_secs())));
    let shots = out.join("screenshots");
    std::fs::create_dir_all(&shots)
        .with_context(|| format!("failed to create {}", shots.display()))?;
    let mut broker_args = args.broker.clone();
    if broker_args.state_dir.is_none() {
        broker_args.state_dir = Some(out.join("state"));
    }
    let broker = LocalBroker::start(&broker_args, out.join("broker.sock")).await?;
    let result = drive(&broker.client(), &out, &shots, broker_args.display).await;
    broker.stop().await;
    let summary = result?;
    outln!("{}", serde_json::to_string_pretty(&summary)?);
    outln!("demo passed: run folder {}", out.display());
    Ok(())
}

async fn drive(
    client: &Client,
    out: &Path,
    shots: &Path,
    display: (u32, u32),
) -> Result<serde_json::Value> {
    let started = Instant::now();
    let lease = client
        .lease(&LeaseRequest {
            task_id: "demo-figure".to_string(),
            attempt_id: format!("demo-{}", unix_secs()),
            profile: Some("librecad".to_string()),
        })
        .await
        .context("lease failed")?;
    let session = lease.session_id.clone();
    let outcome = drive_session(client, &session, out, shots, display, started).await;
    let release = client.release(&session).await;
    let summary = outcome?;
    release.context("release failed")?;
    Ok(summary)
}

async fn drive_session(
    client: &Client,
    session: &str,
    out: &Path,
    shots: &Path,
    display: (u32, u32),
    started: Instant,
) -> Result<serde_json::Value> {
    let reset = client
        .reset(
            session,
            &ResetRequest {
                request_id: "demo-reset-1".to_string(),
            },
        )
        .await
        .context("reset failed")?;
    save_png(shots, "000-reset.png", &reset.screenshot.png_base64)?;
    let script = figure_script(display);
    let progress = ProgressBar::new(script.len() as u64);
    progress.set_style(
        ProgressStyle::with_template("{spinner} actions {pos}/{len} {bar:30} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut responses: Vec<ActionResponse> = Vec::new();
    for (action_idx, action) in script.into_iter().enumerate() {
        progress.set_message(action.intent().to_string());
        let request = ActionRequest {
            request_id: format!("demo-action-{action_idx}"),
            expected_action_index: action_idx as u64,
            screenshot_id: None,
            action,
        };
        let response = client
            .act(session, &request)
            .await
            .with_context(|| format!("action {action_idx} failed"))?;
        let name = format!("{:03}-{}.png", action_idx + 1, response.receipt.action_type);
        if let Some(screenshot) = &response.screenshot {
            save_png(shots, &name, &screenshot.png_base64)?;
        }
        responses.push(response);
        progress.inc(1);
    }
    progress.finish_and_clear();

    let checkpoint = client
        .checkpoint(session)
        .await
        .context("checkpoint failed")?;
    let artifact = client
        .artifact(session)
        .await
        .context("artifact retrieval failed")?;
    let bytes =
        desk_contract::b64::decode(&artifact.bytes_base64).context("artifact is not base64")?;
    let dxf_path = out.join("attempt.dxf");
    write_file(&dxf_path, &bytes)?;
    write_file(
        &out.join("events.json"),
        client.events(session).await?.as_bytes(),
    )?;
    write_file(
        &out.join("frame_events.json"),
        client.frame_events(session).await?.as_bytes(),
    )?;

    let found = dxf_check::read(&dxf_path)?;
    let missing: Vec<String> = expected_entities()
        .iter()
        .filter(|expected| !found.contains(expected))
        .map(|expected| format!("{expected:?}"))
        .collect();
    let typed_lines = 4;
    let mouse_line = found.lines.len() > typed_lines;
    let total_ms: Vec<u64> = responses.iter().map(|r| r.receipt.total_ms).collect();
    let overhead_ms: Vec<u64> = responses
        .iter()
        .map(|r| r.receipt.total_ms.saturating_sub(r.receipt.settle.wait_ms))
        .collect();
    let summary = json!({
        "session_id": session,
        "actions": responses.len(),
        "reset_ms": reset.elapsed_ms,
        "handoff_window": reset.window.title,
        "checkpoint": checkpoint,
        "artifact_sha256": artifact.sha256,
        "dxf_entities": found.n_entities,
        "dxf_lines": found.lines.len(),
        "dxf_circles": found.circles.len(),
        "missing_entities": missing,
        "mouse_line_found": mouse_line,
        "action_total_ms_median": median(&total_ms),
        "broker_overhead_ms_median": median(&overhead_ms),
        "wall_ms": started.elapsed().as_millis() as u64,
    });
    write_file(
        &out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    if !missing.is_empty() || !mouse_line {
        bail!(
            "the saved DXF lacks expected entities (missing {missing:?}, mouse line found: \
             {mouse_line}); see {}",
            out.display()
        );
    }
    Ok(summary)
}

pub(crate) fn median(values: &[u64]) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}
