//! [`OcrServer`]: the [`Ocr`] over long-lived `desk-ocr` processes (crate `desk-ocr`), which
//! load tesseract's model once, so a band costs its recognition, not tesseract's ~125 ms
//! start-up. The engine runs in a process of its own (it parses untrusted pixels), never in
//! the broker.
//!
//! One `OcrServer` per broker, shared by its sessions: it keeps up to `processes` children,
//! each serving one request at a time; a request that finds every child busy runs on the
//! `tesseract` CLI instead (it never waits for another session's band). A child that misses
//! the time limit, dies, or answers off the protocol is killed and the request fails
//! ([`GateError::OcrTimeout`] / [`GateError::Ocr`], which the gate turns into
//! `insufficient_data`, never `allow`); the next request starts a fresh child. A missing
//! `desk-ocr` program makes every request use the CLI.
//!
//! Protocol (see `desk-ocr`): request `u32` big-endian length + PNG; answer a status byte
//! (0 TSV, 1 error), a `u32` big-endian length, then the bytes (at most [`MAX_OCR_OUTPUT`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use crate::error::GateError;
use crate::ocr::{MAX_OCR_OUTPUT, Ocr, Tesseract, Word, parse_tsv};

/// Most bytes of PNG sent in one request (`desk-ocr`'s own bound).
pub const MAX_OCR_REQUEST: usize = 64 << 20;

/// The `desk-ocr` processes of one broker, with the `tesseract` CLI as the fallback.
#[derive(Debug)]
pub struct OcrServer {
    program: PathBuf,
    slots: Vec<Mutex<Option<Server>>>,
    fallback: Tesseract,
}

/// One running `desk-ocr`: requests go to a writer thread, answers come from a reader thread
/// (so a hung child cannot block the caller past the time limit in either direction).
#[derive(Debug)]
struct Server {
    child: Child,
    requests: SyncSender<Vec<u8>>,
    answers: Receiver<Result<Vec<u8>, GateError>>,
}

impl OcrServer {
    /// `desk-ocr` beside the running executable, else on `PATH`; `None` when neither exists
    /// (use [`Tesseract`] then).
    pub fn find_program() -> Option<PathBuf> {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("desk-ocr")));
        if let Some(path) = beside.filter(|path| path.is_file()) {
            return Some(path);
        }
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("desk-ocr"))
                .find(|path| path.is_file())
        })
    }

    /// Up to `processes` (at least 1) children of `program`, the first started now so that
    /// its model is loaded before the first frame; `fallback` serves when all are busy.
    pub fn new(program: PathBuf, processes: usize, fallback: Tesseract) -> OcrServer {
        let slots: Vec<Mutex<Option<Server>>> =
            (0..processes.max(1)).map(|_| Mutex::new(None)).collect();
        if let Some(first) = slots.first()
            && let Ok(mut slot) = first.lock()
        {
            match Server::start(&program) {
                Ok(server) => *slot = Some(server),
                Err(error) => tracing::warn!(%error, "desk-ocr did not start"),
            }
        }
        OcrServer {
            program,
            slots,
            fallback,
        }
    }

    fn recognize_on(
        &self,
        slot: &mut Option<Server>,
        png: &[u8],
        timeout: Duration,
    ) -> Result<Vec<Word>, GateError> {
        let server = match slot {
            Some(server) => server,
            None => slot.insert(Server::start(&self.program)?),
        };
        let answer = server.ask(png, timeout);
        let words = answer.and_then(|tsv| parse_tsv(&String::from_utf8_lossy(&tsv)));
        if words.is_err()
            && let Some(mut server) = slot.take()
        {
            // Any failure: the child is no longer trusted to be in step with its caller.
            server.stop();
        }
        words
    }
}

/// The `desk-ocr` program beside the running executable or on `PATH` (see
/// [`OcrServer::find_program`]) with two processes, else the `tesseract` CLI.
pub fn default_ocr() -> std::sync::Arc<dyn Ocr> {
    match OcrServer::find_program() {
        Some(program) => std::sync::Arc::new(OcrServer::new(program, 2, Tesseract::new())),
        None => std::sync::Arc::new(Tesseract::new()),
    }
}

