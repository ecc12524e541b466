//! The Windows worker under Wine on Xvfb, driven through the worker protocol against Wine's
//! notepad: typed text arrives exactly once (read back with `WM_GETTEXT`), a capture decodes and
//! changes after typing, refused chords change nothing, receipts name notepad's window and
//! class, pointer moves land on the pixel asked for, nothing stays held, input onto another
//! process's window is refused. Prints the action and capture times it measured. (Over 400
//! lines: one scenario on one desktop, with its client.)
//!
//! Opt-in: runs only with `DESK_WIN_WORKER_EXE` set to the cross-compiled worker (with Wine's
//! missing `bcryptprimitives.dll` stand-in beside it); `scripts/wine-conformance.sh` builds both
//! and runs this test. Without it, or without `wine`/`Xvfb`, it prints `skipped: ...`. It runs
//! on Linux only (compiled out when desk-win is built for Windows).
#![cfg(not(windows))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use desk_contract::desktop::{ActionOutcome, Frame, Handoff, WindowRules};
use desk_contract::keys::{Key, NamedKey};
use desk_contract::worker::{
    WorkerFailureKind, WorkerOp, WorkerReply, WorkerRequest, WorkerResponse, WorkerValue,
};
use desk_contract::{Button, InputAction, Modifier, ScreenPoint, SettlePolicy};
use desk_test_support::Xvfb;

mod listen;

const WORKER_EXE_ENV: &str = "DESK_WIN_WORKER_EXE";

struct Wine {
    display: String,
    prefix: PathBuf,
}

impl Wine {
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .env("DISPLAY", &self.display)
            .env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=");
        command
    }

    fn kill_all(&self) {
        let _ = self.command("wineserver").arg("-k").status();
    }
}

/// A worker under Wine and the protocol client of this test.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn request(&mut self, op: WorkerOp) -> (WorkerReply, Duration) {
        self.next_id += 1;
        let request = WorkerRequest {
            id: self.next_id,
            op,
        };
        let started = Instant::now();
        let mut line = serde_json::to_vec(&request).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
        let mut text = String::new();
        self.stdout.read_line(&mut text).unwrap();
        let mut response: WorkerResponse = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("unreadable answer {text:?}: {error}"));
        let mut png = vec![0u8; usize::try_from(response.attachment_len).unwrap()];
        self.stdout.read_exact(&mut png).unwrap();
        response.attach_png(png).unwrap();
        assert_eq!(response.id, self.next_id, "answer out of order");
        (response.reply, started.elapsed())
    }

    fn execute(&mut self, action: InputAction) -> (WorkerReply, Duration) {
        self.request(WorkerOp::Execute {
            action,
            settle: SettlePolicy::default(),
            generation: None,
        })
    }

    fn outcome(&mut self, action: InputAction) -> (ActionOutcome, Duration) {
        match self.execute(action.clone()) {
            (WorkerReply::Ok(WorkerValue::Outcome(outcome)), elapsed) => (*outcome, elapsed),
            (other, _) => panic!("{action:?} failed: {other:?}"),
        }
    }

    fn capture(&mut self) -> (Frame, Duration) {
        match self.request(WorkerOp::Capture) {
            (WorkerReply::Ok(WorkerValue::Frame(frame)), elapsed) => (frame, elapsed),
            (other, _) => panic!("capture failed: {other:?}"),
        }
    }
}

