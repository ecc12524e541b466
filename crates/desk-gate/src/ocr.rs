//! OCR: the [`Ocr`] trait and [`Tesseract`], which runs the `tesseract` program as a child
//! (PNG on stdin, TSV on stdout) under a time bound and an output bound. A missing program is
//! [`GateError::EngineMissing`], which the gate turns into `insufficient_data`, never `allow`.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::GateError;
use crate::frame::Rect;

/// One word the engine read, in the coordinates of the image it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    /// The text.
    pub text: String,
    /// The engine's confidence, 0 to 100.
    pub confidence: f64,
    /// Where it is.
    pub rect: Rect,
}

/// A text recognizer over a PNG.
pub trait Ocr: Send + Sync {
    /// The words of `png`, in reading order, within `timeout`.
    fn recognize(&self, png: &[u8], timeout: Duration) -> Result<Vec<Word>, GateError>;

    /// The engine's name and version for the record, e.g. `tesseract 5.3.0`.
    fn engine(&self) -> String;
}

/// Most bytes of TSV read from the engine.
pub const MAX_OCR_OUTPUT: usize = 4 << 20;

/// The `tesseract` program, run once per image.
#[derive(Debug, Clone)]
pub struct Tesseract {
    program: PathBuf,
    psm: u8,
    version: String,
}

impl Tesseract {
    /// `tesseract` from `PATH` with page segmentation mode 3 (automatic). Measured on a GTK
    /// window's band: mode 11 (sparse text) drops the text inside an entry's frame once the
    /// region is enlarged, mode 3 reads it (and the rest). Never fails: a missing program
    /// shows at the first [`Ocr::recognize`].
    pub fn new() -> Tesseract {
        Tesseract::with_program(PathBuf::from("tesseract"), 3)
    }

    /// A given program and page segmentation mode.
    pub fn with_program(program: PathBuf, psm: u8) -> Tesseract {
        let version = version_of(&program).unwrap_or_else(|| "tesseract (not found)".to_string());
        Tesseract {
            program,
            psm,
            version,
        }
    }
}

/// The first line of `program --version`, waiting at most 2 s (a hung program is killed).
fn version_of(program: &PathBuf) -> Option<String> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    while child.try_wait().ok()?.is_none() {
        if started.elapsed() > Duration::from_secs(2) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut out = String::new();
    child
        .stdout
        .take()?
        .take(4096)
        .read_to_string(&mut out)
        .ok()?;
    out.lines().next().map(|line| line.trim().to_string())
}

/// Starts an OCR engine (the tesseract CLI, desk-ocr) from `command` with piped stdin and
/// stdout, no stderr, and one thread: the host's cores belong to the desktops; OpenMP only
/// adds overhead on a region this small. A missing `program` is `EngineMissing`.
pub(crate) fn spawn_engine(command: &mut Command, program: &Path) -> Result<Child, GateError> {
    let name = program.display().to_string();
    command
        .env("OMP_THREAD_LIMIT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => GateError::EngineMissing(name.clone()),
            _ => GateError::Ocr(format!("failed to start {name}: {error}")),
        })
}

impl Default for Tesseract {
    fn default() -> Self {
        Tesseract::new()
    }
}

impl Ocr for Tesseract {
    fn recognize(&self, png: &[u8], timeout: Duration) -> Result<Vec<Word>, GateError> {
        let program = self.program.display().to_string();
        let mut child = spawn_engine(
            Command::new(&self.program).args(["-", "-", "--psm", &self.psm.to_string(), "tsv"]),
            &self.program,
        )?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| GateError::Ocr("no stdin".to_string()))?;
        let input = png.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let mut stdout = child
            .stdout
            .take()
            .ok_or_else(|| GateError::Ocr("no stdout".to_string()))?;
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let read = (&mut stdout)
                .take(MAX_OCR_OUTPUT as u64 + 1)
                .read_to_end(&mut out);
            read.map(|_| out)
        });
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() >= timeout => {
                    // Killing closes its pipes, so both threads end.
                    let _ = child.kill();
                    let _ = child.wait();
                    let _ = writer.join();
                    let _ = reader.join();
                    return Err(GateError::OcrTimeout(timeout.as_millis() as u64));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(error) => return Err(GateError::Ocr(format!("wait: {error}"))),
            }
        };
        // A write error means the engine stopped reading; its status says why.
        let _ = writer.join();
        let out = reader
            .join()
            .map_err(|_| GateError::Ocr("the output reader panicked".to_string()))?
            .map_err(|error| GateError::Ocr(format!("read: {error}")))?;
        if !status.success() {
            return Err(GateError::Ocr(format!("{program} exited with {status}")));
        }
        if out.len() > MAX_OCR_OUTPUT {
            return Err(GateError::Ocr(format!(
                "more than {MAX_OCR_OUTPUT} bytes of output"
            )));
        }
        parse_tsv(&String::from_utf8_lossy(&out))
    }

    fn engine(&self) -> String {
        self.version.clone()
    }
}

/// The words of tesseract's TSV (`level page block par line word left top width height conf
/// text`; words are level 5), empty ones left out.
pub(crate) fn parse_tsv(tsv: &str) -> Result<Vec<Word>, GateError> {
    let mut words = Vec::new();
    // An error names the line and field, never the line itself: it holds text read off the
    // screen, which must not reach a log.
    for (line_idx, line) in tsv.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < 12 || fields[0] != "5" {
            continue;
        }
        let text = fields[11..].join("\t").trim().to_string();
        if text.is_empty() {
            continue;
        }
        let number = |idx: usize| {
            fields[idx].parse::<u32>().map_err(|_| {
                GateError::Ocr(format!("TSV line {line_idx}: field {idx} is not a number"))
            })
        };
        let confidence = fields[10].parse::<f64>().map_err(|_| {
            GateError::Ocr(format!(
                "TSV line {line_idx}: the confidence is not a number"
            ))
        })?;
        words.push(Word {
            text,
            confidence: confidence.clamp(0.0, 100.0),
            rect: Rect {
                x: number(6)?,
                y: number(7)?,
                width: number(8)?,
                height: number(9)?,
            },
        });
    }
    Ok(words)
}
