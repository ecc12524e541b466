//! Unit tests of the platform-neutral worker: the protocol loop, the plan and its refusals,
//! held-input release, the settle loop and await_app, against [`FakePlatform`], which records
//! every step and keeps a key state and a frame the steps change. (Over 400 lines: the fake
//! platform and the cases against it are one unit.)

use std::collections::BTreeSet;

use desk_contract::desktop::{WindowRect, WindowRole, WindowRules};
use desk_contract::events::InputEventKind;
use desk_contract::keys::{Key, NamedKey};
use desk_contract::worker::{
    WorkerFailureKind, WorkerOp, WorkerReply, WorkerResponse, WorkerValue,
};
use desk_contract::{Button, DisplaySize, InputAction, Modifier, ScreenPoint, SettlePolicy};

use crate::error::WinError;
use crate::plan::{PlanRefusal, normalized, plan};
use crate::platform::{Bgrx, Platform, ScreenGeometry, Step, WinWindow};
use crate::worker::{Ended, Worker};

const WIDTH: u32 = 64;
const HEIGHT: u32 = 48;

/// A desktop in memory: typing a unit darkens one more pixel, keys and buttons track their
/// state, `fail_send_at` makes the n-th send fail.
#[derive(Default)]
struct FakePlatform {
    sent: Vec<Step>,
    down: BTreeSet<u16>,
    n_typed: usize,
    clock_ms: u64,
    fail_send_at: Option<usize>,
    windows: Vec<WinWindow>,
    maximize_works: bool,
    /// A window that appears (topmost) when a typed unit is released.
    opens_on_type: Option<WinWindow>,
}

fn button_vk(button: Button) -> u16 {
    match button {
        Button::Left => 0x01,
        Button::Right => 0x02,
        Button::Middle => 0x04,
    }
}

impl Platform for FakePlatform {
    fn screen(&mut self) -> Result<ScreenGeometry, WinError> {
        Ok(ScreenGeometry {
            left: 0,
            top: 0,
            width: WIDTH,
            height: HEIGHT,
        })
    }
    fn capture(&mut self) -> Result<Bgrx, WinError> {
        let mut data = vec![255u8; (WIDTH * HEIGHT * 4) as usize];
        for pixel in data.chunks_exact_mut(4).take(self.n_typed) {
            pixel.copy_from_slice(&[0, 0, 0, 0]);
        }
        Ok(Bgrx {
            width: WIDTH,
            height: HEIGHT,
            data,
        })
    }
    fn capture_path(&mut self) -> &'static str {
        "fake"
    }
    fn send(&mut self, step: &Step) -> Result<(), WinError> {
        if self.fail_send_at == Some(self.sent.len()) {
            self.fail_send_at = None;
            return Err(WinError::Win32 {
                call: "SendInput",
                detail: "injected".into(),
            });
        }
        self.sent.push(*step);
        match *step {
            Step::Key { vk, down: true, .. } => {
                self.down.insert(vk);
            }
            Step::Key {
                vk, down: false, ..
            } => {
                self.down.remove(&vk);
            }
            Step::Button { button, down } => {
                if down {
                    self.down.insert(button_vk(button));
                } else {
                    self.down.remove(&button_vk(button));
                }
            }
            Step::Unicode { down: false, .. } => {
                self.n_typed += 1;
                if let Some(window) = self.opens_on_type.take() {
                    self.windows.insert(0, window);
                }
            }
            Step::Pause { ms } => self.clock_ms += u64::from(ms),
            _ => {}
        }
        Ok(())
    }
    fn key_down(&mut self, vk: u16) -> Result<bool, WinError> {
        Ok(self.down.contains(&vk))
    }
    fn cursor(&mut self) -> Result<(i64, i64), WinError> {
        let last = self.sent.iter().rev().find_map(|step| match step {
            Step::MoveTo { x, y } => Some((i64::from(*x), i64::from(*y))),
            _ => None,
        });
        Ok(last.unwrap_or((0, 0)))
    }
    fn foreground(&mut self) -> Result<Option<u32>, WinError> {
        Ok(self.windows.first().map(|window| window.hwnd))
    }
    fn focused(&mut self) -> Result<Option<u32>, WinError> {
        Ok(None)
    }
    fn window_at(&mut self, x: u32, y: u32) -> Result<Option<u32>, WinError> {
        let inside = |window: &&WinWindow| {
            let (x, y) = (i64::from(x), i64::from(y));
            let rect = window.rect;
            x >= i64::from(rect.x)
                && y >= i64::from(rect.y)
                && x < i64::from(rect.x) + i64::from(rect.width)
                && y < i64::from(rect.y) + i64::from(rect.height)
        };
        Ok(self.windows.iter().find(inside).map(|window| window.hwnd))
    }
    fn window(&mut self, hwnd: u32) -> Result<Option<WinWindow>, WinError> {
        Ok(self
            .windows
            .iter()
            .find(|window| window.hwnd == hwnd)
            .cloned())
    }
    fn top_level_windows(&mut self) -> Result<Vec<WinWindow>, WinError> {
        Ok(self.windows.clone())
    }
    fn maximize(&mut self, hwnd: u32) -> Result<(), WinError> {
        if self.maximize_works {
            for window in self.windows.iter_mut().filter(|window| window.hwnd == hwnd) {
                window.zoomed = true;
                window.rect = WindowRect {
                    x: -4,
                    y: -4,
                    width: WIDTH + 8,
                    height: HEIGHT + 8,
                };
            }
        }
        Ok(())
    }
    fn work_area(&mut self) -> Result<WindowRect, WinError> {
        Ok(WindowRect {
            x: 0,
            y: 0,
            width: WIDTH,
            height: HEIGHT,
        })
    }
    fn vendor(&mut self) -> String {
        "fake".into()
    }
    fn now_ms(&mut self) -> u64 {
        self.clock_ms
    }
    fn sleep_ms(&mut self, ms: u64) {
        self.clock_ms += ms;
    }
}