impl Ocr for OcrServer {
    fn recognize(&self, png: &[u8], timeout: Duration) -> Result<Vec<Word>, GateError> {
        if png.len() > MAX_OCR_REQUEST {
            return Err(GateError::Ocr(format!(
                "a band of {} bytes, more than {MAX_OCR_REQUEST}",
                png.len()
            )));
        }
        for slot in &self.slots {
            let mut slot = match slot.try_lock() {
                Ok(slot) => slot,
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => continue,
            };
            return self.recognize_on(&mut slot, png, timeout);
        }
        self.fallback.recognize(png, timeout)
    }

    fn engine(&self) -> String {
        format!("desk-ocr ({})", self.fallback.engine())
    }
}

impl Server {
    fn start(program: &Path) -> Result<Server, GateError> {
        let name = program.display().to_string();
        // One thread, as the CLI path: the host's cores belong to the desktops.
        let mut child = crate::ocr::spawn_engine(&mut Command::new(program), program)?;
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => (stdin, stdout),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GateError::Ocr("no pipes to desk-ocr".to_string()));
            }
        };
        let (requests, to_write) = mpsc::sync_channel::<Vec<u8>>(1);
        let (answered, answers) = mpsc::sync_channel(1);
        std::thread::spawn(move || write_requests(stdin, to_write));
        std::thread::spawn(move || read_answers(stdout, answered));
        tracing::debug!(program = %name, pid = child.id(), "desk-ocr started");
        Ok(Server {
            child,
            requests,
            answers,
        })
    }

    /// The TSV for `png`, or an error; the caller stops the server on any error.
    fn ask(&mut self, png: &[u8], timeout: Duration) -> Result<Vec<u8>, GateError> {
        let mut frame = Vec::with_capacity(png.len() + 4);
        frame.extend_from_slice(&(png.len() as u32).to_be_bytes());
        frame.extend_from_slice(png);
        self.requests
            .send(frame)
            .map_err(|_| GateError::Ocr("desk-ocr is gone".to_string()))?;
        match self.answers.recv_timeout(timeout) {
            Ok(answer) => answer,
            Err(RecvTimeoutError::Timeout) => {
                Err(GateError::OcrTimeout(timeout.as_millis() as u64))
            }
            Err(RecvTimeoutError::Disconnected) => {
                Err(GateError::Ocr("desk-ocr closed its output".to_string()))
            }
        }
    }

    /// Kills the child; its pipes close, so both threads end.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write_requests(mut stdin: ChildStdin, requests: Receiver<Vec<u8>>) {
    for frame in requests {
        if stdin
            .write_all(&frame)
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Reads answers until the child's output ends or one is off the protocol (sent as an error,
/// then the thread ends). An error answer's message is not passed on: it is the engine's.
fn read_answers(mut stdout: impl Read, answers: SyncSender<Result<Vec<u8>, GateError>>) {
    loop {
        let mut head = [0u8; 5];
        if let Err(error) = stdout.read_exact(&mut head) {
            let _ = answers.send(Err(GateError::Ocr(format!("desk-ocr's answer: {error}"))));
            return;
        }
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if head[0] > 1 || len > MAX_OCR_OUTPUT {
            let _ = answers.send(Err(GateError::Ocr(format!(
                "desk-ocr's answer is off the protocol (status {}, {len} bytes)",
                head[0]
            ))));
            return;
        }
        let mut body = vec![0u8; len];
        if let Err(error) = stdout.read_exact(&mut body) {
            let _ = answers.send(Err(GateError::Ocr(format!("desk-ocr's answer: {error}"))));
            return;
        }
        let answer = if head[0] == 0 {
            Ok(body)
        } else {
            Err(GateError::Ocr(
                "desk-ocr could not read the band".to_string(),
            ))
        };
        if answers.send(answer).is_err() {
            return;
        }
    }
}