/// RGB pixels of a PNG, checked against its announced size.
fn decode(frame: &Frame) -> Vec<u8> {
    let decoder = png::Decoder::new(std::io::Cursor::new(frame.png.clone()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0u8; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (frame.width, frame.height));
    assert_eq!(desk_contract::sha256_hex(&frame.png), frame.sha256);
    pixels.truncate(info.buffer_size());
    pixels
}

/// The box `[x, y, width, height]` of the pixels that differ, if any.
fn changed_box(before: &[u8], after: &[u8], width: u32) -> Option<[u32; 4]> {
    let mut bounds: Option<[u32; 4]> = None;
    for (pixel_idx, (old, new)) in before.chunks(3).zip(after.chunks(3)).enumerate() {
        if old != new {
            let (x, y) = (pixel_idx as u32 % width, pixel_idx as u32 / width);
            bounds = Some(match bounds {
                None => [x, y, x, y],
                Some([x0, y0, x1, y1]) => [x0.min(x), y0.min(y), x1.max(x), y1.max(y)],
            });
        }
    }
    bounds.map(|[x0, y0, x1, y1]| [x0, y0, x1 - x0 + 1, y1 - y0 + 1])
}

fn edit_text(wine: &Wine, exe: &Path) -> String {
    let output = wine
        .command("wine")
        .arg(exe)
        .args(["text", "Notepad"])
        .output()
        .unwrap();
    assert!(output.status.success(), "text failed: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn chord(keys: &[Key]) -> InputAction {
    InputAction::Key {
        keys: keys.to_vec(),
    }
}

/// What every test here needs: the worker executable, a 1280x800 Xvfb and Wine on it (the
/// prefix from `WINEPREFIX`, else a fresh one in the returned directory). `None` (after saying
/// why) when the test is not asked for or a tool is missing.
fn wine_desktop() -> Option<(PathBuf, Xvfb, Wine, tempfile::TempDir)> {
    let Some(exe) = std::env::var_os(WORKER_EXE_ENV).map(PathBuf::from) else {
        println!("skipped: {WORKER_EXE_ENV} not set (scripts/wine-conformance.sh runs this test)");
        return None;
    };
    if !desk_test_support::tools_available("wine", &["wine", "wineserver"]) {
        return None;
    }
    let xvfb = Xvfb::start(1280, 800)?;
    let prefix_dir = tempfile::tempdir().unwrap();
    let prefix = std::env::var_os("WINEPREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| prefix_dir.path().to_path_buf());
    let wine = Wine {
        display: xvfb.display().to_string(),
        prefix,
    };
    Some((exe, xvfb, wine, prefix_dir))
}

#[test]
fn the_worker_drives_wine_notepad_through_the_protocol() {
    let Some((exe, _xvfb, wine, _prefix_dir)) = wine_desktop() else {
        return;
    };
    let mut child = wine
        .command("wine")
        .arg(&exe)
        .args(["--launch", "notepad.exe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut client = Client {
        child,
        stdin,
        stdout,
        next_id: 0,
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut line = String::new();
        let pid = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "worker exited");
            if let Some(pid) = line.trim().strip_prefix("launched pid ") {
                break pid.parse::<u32>().unwrap();
            }
        };
        // The rest of stderr (the capture path's reason) is kept for the checks.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        drive(&mut client, &wine, &exe, pid, &log);
    }));
    let _ = client.child.kill();
    let _ = client.child.wait();
    wine.kill_all();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

fn drive(
    client: &mut Client,
    wine: &Wine,
    exe: &Path,
    pid: u32,
    log: &std::sync::Mutex<Vec<String>>,
) {
    let (reply, hello_time) = client.request(WorkerOp::Hello);
    let WorkerReply::Ok(WorkerValue::Hello(hello)) = reply else {
        panic!("hello failed: {reply:?}");
    };
    assert_eq!((hello.display.width, hello.display.height), (1280, 800));
    assert!(hello.server_vendor.starts_with("Wine"), "{hello:?}");
    // Wine has no DXGI Desktop Duplication of an X display: the GDI fallback is the path, and
    // the worker said why on stderr before it answered (read by the thread, so wait briefly).
    assert_eq!(hello.capture_path, "gdi", "{hello:?}");
    let reason = (0..50)
        .find_map(|_| {
            let found = log
                .lock()
                .unwrap()
                .iter()
                .find(|line| line.starts_with("desk-win: capture path gdi: "))
                .cloned();
            if found.is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
            found
        })
        .expect("the worker logs why it captures with GDI");
    println!("capture path under Wine: {reason}");
    let rules = WindowRules {
        class: Some("Notepad".into()),
        title_prefix: None,
        ready_title_contains: Some("Notepad".into()),
        maximize: true,
        overlays: vec![],
        timeout_ms: 60_000,
        prohibited: vec![],
    };
    let (reply, handoff_time) = client.request(WorkerOp::AwaitApp {
        pid,
        rules,
        settle: SettlePolicy::default(),
    });
    let handoff: Handoff = match reply {
        WorkerReply::Ok(WorkerValue::Handoff(handoff)) => *handoff,
        other => panic!("await_app failed: {other:?}"),
    };
    let notepad = handoff.window.window_id;
    assert_eq!(handoff.window.class, "Notepad");
    assert!(
        handoff.window.maximized && handoff.frame.app_maximized,
        "{:?}",
        handoff.window
    );
    decode(&handoff.frame);

    let mut capture_times = Vec::new();
    let (mut before, elapsed) = client.capture();
    capture_times.push(elapsed);
    for _ in 0..4 {
        let (frame, elapsed) = client.capture();
        capture_times.push(elapsed);
        before = frame;
    }
    let before_pixels = decode(&before);

    // Typed text arrives exactly once, to notepad, and the screen shows it.
    let text = "hello desk-win 42";
    let (outcome, type_time) = client.outcome(InputAction::Type { text: text.into() });
    assert_eq!(outcome.events.len(), text.len() * 2);
    let type_timing = (
        outcome.input_ms,
        outcome.settle.wait_ms,
        outcome.settle.n_samples,
    );
    let active = outcome
        .focus_before
        .active
        .as_ref()
        .expect("a foreground window");
    assert_eq!(
        (active.window_id, active.class.as_str()),
        (notepad, "Notepad")
    );
    assert!(active.is_app);
    assert!(
        outcome.released_after.is_empty(),
        "{:?}",
        outcome.released_after
    );
    let typed_frame = outcome.frame.as_ref().expect("a settled frame");
    let typed_pixels = decode(typed_frame);
    assert!(outcome.settle.changed_pixels > 0, "{:?}", outcome.settle);
    let changed = changed_box(&before_pixels, &typed_pixels, typed_frame.width);
    let Some([text_x, text_y, text_width, text_height]) = changed else {
        panic!("typing changed no pixel");
    };
    assert!(text_width > 50, "{changed:?}");
    assert_eq!(edit_text(wine, exe), text);

    // A named key through its virtual key.
    let (outcome, key_time) = client.outcome(chord(&[Key::Named(NamedKey::Backspace)]));
    assert_eq!(outcome.events.len(), 2);
    assert_eq!(edit_text(wine, exe), "hello desk-win 4");

    // Refused chords: nothing sent, nothing changed.
    let (reference, _) = client.capture();
    let reference_pixels = decode(&reference);
    for keys in [
        vec![Key::Modifier(Modifier::Alt), Key::Named(NamedKey::F(4))],
        vec![
            Key::Modifier(Modifier::Ctrl),
            Key::Modifier(Modifier::Alt),
            Key::Named(NamedKey::Delete),
        ],
        vec![
            Key::Modifier(Modifier::Ctrl),
            Key::Modifier(Modifier::Shift),
            Key::Named(NamedKey::Escape),
        ],
    ] {
        let (reply, _) = client.execute(chord(&keys));
        assert!(
            matches!(&reply, WorkerReply::Error(failure) if failure.kind == WorkerFailureKind::InvalidRequest),
            "{keys:?}: {reply:?}"
        );
    }
    let (after_refusals, _) = client.capture();
    let after_pixels = decode(&after_refusals);
    // The caret may blink between the two captures; anything wider than a caret is a change.
    let refused_change = changed_box(&reference_pixels, &after_pixels, reference.width);
    assert!(
        refused_change.is_none_or(|[_, _, width, height]| width <= 3 && height <= 40),
        "{refused_change:?}"
    );
    assert_eq!(edit_text(wine, exe), "hello desk-win 4");

    // Ctrl+O opens the Open dialog: the receipt names it; Escape closes it.
    let (outcome, _) = client.outcome(chord(&[Key::Modifier(Modifier::Ctrl), Key::Char('o')]));
    let dialog = outcome
        .opened_windows
        .iter()
        .find(|window| window.role == desk_contract::desktop::WindowRole::Dialog)
        .unwrap_or_else(|| panic!("no dialog in {:?}", outcome.opened_windows))
        .window_id;
    let (outcome, _) = client.outcome(chord(&[Key::Named(NamedKey::Escape)]));
    assert!(outcome.opened_windows.is_empty());
    let (reply, _) = client.request(WorkerOp::Windows);
    let WorkerReply::Ok(WorkerValue::Windows { windows }) = reply else {
        panic!("windows failed: {reply:?}");
    };
    assert!(
        windows.iter().all(|window| window.window_id != dialog),
        "{windows:?}"
    );
    assert_eq!(edit_text(wine, exe), "hello desk-win 4");

    // A double click on the first word selects it: typing replaces exactly that word.
    let row = text_y + text_height / 2;
    let (outcome, double_click_time) = client.outcome(InputAction::DoubleClick {
        at: ScreenPoint {
            x: text_x + 8,
            y: row,
        },
        button: Button::Left,
        modifiers: vec![],
    });
    assert_eq!(outcome.events.len(), 5);
    client.outcome(InputAction::Type {
        text: "HOWDY".into(),
    });
    let replaced = edit_text(wine, exe);
    assert!(
        replaced.starts_with("HOWDY")
            && replaced.ends_with("desk-win 4")
            && !replaced.contains("hello"),
        "{replaced:?}"
    );
    // A drag across the whole line, right to left (ending left of the first character, the
    // edit's capture holding), selects it: typing replaces it.
    let (outcome, drag_time) = client.outcome(InputAction::Drag {
        path: vec![
            ScreenPoint {
                x: text_x + text_width + 200,
                y: row,
            },
            ScreenPoint {
                x: text_x.saturating_sub(3),
                y: row,
            },
        ],
        button: Button::Left,
        duration_ms: 200,
        modifiers: vec![],
    });
    assert!(outcome.events.len() >= 4, "{:?}", outcome.events);
    assert!(outcome.released_after.is_empty());
    client.outcome(InputAction::Type {
        text: "dragged".into(),
    });
    assert_eq!(edit_text(wine, exe), "dragged");
    let (outcome, scroll_time) = client.outcome(InputAction::Scroll {
        dx: 0,
        dy: 3,
        modifiers: vec![],
    });
    assert_eq!(outcome.events.len(), 1);

    // The pointer lands on the pixel asked for; a click is delivered and released.
    let target = ScreenPoint { x: 401, y: 303 };
    let (outcome, move_time) = client.outcome(InputAction::Move {
        to: target,
        duration_ms: 0,
    });
    let pointer = outcome.focus_after.expect("focus after").pointer;
    assert_eq!(pointer, target);
    let (outcome, click_time) = client.outcome(InputAction::Click {
        at: ScreenPoint { x: 600, y: 400 },
        button: Button::Left,
        modifiers: vec![Modifier::Shift],
    });
    assert_eq!(outcome.events.len(), 5);
    assert!(outcome.released_after.is_empty());

    let (reply, _) = client.request(WorkerOp::Windows);
    let WorkerReply::Ok(WorkerValue::Windows { windows }) = reply else {
        panic!("windows failed: {reply:?}");
    };
    assert!(
        windows.iter().any(|window| window.window_id == notepad
            && window.role == desk_contract::desktop::WindowRole::Main),
        "{windows:?}"
    );
    let (reply, _) = client.request(WorkerOp::Facts);
    let WorkerReply::Ok(WorkerValue::Facts(facts)) = reply else {
        panic!("facts failed: {reply:?}");
    };
    assert!(facts.held.is_empty(), "{:?}", facts.held);
    assert_eq!(
        facts.app_window.map(|window| window.window_id),
        Some(notepad)
    );

    // Another process's notepad takes the foreground: keys and a click on it are refused
    // (`destination_not_app`) and it receives nothing.
    let mut intruder = wine.command("wine").arg("notepad.exe").spawn().unwrap();
    let started = Instant::now();
    let intruder_window = loop {
        let (reply, _) = client.request(WorkerOp::Facts);
        let WorkerReply::Ok(WorkerValue::Facts(facts)) = reply else {
            panic!("facts failed: {reply:?}");
        };
        match facts.focus.active {
            Some(active) if active.class == "Notepad" && active.window_id != notepad => {
                break active;
            }
            _ => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the second notepad never came to the front"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!intruder_window.is_app, "{intruder_window:?}");
    let center = ScreenPoint {
        x: u32::try_from(intruder_window.rect.x).unwrap() + intruder_window.rect.width / 2,
        y: u32::try_from(intruder_window.rect.y).unwrap() + intruder_window.rect.height / 2,
    };
    for action in [
        InputAction::Type {
            text: "intruder".into(),
        },
        InputAction::Click {
            at: center,
            button: Button::Left,
            modifiers: vec![],
        },
    ] {
        let (reply, _) = client.execute(action.clone());
        assert!(
            matches!(&reply, WorkerReply::Error(failure) if failure.kind == WorkerFailureKind::DestinationNotApp),
            "{action:?}: {reply:?}"
        );
    }
    // `text Notepad` reads the topmost notepad: the intruder, still empty.
    assert_eq!(edit_text(wine, exe), "");
    let _ = intruder.kill();
    let _ = intruder.wait();

    let (reply, _) = client.request(WorkerOp::Accessibility {
        limits: desk_contract::a11y::AxLimits {
            max_nodes: 10,
            max_depth: 2,
            deadline_ms: 1_000,
        },
    });
    assert!(
        matches!(reply, WorkerReply::Error(failure) if failure.kind == WorkerFailureKind::AxUnavailable)
    );
    let (reply, _) = client.request(WorkerOp::Shutdown);
    assert!(matches!(reply, WorkerReply::Ok(WorkerValue::Bye)));

    let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
    let mut sorted: Vec<f64> = capture_times.iter().map(|time| ms(*time)).collect();
    sorted.sort_by(f64::total_cmp);
    println!(
        "wine timings (ms): hello {:.0}, await_app {:.0}, capture median {:.0} (min {:.0}, max {:.0}, n {}), \
         type {} chars {:.0} (input {} ms, settle {} ms over {} samples), key {:.0}, move {:.0}, click {:.0}, \
         double click {:.0}, drag 200 ms {:.0}, scroll {:.0}",
        ms(hello_time),
        ms(handoff_time),
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1],
        sorted.len(),
        text.len(),
        ms(type_time),
        type_timing.0,
        type_timing.1,
        type_timing.2,
        ms(key_time),
        ms(move_time),
        ms(click_time),
        ms(double_click_time),
        ms(drag_time),
        ms(scroll_time),
    );
}