fn notepad(hwnd: u32, pid: u32) -> WinWindow {
    WinWindow {
        hwnd,
        pid,
        class: "Notepad".into(),
        title: "Untitled - Notepad".into(),
        rect: WindowRect {
            x: 10,
            y: 10,
            width: 30,
            height: 20,
        },
        visible: true,
        iconic: false,
        zoomed: false,
        owned: false,
        popup: false,
    }
}

fn display() -> DisplaySize {
    DisplaySize {
        width: WIDTH,
        height: HEIGHT,
    }
}

fn origin() -> ScreenPoint {
    ScreenPoint { x: 0, y: 0 }
}

fn keys(names: &[&str]) -> InputAction {
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    // Built past validation on purpose where a test needs a chord the contract refuses.
    InputAction::Key {
        keys: names
            .iter()
            .map(|name| match name.as_str() {
                "ctrl" => Key::Modifier(Modifier::Ctrl),
                "alt" => Key::Modifier(Modifier::Alt),
                "shift" => Key::Modifier(Modifier::Shift),
                "f4" => Key::Named(NamedKey::F(4)),
                "delete" => Key::Named(NamedKey::Delete),
                "escape" => Key::Named(NamedKey::Escape),
                "tab" => Key::Named(NamedKey::Tab),
                other => Key::Char(other.chars().next().unwrap_or('?')),
            })
            .collect(),
    }
}

fn execute(worker: &mut Worker<FakePlatform>, action: InputAction) -> WorkerReply {
    worker.handle(WorkerOp::Execute {
        action,
        settle: SettlePolicy::default(),
        generation: None,
    })
}

fn failure_kind(reply: &WorkerReply) -> Option<WorkerFailureKind> {
    match reply {
        WorkerReply::Error(failure) => Some(failure.kind),
        WorkerReply::Ok(_) => None,
    }
}

#[test]
fn system_chords_are_refused_before_any_input() {
    for chord in [
        &["alt", "f4"][..],
        &["ctrl", "alt", "delete"],
        &["ctrl", "shift", "escape"],
        &["ctrl", "escape"],
        &["alt", "tab"],
    ] {
        let mut worker = Worker::new(FakePlatform::default(), None);
        let reply = execute(&mut worker, keys(chord));
        assert_eq!(
            failure_kind(&reply),
            Some(WorkerFailureKind::InvalidRequest),
            "{chord:?}"
        );
        assert!(
            worker.platform().sent.is_empty(),
            "{chord:?} sent {:?}",
            worker.platform().sent
        );
    }
}

