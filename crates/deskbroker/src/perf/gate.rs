//! `deskbroker perf`'s screenshot-gate rows: the gate (`desk_gate::Gate`, real tesseract) timed
//! per frame on real LibreCAD frames from part A's desktop, for the three cases issue 29 names:
//! an identical frame, a frame where one small band changed with no text in it, and a dialog
//! appearing (LibreCAD's Open dialog, Ctrl+O). Timings are printed beside the targets,
//! never asserted. Every verdict is counted: a harmless frame that is not `allow` is printed.
//!
//! The "small band" frame is a real frame with a 48×12 flat grey box painted at the middle of
//! LibreCAD's (empty) drawing area, so the changed pixels are known and hold no text; the
//! gate still reads the full-width band around it, as it would on any change.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use desk_contract::{DisplaySize, InputAction, Key, Modifier, NamedKey, SettlePolicy};
use desk_desktop::{DesktopBackend, LocalDesktop};
use desk_gate::{Gate, GatePolicy, GateSettings, Ocr, OcrServer, Tesseract, Verdict};

/// One measured case: the gate's milliseconds per frame, the OCR part of them, the target.
pub(crate) struct GateCase {
    /// The row's label.
    pub(crate) what: String,
    /// The gate's whole time per frame, ms.
    pub(crate) gate_ms: Vec<f64>,
    /// Of which OCR (tesseract, start-up included), ms.
    pub(crate) ocr_ms: Vec<f64>,
    /// The bound, ms, when it names one.
    pub(crate) target_ms: Option<f64>,
    /// Verdicts other than `allow` (none expected on these harmless frames).
    pub(crate) not_allowed: Vec<&'static str>,
}

/// The policy the rows run under: the documented example's pattern and thresholds, plus two
/// credential patterns, so a dialog's text is matched against more than one expression.
fn policy() -> Result<Arc<GatePolicy>> {
    let settings = GateSettings {
        patterns: vec![
            "ignore (all )?(previous|prior) instructions".to_string(),
            "password\\s*[:=]".to_string(),
            "api[_ -]?key".to_string(),
        ],
        allow_max_permille: 150,
        block_min_permille: 650,
        max_frame_bytes: 12 << 20,
        max_pixels: 8_294_400,
        ocr_timeout_ms: 10_000,
    };
    // Not a signed policy: the digest the records would name is only carried, never checked.
    let policy = GatePolicy::new(settings, &"0".repeat(64)).context("the perf gate policy")?;
    Ok(Arc::new(policy))
}

/// A copy of `png` with a `width`×`height` mid-grey box at (`x`, `y`), re-encoded.
fn with_box(png: &[u8], (x, y, width, height): (u32, u32, u32, u32)) -> Result<Vec<u8>> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info()?;
    let mut pixels = vec![0; reader.output_buffer_size().context("frame too large")?];
    let info = reader.next_frame(&mut pixels)?;
    let channels = info.color_type.samples();
    if x + width > info.width || y + height > info.height {
        bail!(
            "the box does not fit in a {}x{} frame",
            info.width,
            info.height
        );
    }
    for row in y..y + height {
        for col in x..x + width {
            let at = row as usize * info.line_size + col as usize * channels;
            let pixel = pixels
                .get_mut(at..at + channels)
                .context("pixel outside the frame")?;
            for (channel, value) in pixel.iter_mut().enumerate() {
                // Grey in the colour channels; alpha (a fourth or second channel) opaque.
                let alpha = matches!((channels, channel), (4, 3) | (2, 1));
                *value = if alpha { 255 } else { 128 };
            }
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, info.width, info.height);
    encoder.set_color(info.color_type);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&pixels[..info.buffer_size()])?;
    writer.finish()?;
    Ok(out)
}

