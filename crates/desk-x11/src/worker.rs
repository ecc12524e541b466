//! The worker's JSONL loop: one [`WorkerRequest`] per input line, exactly one
//! [`WorkerResponse`] line per request, flushed each time.
//!
//! Invariants: stdout carries only protocol lines (logs go to stderr through `tracing`); an
//! unparseable line gets id 0 and `invalid_request`; EOF and `shutdown` release held inputs.

use std::io::{BufRead, Write};

use desk_contract::worker::{
    WorkerFailure, WorkerFailureKind, WorkerOp, WorkerReply, WorkerRequest, WorkerResponse,
    WorkerValue,
};

use crate::error::X11Error;
use crate::session::X11Session;

/// Connects to `$DISPLAY` and serves stdin/stdout until EOF or `shutdown`.
pub fn run_stdio() -> Result<(), X11Error> {
    let mut session = X11Session::connect(None)?;
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    serve(stdin.lock(), stdout.lock(), &mut session)
}

/// Serves requests from `reader`, answering on `writer`, until EOF or `shutdown`.
pub fn serve(
    reader: impl BufRead,
    mut writer: impl Write,
    session: &mut X11Session,
) -> Result<(), X11Error> {
    for line in reader.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let (response, stop) = match serde_json::from_str::<WorkerRequest>(&line) {
            Ok(request) => {
                let stop = matches!(request.op, WorkerOp::Shutdown);
                (
                    WorkerResponse {
                        id: request.id,
                        reply: handle(session, request.op),
                    },
                    stop,
                )
            }
            Err(error) => {
                tracing::warn!(%error, "unparseable worker request");
                let failure = WorkerFailure {
                    kind: WorkerFailureKind::InvalidRequest,
                    message: format!("failed to parse worker request: {error}"),
                };
                (
                    WorkerResponse {
                        id: 0,
                        reply: WorkerReply::Error(failure),
                    },
                    false,
                )
            }
        };
        write_line(&mut writer, &response)?;
        if stop {
            return Ok(());
        }
    }
    tracing::info!("worker input closed, releasing held inputs");
    session.close();
    Ok(())
}

fn write_line(writer: &mut impl Write, response: &WorkerResponse) -> Result<(), X11Error> {
    let text = serde_json::to_string(response).map_err(std::io::Error::other)?;
    writer.write_all(text.as_bytes())?;
    writer.write_all(b"\n")?;
    writer.flush()?;
    Ok(())
}

/// Runs one operation.
pub fn handle(session: &mut X11Session, op: WorkerOp) -> WorkerReply {
    let result = match op {
        WorkerOp::Hello => Ok(WorkerValue::Hello(session.hello())),
        WorkerOp::Capture => session
            .capture()
            .map(WorkerValue::Frame)
            .map_err(|error| error.to_failure()),
        WorkerOp::Execute { action, settle } => session
            .execute(&action, &settle)
            .map(|outcome| WorkerValue::Outcome(Box::new(outcome))),
        WorkerOp::AwaitApp { pid, rules, settle } => session
            .await_app(pid, &rules, &settle)
            .map(|handoff| WorkerValue::Handoff(Box::new(handoff)))
            .map_err(|error| error.to_failure()),
        WorkerOp::Facts => session
            .facts()
            .map(WorkerValue::Facts)
            .map_err(|error| error.to_failure()),
        WorkerOp::ReleaseHeld => session
            .release_held()
            .map(|released| WorkerValue::Released { released })
            .map_err(|error| error.to_failure()),
        WorkerOp::Shutdown => {
            session.close();
            Ok(WorkerValue::Bye)
        }
    };
    match result {
        Ok(value) => WorkerReply::Ok(value),
        Err(failure) => {
            tracing::warn!(kind = ?failure.kind, message = %failure.message, "worker request failed");
            WorkerReply::Error(failure)
        }
    }
}