#[test]
fn a_point_off_the_display_is_refused_before_any_input() {
    let mut worker = Worker::new(FakePlatform::default(), None);
    let action = InputAction::Click {
        at: ScreenPoint { x: WIDTH, y: 0 },
        button: Button::Left,
        modifiers: vec![],
    };
    assert_eq!(
        failure_kind(&execute(&mut worker, action)),
        Some(WorkerFailureKind::InvalidRequest)
    );
    assert!(worker.platform().sent.is_empty());
}

#[test]
fn semantic_steps_and_unimplemented_routes_answer_explicit_errors() {
    let mut worker = Worker::new(FakePlatform::default(), None);
    let action = InputAction::AxPress {
        observation_id: "o".into(),
        node: 0,
    };
    assert_eq!(
        failure_kind(&execute(&mut worker, action)),
        Some(WorkerFailureKind::AxUnavailable)
    );
    let reply = worker.handle(WorkerOp::ClipboardRead {
        max_output_bytes: 10,
    });
    assert_eq!(
        failure_kind(&reply),
        Some(WorkerFailureKind::ClipboardUnavailable)
    );
    let reply = worker.handle(WorkerOp::Windows);
    assert_eq!(
        failure_kind(&reply),
        Some(WorkerFailureKind::AppWindowNotFound)
    );
    assert!(worker.platform().sent.is_empty());
}

/// Every accessibility, clipboard and semantic operation of the protocol: each is refused on
/// Windows with its own typed kind and a message naming Windows, and nothing is sent.
#[test]
fn every_accessibility_clipboard_and_semantic_operation_is_a_typed_windows_refusal() {
    use desk_contract::a11y::{AxLimits, TextMode};
    let semantic = [
        InputAction::AxPress {
            observation_id: "o".into(),
            node: 3,
        },
        InputAction::AxSetText {
            observation_id: "o".into(),
            node: 3,
            text: "abc".into(),
            mode: TextMode::Set,
        },
    ];
    // The plan refuses them as semantic, whatever the pointer.
    for action in &semantic {
        assert!(matches!(
            plan(action, display(), origin()),
            Err(PlanRefusal::Semantic)
        ));
    }
    let mut cases: Vec<(WorkerOp, WorkerFailureKind)> = semantic
        .into_iter()
        .map(|action| {
            let op = WorkerOp::Execute {
                action,
                settle: SettlePolicy::default(),
                generation: None,
            };
            (op, WorkerFailureKind::AxUnavailable)
        })
        .collect();
    cases.push((
        WorkerOp::Accessibility {
            limits: AxLimits {
                max_nodes: 100,
                max_depth: 8,
                deadline_ms: 500,
            },
        },
        WorkerFailureKind::AxUnavailable,
    ));
    cases.push((
        WorkerOp::ClipboardRead {
            max_output_bytes: 10,
        },
        WorkerFailureKind::ClipboardUnavailable,
    ));
    cases.push((
        WorkerOp::ClipboardWrite { text: "x".into() },
        WorkerFailureKind::ClipboardUnavailable,
    ));
    let mut worker = Worker::new(FakePlatform::default(), Some(7));
    for (op, kind) in cases {
        let label = format!("{op:?}");
        match worker.handle(op) {
            WorkerReply::Error(failure) => {
                assert_eq!(failure.kind, kind, "{label}");
                assert!(
                    failure.message.contains("not available on Windows"),
                    "{label}: {}",
                    failure.message
                );
            }
            WorkerReply::Ok(value) => panic!("{label} answered {value:?}"),
        }
    }
    assert!(worker.platform().sent.is_empty(), "nothing was sent");
}

#[test]
fn hello_names_the_platforms_capture_path() {
    let mut worker = Worker::new(FakePlatform::default(), None);
    match worker.handle(WorkerOp::Hello) {
        WorkerReply::Ok(WorkerValue::Hello(hello)) => assert_eq!(hello.capture_path, "fake"),
        other => panic!("hello answered {other:?}"),
    }
}