/// Gates `next` (against the last frame `gate` saw), adding its times and verdict to `case`.
fn time_frame(gate: &Gate, next: &[u8], case: &mut GateCase) {
    let decision = gate.gate(next, None, &[]);
    case.gate_ms.push(decision.elapsed_ms);
    case.ocr_ms.push(decision.ocr_elapsed_ms);
    if decision.verdict != Verdict::Allow {
        case.not_allowed.push(decision.verdict.as_str());
    }
}

fn case(what: &str, target_ms: Option<f64>) -> GateCase {
    GateCase {
        what: what.to_string(),
        gate_ms: Vec::new(),
        ocr_ms: Vec::new(),
        target_ms,
        not_allowed: Vec::new(),
    }
}

fn frame_after(desktop: &mut LocalDesktop, action: &InputAction) -> Result<Vec<u8>> {
    let outcome = desktop.execute(action, SettlePolicy::default())?;
    match outcome.frame {
        Some(frame) => Ok(frame.png),
        None => Ok(desktop.capture()?.png),
    }
}

/// The gate cases on `desktop` (LibreCAD maximized, nothing open), `samples` frames each.
pub(crate) fn measure(
    desktop: &mut LocalDesktop,
    display: DisplaySize,
    samples: usize,
) -> Result<Vec<GateCase>> {
    let samples = samples.max(1);
    let main = desktop.capture()?.png;
    let band = with_box(
        &main,
        (display.width / 2 - 24, display.height / 2 - 6, 48, 12),
    )?;
    let open = InputAction::Key {
        keys: vec![Key::Modifier(Modifier::Ctrl), Key::Char('o')],
    };
    let close = InputAction::Key {
        keys: vec![Key::Named(NamedKey::Escape)],
    };
    let dialog = frame_after(desktop, &open)?;
    // Give the dialog time to finish drawing (its file list fills in after it maps).
    std::thread::sleep(Duration::from_millis(500));
    let dialog = {
        let later = desktop.capture()?.png;
        if later.is_empty() { dialog } else { later }
    };
    let closed = frame_after(desktop, &close)?;
    if desk_contract::sha256_hex(&dialog) == desk_contract::sha256_hex(&main) {
        bail!("Ctrl+O showed no dialog in LibreCAD: the dialog row cannot be measured");
    }
    if desk_contract::sha256_hex(&closed) != desk_contract::sha256_hex(&main) {
        tracing::warn!("LibreCAD's screen after closing the dialog differs from before it");
    }

    // The same frames through each engine: the `tesseract` CLI per band, then the long-lived
    // `desk-ocr` (beside this executable or on PATH; `cargo build -p desk-ocr`) when found.
    let mut engines: Vec<(&str, Arc<dyn Ocr>)> =
        vec![("tesseract CLI", Arc::new(Tesseract::new()))];
    match OcrServer::find_program() {
        Some(program) => engines.push((
            "desk-ocr",
            Arc::new(OcrServer::new(program, 1, Tesseract::new())),
        )),
        None => eprintln!(
            "perf: desk-ocr not found beside deskbroker or on PATH: its gate rows are left out"
        ),
    }
    let mut cases = Vec::new();
    for (engine, ocr) in engines {
        let gate = Gate::new(policy()?, ocr);
        let label = |what: &str| format!("gate ({engine}): {what}");
        let mut first = case(&label("first frame (whole frame read)"), None);
        time_frame(&gate, &main, &mut first);
        let mut identical = case(&label("identical frame"), Some(20.0));
        let mut small = case(&label("48×12 box changed, no text"), Some(20.0));
        let mut appears = case(&label("Open dialog appears (Ctrl+O)"), Some(300.0));
        let mut closes = case(&label("Open dialog closes"), None);
        for _ in 0..samples {
            time_frame(&gate, &main, &mut identical);
        }
        for _ in 0..samples {
            time_frame(&gate, &band, &mut small);
            time_frame(&gate, &main, &mut small);
        }
        for _ in 0..samples {
            time_frame(&gate, &dialog, &mut appears);
            time_frame(&gate, &main, &mut closes);
        }
        cases.extend([first, identical, small, appears, closes]);
    }
    Ok(cases)
}
