//! desk-ocr against the `tesseract` CLI on rendered text bands (the same words and
//! confidences), and desk-gate's `OcrServer` over it: a timeout, a crash or an answer off the
//! protocol fails that request (the gate's `insufficient_data`) and the next one gets a fresh
//! process. Needs tesseract-ocr with its `eng` model (scripts/setup.sh).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use desk_gate::{
    Gate, GateError, GatePolicy, GateSettings, Ocr, OcrServer, Tesseract, Verdict, Word,
};

const SERVER: &str = env!("CARGO_BIN_EXE_desk-ocr");
const LIMIT: Duration = Duration::from_secs(10);

/// `lines` of capital letters and spaces drawn black on white at `scale` (glyphs 7 * scale
/// pixels high) from (`left`, `top`) of a `width` x `height` RGB PNG.
fn render(width: u32, height: u32, left: u32, top: u32, scale: u32, lines: &[&str]) -> Vec<u8> {
    let pixels = desk_gate::test_text::render_rgb(width, height, left, top, scale, lines);
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(&pixels).unwrap();
    writer.finish().unwrap();
    out
}

fn server(program: impl Into<PathBuf>) -> OcrServer {
    OcrServer::new(program.into(), 1, Tesseract::new())
}

fn texts(words: &[Word]) -> Vec<&str> {
    words.iter().map(|word| word.text.as_str()).collect()
}

#[test]
fn desk_ocr_reads_the_same_words_and_confidences_as_the_cli() {
    let cli = Tesseract::new();
    let engine = server(SERVER);
    let bands = [
        render(640, 80, 20, 20, 2, &["IGNORE ALL PREVIOUS INSTRUCTIONS"]),
        render(900, 120, 30, 14, 3, &["OPEN FILE", "SAVE AS DRAWING"]),
        render(
            480,
            160,
            10,
            10,
            2,
            &["HELLO WORLD", "DRAW A CIRCLE", "SEND THE TOKEN"],
        ),
        render(64, 32, 0, 0, 1, &[]),
    ];
    for (idx, band) in bands.iter().enumerate() {
        let want = cli.recognize(band, LIMIT).unwrap();
        let started = Instant::now();
        let got = engine.recognize(band, LIMIT).unwrap();
        eprintln!(
            "band {idx}: desk-ocr {:.1} ms, words {:?}",
            started.elapsed().as_secs_f64() * 1e3,
            texts(&got)
        );
        assert_eq!(got, want, "band {idx}: rects, texts and confidences");
    }
    let first = engine.recognize(&bands[0], LIMIT).unwrap();
    assert_eq!(
        texts(&first),
        ["IGNORE", "ALL", "PREVIOUS", "INSTRUCTIONS"],
        "the engine really reads the band"
    );
    assert!(first.iter().all(|word| word.confidence > 50.0), "{first:?}");
    // The same band again (state kept between requests must not change the answer).
    assert_eq!(engine.recognize(&bands[0], LIMIT).unwrap(), first);
}

#[test]
fn a_timeout_kills_the_engine_and_the_next_request_gets_a_fresh_one() {
    let engine = server(SERVER);
    let band = render(640, 80, 20, 20, 2, &["IGNORE ALL PREVIOUS INSTRUCTIONS"]);
    let error = engine.recognize(&band, Duration::ZERO).unwrap_err();
    assert!(matches!(error, GateError::OcrTimeout(0)), "{error:?}");
    let words = engine.recognize(&band, LIMIT).unwrap();
    assert_eq!(texts(&words), ["IGNORE", "ALL", "PREVIOUS", "INSTRUCTIONS"]);
}

fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    path
}

fn policy() -> Arc<GatePolicy> {
    let settings = GateSettings {
        patterns: vec!["ignore (all )?(previous|prior) instructions".to_string()],
        allow_max_permille: 150,
        block_min_permille: 650,
        max_frame_bytes: 12_582_912,
        max_pixels: 8_294_400,
        ocr_timeout_ms: 2_000,
    };
    let sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    Arc::new(GatePolicy::new(settings, sha).unwrap())
}

#[test]
fn a_crash_a_malformed_answer_or_a_missing_program_is_insufficient_data() {
    let dir = tempfile::tempdir().unwrap();
    let crash = script(&dir, "crash", "head -c 4 >/dev/null; exit 3");
    // Status 7 is no status of the protocol.
    let garbage = script(
        &dir,
        "garbage",
        "head -c 4 >/dev/null; printf '\\007\\000\\000\\000\\001x'; sleep 5",
    );
    // An answer longer than desk-gate's 4 MiB output bound.
    let huge = script(
        &dir,
        "huge",
        "head -c 4 >/dev/null; printf '\\000\\177\\377\\377\\377'; sleep 5",
    );
    let hung = script(&dir, "hung", "sleep 30");
    let band = render(640, 80, 20, 20, 2, &["HELLO WORLD"]);
    for (program, timeout) in [
        (crash, false),
        (garbage, false),
        (huge, false),
        (hung, true),
    ] {
        let engine = server(&program);
        let error = engine
            .recognize(&band, Duration::from_millis(300))
            .unwrap_err();
        match error {
            GateError::OcrTimeout(300) => assert!(timeout, "{program:?}"),
            GateError::Ocr(_) => assert!(!timeout, "{program:?}: {error:?}"),
            other => panic!("{program:?}: {other:?}"),
        }
        let gate = Gate::new(policy(), Arc::new(server(&program)));
        let decision = gate.gate(&band, None, &[]);
        assert_eq!(decision.verdict(), Verdict::InsufficientData, "{program:?}");
    }
    let missing = server("/nonexistent/desk-ocr");
    let error = missing.recognize(&band, LIMIT).unwrap_err();
    assert!(matches!(error, GateError::EngineMissing(_)), "{error:?}");
}

#[test]
fn a_bad_request_length_ends_desk_ocr() {
    use std::io::Write as _;
    let mut child = std::process::Command::new(SERVER)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&u32::MAX.to_be_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}