#[test]
fn typed_text_is_sent_once_as_unicode_units_and_the_frame_changes() {
    let mut worker = Worker::new(FakePlatform::default(), None);
    let reply = execute(&mut worker, InputAction::Type { text: "hi!".into() });
    let WorkerReply::Ok(WorkerValue::Outcome(outcome)) = reply else {
        panic!("type failed: {reply:?}");
    };
    let units: Vec<u16> = worker
        .platform()
        .sent
        .iter()
        .filter_map(|step| match step {
            Step::Unicode { unit, down: true } => Some(*unit),
            _ => None,
        })
        .collect();
    assert_eq!(units, "hi!".encode_utf16().collect::<Vec<_>>());
    assert_eq!(outcome.events.len(), 6);
    assert_eq!(outcome.settle.changed_pixels, 3);
    assert!(outcome.settle.post_action_visual_stable);
    assert_eq!(outcome.settle.rule, desk_contract::SettleRule::QuietTimer);
    assert!(outcome.frame.is_some_and(|frame| !frame.png.is_empty()));
}

#[test]
fn a_chord_with_a_shifted_symbol_holds_shift_and_releases_everything() {
    let steps = plan(&keys(&["ctrl", "+"]), display(), origin()).unwrap_or_default();
    let sent: Vec<Step> = steps.iter().map(|planned| planned.step).collect();
    let key = |vk, down| Step::Key {
        vk,
        extended: false,
        down,
    };
    assert_eq!(
        sent,
        vec![
            key(0x11, true),
            key(0x10, true),
            key(0xBB, true),
            key(0xBB, false),
            key(0x10, false),
            key(0x11, false)
        ]
    );
}

#[test]
fn a_failed_send_releases_what_it_held_and_is_an_unknown_outcome() {
    let platform = FakePlatform {
        fail_send_at: Some(2),
        ..FakePlatform::default()
    };
    let mut worker = Worker::new(platform, None);
    let action = InputAction::Click {
        at: ScreenPoint { x: 5, y: 5 },
        button: Button::Left,
        modifiers: vec![Modifier::Shift],
    };
    assert_eq!(
        failure_kind(&execute(&mut worker, action)),
        Some(WorkerFailureKind::OutcomeUnknown)
    );
    assert!(
        worker.platform().down.is_empty(),
        "still held: {:?}",
        worker.platform().down
    );
    let platform = FakePlatform {
        fail_send_at: Some(0),
        ..FakePlatform::default()
    };
    let mut worker = Worker::new(platform, None);
    let reply = execute(&mut worker, keys(&["ctrl", "s"]));
    assert_eq!(failure_kind(&reply), Some(WorkerFailureKind::DesktopFailed));
}

#[test]
fn a_timed_drag_glides_with_the_button_held() {
    let action = InputAction::Drag {
        path: vec![ScreenPoint { x: 0, y: 0 }, ScreenPoint { x: 40, y: 20 }],
        button: Button::Left,
        duration_ms: 40,
        modifiers: vec![],
    };
    let steps = plan(&action, display(), origin()).unwrap_or_default();
    let drags = steps
        .iter()
        .filter(|planned| matches!(planned.event, Some(InputEventKind::Drag { .. })))
        .count();
    assert_eq!(drags, 4);
    let last_move = steps.iter().rev().find_map(|planned| match planned.step {
        Step::MoveTo { x, y } => Some((x, y)),
        _ => None,
    });
    assert_eq!(last_move, Some((40, 20)));
    assert!(matches!(plan(&InputAction::Done, display(), origin()), Ok(steps) if steps.is_empty()));
    assert_eq!(
        plan(
            &InputAction::AxPress {
                observation_id: "o".into(),
                node: 1
            },
            display(),
            origin()
        ),
        Err(PlanRefusal::Semantic)
    );
}

