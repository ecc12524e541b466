//! `desk-ocr`: the screenshot gate's long-lived OCR engine (issue 29 performance). It loads
//! tesseract's `eng` model once and then answers framed requests on stdin/stdout, so a band
//! costs the recognition alone, not tesseract's ~125 ms start-up. It is a process of its own,
//! never part of the broker: the C++ engine parses untrusted pixels. desk-gate's `OcrServer`
//! keeps one and kills it on a timeout, crash or malformed answer.
//!
//! Protocol (all lengths u32 big-endian):
//! - request: `len` then `len` bytes of PNG (1 ..= [`MAX_REQUEST`]); end of input ends the
//!   process with status 0.
//! - answer: one status byte, `len`, then `len` bytes: status 0 is tesseract's TSV (the same
//!   header line and rows as `tesseract - - --psm 3 tsv`), status 1 an error message that never
//!   holds text read off the image.
//!
//! Arguments: `--psm N` (page segmentation mode, default 3 as the CLI path). A bad request
//! length ends the process with status 2 (the stream can no longer be trusted).

use std::io::{Read, Write};
use std::process::ExitCode;

use tesseract::{PageSegMode, Tesseract};

/// Most bytes of one request's PNG.
const MAX_REQUEST: u32 = 64 << 20;
/// Most bytes of one answer (desk-gate's `MAX_OCR_OUTPUT`).
const MAX_ANSWER: usize = 4 << 20;
/// The header line of tesseract's TSV renderer.
const TSV_HEADER: &str = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let psm = match args.as_slice() {
        [] => PageSegMode::PsmAuto,
        [flag, value] if flag == "--psm" => match value.as_str() {
            "3" => PageSegMode::PsmAuto,
            "6" => PageSegMode::PsmSingleBlock,
            "11" => PageSegMode::PsmSparseText,
            _ => return usage(),
        },
        _ => return usage(),
    };
    let mut engine = match load(psm) {
        Ok(engine) => engine,
        Err(message) => {
            eprintln!("desk-ocr: {message}");
            return ExitCode::from(1);
        }
    };
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    loop {
        let mut len = [0u8; 4];
        match input.read_exact(&mut len) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => {
                return ExitCode::SUCCESS;
            }
            Err(error) => {
                eprintln!("desk-ocr: read: {error}");
                return ExitCode::from(2);
            }
        }
        let len = u32::from_be_bytes(len);
        if len == 0 || len > MAX_REQUEST {
            eprintln!("desk-ocr: a request of {len} bytes (1 ..= {MAX_REQUEST})");
            return ExitCode::from(2);
        }
        let mut png = vec![0u8; len as usize];
        if let Err(error) = input.read_exact(&mut png) {
            eprintln!("desk-ocr: read: {error}");
            return ExitCode::from(2);
        }
        let (status, body) = match recognize(engine, &png) {
            Ok((next, tsv)) if tsv.len() <= MAX_ANSWER => {
                engine = next;
                (0u8, tsv)
            }
            Ok((next, _)) => {
                engine = next;
                (1u8, format!("more than {MAX_ANSWER} bytes of TSV"))
            }
            Err(message) => {
                // A failed step consumes the engine; load a fresh one for the next request.
                engine = match load(psm) {
                    Ok(engine) => engine,
                    Err(message) => {
                        eprintln!("desk-ocr: {message}");
                        return ExitCode::from(1);
                    }
                };
                (1u8, message)
            }
        };
        let mut frame = Vec::with_capacity(body.len() + 5);
        frame.push(status);
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(body.as_bytes());
        if output
            .write_all(&frame)
            .and_then(|()| output.flush())
            .is_err()
        {
            return ExitCode::from(2);
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: desk-ocr [--psm 3|6|11]");
    ExitCode::from(2)
}

/// The `eng` model from the system's tessdata, loaded once.
fn load(psm: PageSegMode) -> Result<Tesseract, String> {
    let mut engine =
        Tesseract::new(None, Some("eng")).map_err(|error| format!("load eng: {error}"))?;
    engine.set_page_seg_mode(psm);
    Ok(engine)
}

/// The TSV of one PNG and the engine back; an error when a step failed (the binding's steps
/// consume the engine, so the caller loads a fresh one).
fn recognize(engine: Tesseract, png: &[u8]) -> Result<(Tesseract, String), String> {
    let engine = engine
        .set_image_from_mem(png)
        .map_err(|_| "the image is not a readable PNG".to_string())?;
    let mut engine = engine
        .recognize()
        .map_err(|_| "recognition failed".to_string())?;
    let tsv = engine.get_tsv_text(0).map_err(|_| "no TSV".to_string())?;
    Ok((engine, format!("{TSV_HEADER}{tsv}")))
}