#[test]
fn await_app_binds_and_maximizes_the_main_window_then_windows_lists_it() {
    let platform = FakePlatform {
        windows: vec![notepad(0x30, 7), notepad(0x40, 8)],
        maximize_works: true,
        ..FakePlatform::default()
    };
    let mut worker = Worker::new(platform, None);
    let rules = WindowRules {
        class: Some("notepad".into()),
        title_prefix: None,
        ready_title_contains: None,
        maximize: true,
        overlays: vec![],
        timeout_ms: 1_000,
        prohibited: vec![],
    };
    let reply = worker.handle(WorkerOp::AwaitApp {
        pid: 8,
        rules: rules.clone(),
        settle: SettlePolicy::default(),
    });
    let WorkerReply::Ok(WorkerValue::Handoff(handoff)) = reply else {
        panic!("await_app failed: {reply:?}");
    };
    assert_eq!(handoff.window.window_id, 0x40);
    assert!(handoff.window.maximized && handoff.frame.app_maximized);
    let WorkerReply::Ok(WorkerValue::Windows { windows }) = worker.handle(WorkerOp::Windows) else {
        panic!("windows failed");
    };
    assert_eq!(
        windows
            .iter()
            .map(|window| window.window_id)
            .collect::<Vec<_>>(),
        vec![0x40]
    );

    let platform = FakePlatform {
        windows: vec![notepad(0x30, 7)],
        ..FakePlatform::default()
    };
    let mut worker = Worker::new(platform, None);
    let reply = worker.handle(WorkerOp::AwaitApp {
        pid: 7,
        rules: rules.clone(),
        settle: SettlePolicy::default(),
    });
    assert_eq!(
        failure_kind(&reply),
        Some(WorkerFailureKind::AppNotMaximized)
    );
    let reply = worker.handle(WorkerOp::AwaitApp {
        pid: 9,
        rules,
        settle: SettlePolicy::default(),
    });
    assert_eq!(
        failure_kind(&reply),
        Some(WorkerFailureKind::AppWindowNotFound)
    );
}

#[test]
fn the_loop_answers_in_order_with_attachments_and_id_zero_for_garbage() {
    let input = concat!(
        r#"{"id":1,"op":{"type":"hello"}}"#,
        "\n",
        "not json\n",
        r#"{"id":2,"op":{"type":"capture"}}"#,
        "\n",
        r#"{"id":3,"op":{"type":"frobnicate"}}"#,
        "\n",
        r#"{"id":3,"op":{"type":"hello"},"extra":1}"#,
        "\n",
        r#"{"id":4,"op":{"type":"shutdown"}}"#,
        "\n",
        r#"{"id":5,"op":{"type":"hello"}}"#,
        "\n",
    );
    let mut worker = Worker::new(FakePlatform::default(), None);
    let mut output = Vec::new();
    let ended = worker
        .serve(input.as_bytes(), &mut output)
        .unwrap_or(Ended::Disconnected);
    assert_eq!(ended, Ended::Shutdown);
    let mut rest = &output[..];
    let mut answers = Vec::new();
    while let Some(newline) = rest.iter().position(|byte| *byte == b'\n') {
        let mut response: WorkerResponse =
            serde_json::from_slice(&rest[..newline]).unwrap_or_else(|error| panic!("{error}"));
        let length = usize::try_from(response.attachment_len).unwrap_or(0);
        let png = rest[newline + 1..newline + 1 + length].to_vec();
        response
            .attach_png(png)
            .unwrap_or_else(|error| panic!("{error}"));
        rest = &rest[newline + 1 + length..];
        answers.push(response);
    }
    let ids: Vec<u64> = answers.iter().map(|answer| answer.id).collect();
    assert_eq!(ids, vec![1, 0, 2, 0, 0, 4]);
    assert!(
        matches!(&answers[2].reply, WorkerReply::Ok(WorkerValue::Frame(frame)) if frame.png.starts_with(b"\x89PNG") && frame.width == WIDTH)
    );
    assert!(matches!(
        &answers[5].reply,
        WorkerReply::Ok(WorkerValue::Bye)
    ));
}

#[test]
fn normalized_coordinates_map_back_to_the_same_pixel() {
    for size in [1u32, 640, 1280, 1366, 1920, 2560, 3840, 7680] {
        for pixel in 0..size {
            let value = normalized(pixel, size);
            assert!((0..=65_535).contains(&value), "{pixel} of {size}: {value}");
            let back = u64::try_from(value).unwrap_or(0) * u64::from(size) / 65_536;
            assert_eq!(back, u64::from(pixel), "{pixel} of {size}: {value}");
        }
    }
}

#[test]
fn input_whose_destination_is_not_the_app_is_refused_before_any_input() {
    let mut other = notepad(0x30, 7);
    other.rect = WindowRect {
        x: 0,
        y: 30,
        width: 20,
        height: 10,
    };
    let platform = FakePlatform {
        // The other process's window is the foreground one (first in z-order).
        windows: vec![other, notepad(0x40, 8)],
        ..FakePlatform::default()
    };
    let mut worker = Worker::new(platform, None);
    let rules = WindowRules {
        class: None,
        title_prefix: None,
        ready_title_contains: None,
        maximize: false,
        overlays: vec![],
        timeout_ms: 1_000,
        prohibited: vec![],
    };
    let reply = worker.handle(WorkerOp::AwaitApp {
        pid: 8,
        rules,
        settle: SettlePolicy::default(),
    });
    assert!(
        matches!(reply, WorkerReply::Ok(WorkerValue::Handoff(_))),
        "{reply:?}"
    );
    let click = |x, y| InputAction::Click {
        at: ScreenPoint { x, y },
        button: Button::Left,
        modifiers: vec![],
    };
    for action in [
        click(1, 1),
        click(5, 35),
        InputAction::Drag {
            path: vec![ScreenPoint { x: 15, y: 15 }, ScreenPoint { x: 60, y: 40 }],
            button: Button::Left,
            duration_ms: 0,
            modifiers: vec![],
        },
        InputAction::Type { text: "x".into() },
    ] {
        let reply = execute(&mut worker, action.clone());
        assert_eq!(
            failure_kind(&reply),
            Some(WorkerFailureKind::DestinationNotApp),
            "{action:?}"
        );
    }
    assert!(
        worker.platform().sent.is_empty(),
        "{:?}",
        worker.platform().sent
    );
    let reply = execute(&mut worker, click(15, 15));
    assert!(
        matches!(reply, WorkerReply::Ok(WorkerValue::Outcome(_))),
        "{reply:?}"
    );
    // With the app in the foreground, keys go through; a window it opens is in the receipt.
    worker.platform().windows.swap(0, 1);
    let mut dialog = notepad(0x50, 8);
    dialog.owned = true;
    dialog.class = "#32770".into();
    worker.platform().opens_on_type = Some(dialog);
    let reply = execute(&mut worker, InputAction::Type { text: "y".into() });
    let WorkerReply::Ok(WorkerValue::Outcome(outcome)) = reply else {
        panic!("type failed: {reply:?}");
    };
    let opened: Vec<(u32, WindowRole)> = outcome
        .opened_windows
        .iter()
        .map(|window| (window.window_id, window.role))
        .collect();
    assert_eq!(opened, vec![(0x50, WindowRole::Dialog)]);
}

#[test]
fn a_click_presses_once_and_a_double_click_twice_inside_their_modifiers() {
    let display = DisplaySize {
        width: WIDTH,
        height: HEIGHT,
    };
    let at = ScreenPoint { x: 10, y: 20 };
    let shape = |action: InputAction| {
        plan(&action, display, ScreenPoint { x: 0, y: 0 })
            .unwrap_or_else(|refusal| panic!("{refusal:?}"))
            .into_iter()
            .map(|planned| match planned.step {
                Step::MoveTo { .. } => "move",
                Step::Button { down: true, .. } => "down",
                Step::Button { down: false, .. } => "up",
                _ => "other",
            })
            .collect::<Vec<_>>()
    };
    let click = shape(InputAction::Click {
        at,
        button: Button::Left,
        modifiers: vec![Modifier::Shift],
    });
    assert_eq!(click, ["other", "move", "down", "up", "other"]);
    let double = shape(InputAction::DoubleClick {
        at,
        button: Button::Left,
        modifiers: vec![Modifier::Shift],
    });
    assert_eq!(
        double,
        ["other", "move", "down", "up", "down", "up", "other"]
    );
}
