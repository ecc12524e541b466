//! FreeCAD's entry paths to code (issue 24 item 5; the table in `docs/security.md`, "FreeCAD
//! entry paths"), driven through the real broker with validated GUI actions on real FreeCAD
//! 0.20 under Xvfb, asserted by behaviour: no window of a prohibited kind appears, no file the
//! app was offered runs or opens, no workbench that loads modules by name is offered, and with
//! the app's own lockdown removed the worker alone still refuses input into a macro dialog and,
//! through AT-SPI, into the docked Python console.
//!
//! Coordinates are those of the pinned 1280x800 desktop (menu bar at y = 28; menu items measured
//! from FreeCAD 0.20.2's own geometry: 23 px rows). One locked session carries every inner-layer
//! case; a second session, whose profile is `freecad` without the lockdown module, shows the
//! outer layer alone.
//!
//! Over 400 lines: one table of cases that share one session and its driver (a FreeCAD start
//! costs seconds); split, each part would start its own. The expression cases run headless on
//! the same engine beside them.
//! `DESK_ENTRY_SHOTS=<dir>` saves the screenshots of the file cases there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::api::ActionResponse;
use desk_contract::control::ProgramRequest;
use serde_json::{Value, json};

use crate::freecad::freecad_available;
use crate::probe::act;
use crate::support::{Broker, lease_and_reset, png_pixels, xvfb_available};

/// Titles of the windows the profile prohibits (`freecad.toml`'s `[[window.prohibited]]`).
const PROHIBITED_TITLES: &[&str] = &[
    "Python console",
    "Execute macro",
    "Macro recording",
    "Customize",
    "Parameter Editor",
    "Preferences",
    "Addon manager",
    "Start page",
];

/// One leased FreeCAD session and its next action index.
pub(crate) struct Driver {
    pub(crate) client: Client,
    pub(crate) session: String,
    pub(crate) index: u64,
    ids: u32,
}

impl Driver {
    pub(crate) async fn lease(broker: &Broker, profile: &str) -> Driver {
        let client = broker.client();
        let started = Instant::now();
        let (session, reset) =
            lease_and_reset(&client, "entry-paths", &format!("{profile}-1"), profile).await;
        println!(
            "{profile}: lease and reset to handoff {} ms",
            started.elapsed().as_millis()
        );
        assert_eq!(reset.window.title, "FreeCAD - attempt.FCStd");
        Driver {
            client,
            session,
            index: 0,
            ids: 0,
        }
    }

    /// Sends `action`; an accepted one advances the action index.
    pub(crate) async fn send(&mut self, action: Value) -> Result<ActionResponse, ClientError> {
        self.ids += 1;
        let id = format!("step-{}", self.ids);
        let answer = act(&self.client, &self.session, &id, self.index, action).await;
        if answer.is_ok() {
            self.index += 1;
        }
        answer
    }

    async fn ok(&mut self, action: Value) -> ActionResponse {
        let what = action.clone();
        self.send(action)
            .await
            .unwrap_or_else(|error| panic!("{what} was refused: {error:?}"))
    }

    async fn click(&mut self, x: u32, y: u32, intent: &str) -> ActionResponse {
        self.ok(json!({"type": "click", "x": x, "y": y, "intent": intent}))
            .await
    }

    async fn key(&mut self, keys: &[&str]) -> ActionResponse {
        self.ok(json!({"type": "key", "keys": keys, "intent": "press keys"}))
            .await
    }

    async fn type_text(&mut self, text: &str) -> ActionResponse {
        self.ok(json!({"type": "type", "text": text, "intent": "type"}))
            .await
    }

    async fn wait(&mut self, milliseconds: u32) -> ActionResponse {
        self.ok(json!({"type": "wait", "milliseconds": milliseconds, "intent": "let it act"}))
            .await
    }

    /// The app's top-level window titles.
    async fn titles(&self) -> Vec<String> {
        self.client
            .windows(&self.session)
            .await
            .unwrap()
            .windows
            .into_iter()
            .map(|window| window.title)
            .collect()
    }

    /// Asserts that no window of a prohibited kind is open, after `case`.
    async fn assert_no_prohibited_window(&self, case: &str) {
        let titles = self.titles().await;
        for title in &titles {
            assert!(
                !PROHIBITED_TITLES
                    .iter()
                    .any(|prohibited| title.contains(prohibited)),
                "{case}: a prohibited window is open: {titles:?}"
            );
        }
        println!("{case}: windows {titles:?}");
    }
}

/// Screenshot rows `rows` as bytes (every column, every channel).
fn rows(shot: &ActionResponse, rows: std::ops::Range<usize>) -> Vec<u8> {
    let png = &shot.screenshot.as_ref().unwrap().png_base64;
    let (pixels, line, _) = png_pixels(png);
    pixels[rows.start * line..rows.end * line].to_vec()
}

/// How many rows of column `x` are menu white.
fn white_rows(shot: &ActionResponse, x: usize) -> usize {
    let png = &shot.screenshot.as_ref().unwrap().png_base64;
    let (pixels, line, channels) = png_pixels(png);
    (0..800)
        .filter(|&y| {
            let at = y * line + x * channels;
            pixels[at..at + 3] == [255, 255, 255]
        })
        .count()
}

/// Saves `shot` as `<DESK_ENTRY_SHOTS>/<what>-<index>.png` when that variable is set.
fn save_shot(shot: &ActionResponse, what: &str, index: u64) {
    if let Ok(dir) = std::env::var("DESK_ENTRY_SHOTS") {
        let png = &shot.screenshot.as_ref().unwrap().png_base64;
        let bytes =
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, png).unwrap();
        std::fs::write(format!("{dir}/{what}-{index}.png"), bytes).unwrap();
    }
}

/// Writes, with the host's headless FreeCAD, `feature.FCStd` (a Python feature) and
/// `property.FCStd` (a Python-object property) into `dir`.
fn write_python_documents(dir: &Path, scratch: &Path) {
    let script = scratch.join("make.py");
    std::fs::write(
        &script,
        format!(
            "import FreeCAD\n\
             d = FreeCAD.newDocument('feature')\n\
             d.addObject('App::FeaturePython', 'P')\n\
             d.saveAs({feature:?})\n\
             d = FreeCAD.newDocument('property')\n\
             o = d.addObject('Part::Feature', 'F')\n\
             o.addProperty('App::PropertyPythonObject', 'Blob')\n\
             d.saveAs({property:?})\n",
            feature = dir.join("feature.FCStd").display().to_string(),
            property = dir.join("property.FCStd").display().to_string(),
        ),
    )
    .unwrap();
    let out = Command::new("freecadcmd")
        .arg(&script)
        .env("HOME", scratch)
        .output()
        .unwrap();
    assert!(
        dir.join("feature.FCStd").exists() && dir.join("property.FCStd").exists(),
        "freecadcmd made no documents: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The bottom of the document area with its tab row, above the status bar: a document that
/// opens adds a tab and a view there.
const TAB_ROWS: std::ops::Range<usize> = 600..770;

/// File > Open (Ctrl+O) or File > Import of `path` (in the attempt directory) by typing its
/// name into the file dialog; the screenshot after.
async fn open_through_dialog(driver: &mut Driver, path: &Path, import: bool) -> ActionResponse {
    if import {
        driver.click(20, 28, "open the File menu").await;
        driver.click(138, 262, "File > Import...").await;
    } else {
        driver.key(&["ctrl", "o"]).await;
    }
    driver.wait(800).await;
    // The dialog opens in the attempt directory (a path of its own inside the sandbox).
    let name = path.file_name().unwrap().to_str().unwrap();
    let typed = driver.type_text(name).await;
    save_shot(&typed, "typed", driver.index);
    driver.key(&["return"]).await;
    let after = driver.wait(1500).await;
    save_shot(&after, "after", driver.index);
    after
}

#[tokio::test(flavor = "multi_thread")]
async fn locked_freecad_refuses_or_defuses_every_entry_path() {
    if !xvfb_available() || !freecad_available() {
        return;
    }
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let mut driver = Driver::lease(&broker, "freecad").await;
    let attempt_dir: PathBuf = broker
        .session_dir(&driver.session)
        .join("workspace/attempt");

    // Workbenches that load modules by name (Test Framework), export cell text (Spreadsheet),
    // embed web views (Start, Web) and the rest: View > Workbench offers only the benchmark's
    // (Part Design, Sketcher, Part, TechDraw, <none>: five 23 px rows; unlocked, 23 rows).
    driver.click(97, 28, "open the View menu").await;
    let submenu = driver.click(252, 540, "open View > Workbench").await;
    let white = white_rows(&submenu, 432);
    assert!(
        (60..=170).contains(&white),
        "View > Workbench is {white} px tall: expected five rows"
    );
    driver.key(&["escape"]).await;
    driver.key(&["escape"]).await;
    driver.assert_no_prohibited_window("View > Workbench").await;

    // The Macro menu (Alt+M, then M for Macro recording), the macro chords (Ctrl+F6 execute,
    // F6 debug, F9 breakpoint): nothing opens.
    driver.key(&["alt", "m"]).await;
    driver.type_text("m").await;
    driver.key(&["escape"]).await;
    for chord in [&["ctrl", "f6"][..], &["f6"], &["f9"]] {
        driver.key(chord).await;
    }
    driver.wait(500).await;
    driver
        .assert_no_prohibited_window("Macro menu and chords")
        .await;

    // Tools > Customize... and Tools > Addon manager, where an unlocked FreeCAD lists them.
    for (y, case) in [(266, "Tools > Customize"), (289, "Tools > Addon manager")] {
        driver.click(140, 28, "open the Tools menu").await;
        driver.click(233, y, case).await;
        driver.wait(800).await;
        driver.key(&["escape"]).await;
        driver.assert_no_prohibited_window(case).await;
    }

    // Files the app is offered through File > Open and File > Import: Python and macro files
    // (the macro editor), documents carrying a Python feature or a Python-object property.
    // Each would run `marker` if any of it ran; none opens (the document area is unchanged).
    let marker = attempt_dir.join("ran");
    let payload = format!(
        "open({:?}, 'w').write('ran')\n",
        marker.display().to_string()
    );
    std::fs::write(attempt_dir.join("payload.py"), &payload).unwrap();
    std::fs::write(attempt_dir.join("payload.FCMacro"), &payload).unwrap();
    write_python_documents(&attempt_dir, root.path());
    // Written, not copied: the attempt file's mode (private to the app's uid) stays behind.
    let plain = std::fs::read(attempt_dir.join("attempt.FCStd")).unwrap();
    std::fs::write(attempt_dir.join("plain.FCStd"), plain).unwrap();
    // FreeCAD closes an empty, unmodified active document before it opens a file: a body
    // keeps the attempt open.
    driver.click(73, 255, "Tasks: Create body").await;
    let before = rows(&driver.wait(1000).await, TAB_ROWS);
    // File > Import offers no FCStd filter (0.20 merges projects through the stripped Merge
    // project); the name typed anyway opens nothing either.
    for (file, import) in [
        ("payload.py", false),
        ("payload.FCMacro", false),
        ("feature.FCStd", false),
        ("property.FCStd", false),
        ("payload.py", true),
        ("feature.FCStd", true),
    ] {
        let case = format!(
            "{} {file}",
            if import {
                "File > Import"
            } else {
                "File > Open"
            }
        );
        let shot = open_through_dialog(&mut driver, &attempt_dir.join(file), import).await;
        // A refusal may show a message box: close it.
        let titles = driver.titles().await;
        if titles.len() > 1 {
            println!("{case}: {titles:?}");
            driver.key(&["escape"]).await;
        }
        driver.assert_no_prohibited_window(&case).await;
        assert!(
            rows(&shot, TAB_ROWS) == before,
            "{case}: the document area changed (something opened)"
        );
        assert!(!marker.exists(), "{case}: the payload ran");
    }
    // The control: a plain document through the same path opens (a tab appears), so the
    // observation above can see an opened file.
    let shot = open_through_dialog(&mut driver, &attempt_dir.join("plain.FCStd"), false).await;
    assert!(
        rows(&shot, TAB_ROWS) != before,
        "the plain document did not open: the observation is blind"
    );
    assert!(!marker.exists(), "a payload ran");
    driver.client.release(&driver.session).await.unwrap();
    println!(
        "locked entry paths: {} actions in {} ms",
        driver.index,
        started.elapsed().as_millis()
    );
}

/// The lockdown module replaced by one that only marks the title the handoff waits for: the
/// `freecad` profile as if every in-app layer failed.
fn unlocked_profile() -> String {
    let profile = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../desk-desktop/profiles/freecad.toml"),
    )
    .unwrap();
    let key = "\".local/share/FreeCAD/Mod/DeskLockdown/InitGui.py\" = \"\"\"\n";
    let start = profile.find(key).unwrap() + key.len();
    let end = start + profile[start..].find("\"\"\"").unwrap();
    let ready = "\
def _desk_ready():
    import FreeCAD
    import FreeCADGui
    from PySide2 import QtCore

    def tick():
        document = FreeCAD.ActiveDocument
        window = FreeCADGui.getMainWindow()
        if document is None or window is None or not window.isVisible():
            return
        window.setWindowTitle(\"FreeCAD - %s.FCStd\" % document.Name)
        timer.stop()

    timer = QtCore.QTimer()
    timer.setInterval(250)
    timer.timeout.connect(tick)
    timer.start()
    FreeCADGui.desk_ready = timer


_desk_ready()
";
    let unlocked = format!("{}{ready}{}", &profile[..start], &profile[end..]);
    unlocked.replacen("name = \"freecad\"", "name = \"freecad-unlocked\"", 1)
}

/// `profile` without its rules naming accessibles (the worker's AT-SPI leg off).
fn without_accessible_rules(profile: &str) -> String {
    let blocks: Vec<&str> = profile.split("\n[[window.prohibited]]\n").collect();
    let kept: Vec<&str> = blocks
        .iter()
        .enumerate()
        .filter(|(index, block)| *index == 0 || !block.contains("accessible_"))
        .map(|(_, block)| *block)
        .collect();
    assert!(
        kept.len() < blocks.len(),
        "the profile has accessible rules"
    );
    kept.join("\n[[window.prohibited]]\n")
}

/// The unlocked profile whose ready script also gives the docked Python console the keyboard
/// focus (as any in-app path to it would): the worker's AT-SPI leg alone stands.
fn console_focused_profile() -> String {
    let profile = unlocked_profile().replacen(
        "name = \"freecad-unlocked\"",
        "name = \"freecad-console\"",
        1,
    );
    let focus = concat!(
        "        from PySide2 import QtWidgets\n",
        "        for dock in window.findChildren(QtWidgets.QDockWidget):\n",
        "            if dock.objectName() == \"Python console\":\n",
        "                dock.show()\n",
        "                dock.widget().setFocus()\n",
        "        timer.stop()\n",
    );
    assert!(profile.contains("        timer.stop()\n"));
    profile.replacen("        timer.stop()\n", focus, 1)
}

/// The accessible leg of the worker's check (the docked Python console has no X window): with
/// the lockdown removed and the console docked and focused, typing and a click into it are
/// refused with `destination_prohibited` by the worker, nothing sent, no action index taken, the
/// payload never runs; a click into the 3D view passes, and once the focus left the console,
/// typing does too. Points come from the app's own accessible tree, not from screen positions.
#[tokio::test(flavor = "multi_thread")]
async fn the_worker_refuses_input_into_the_docked_python_console() {
    if !xvfb_available() || !freecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("profiles")).unwrap();
    std::fs::write(
        root.path().join("profiles/freecad-console.toml"),
        console_focused_profile(),
    )
    .unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let mut driver = Driver::lease(&broker, "freecad-console").await;
    let attempt_dir = std::fs::canonicalize(
        broker
            .session_dir(&driver.session)
            .join("workspace/attempt"),
    )
    .unwrap();
    let ran = attempt_dir.join("ran-console");
    let tree = driver
        .client
        .accessibility(&driver.session, Some(400), Some(2))
        .await
        .unwrap()
        .tree;
    let centre_of = |role: &str, name: &str| {
        let node = tree
            .nodes
            .iter()
            .find(|node| {
                node.depth == 2
                    && node.role == role
                    && node.name == name
                    && node.states.iter().any(|state| state == "showing")
            })
            .unwrap_or_else(|| panic!("no showing {role} {name:?}: {:?}", tree.nodes));
        let bounds = node.bounds.unwrap();
        (
            bounds.x + i32::try_from(bounds.width / 2).unwrap(),
            bounds.y + i32::try_from(bounds.height / 2).unwrap(),
        )
    };
    let console = centre_of("frame", "Python console");
    let view = centre_of("layered pane", "");
    let payload = format!("open({:?}, 'w').write('ran')", ran.display().to_string());
    let index = driver.index;
    let mut refusals = Vec::new();
    for attempt in [
        json!({"type": "type", "text": payload, "intent": "type into the focused console"}),
        json!({"type": "key", "keys": ["return"], "intent": "run it"}),
        json!({"type": "click", "x": console.0, "y": console.1, "intent": "click the console"}),
    ] {
        let what = attempt.clone();
        let started = Instant::now();
        match driver.send(attempt).await {
            Err(ClientError::Api(body)) => {
                assert_eq!(
                    body.code,
                    ErrorCode::DestinationProhibited,
                    "{what}: {body:?}"
                );
                // The answer carries the worker's reason: the console was found by name.
                assert!(
                    body.message.contains("the app's docked Python console"),
                    "{what}: {body:?}"
                );
                refusals.push(started.elapsed().as_millis());
            }
            other => panic!("{what} must be refused with destination_prohibited: {other:?}"),
        }
    }
    assert_eq!(driver.index, index, "refused input takes no action index");
    // Each refusal named the rule in the worker's log too: the console was found, not refused
    // as unverified.
    let log =
        std::fs::read_to_string(broker.session_dir(&driver.session).join("worker.log")).unwrap();
    let named = log
        .lines()
        .filter(|line| line.contains("the app's docked Python console"))
        .count();
    assert_eq!(named, 3, "worker log: {log}");
    assert!(!log.contains("refused unverified"), "worker log: {log}");
    // The 3D view is not prohibited: a click there passes and takes the focus.
    driver
        .click(
            u32::try_from(view.0).unwrap(),
            u32::try_from(view.1).unwrap(),
            "click into the 3D view",
        )
        .await;
    driver.type_text("v").await;
    driver.wait(500).await;
    // After a settled action the worker decides from the view it scanned then, when nothing
    // changed since: a click on the console is refused that way too, and quickly.
    driver
        .click(
            u32::try_from(view.0).unwrap(),
            u32::try_from(view.1).unwrap(),
            "click into the 3D view again",
        )
        .await;
    let started = Instant::now();
    let click = json!({"type": "click", "x": console.0, "y": console.1, "intent": "click it"});
    match driver.send(click).await {
        Err(ClientError::Api(body)) => {
            assert_eq!(body.code, ErrorCode::DestinationProhibited, "{body:?}");
        }
        other => panic!("a click on the console must be refused: {other:?}"),
    }
    let settled_ms = started.elapsed().as_millis();
    let log =
        std::fs::read_to_string(broker.session_dir(&driver.session).join("worker.log")).unwrap();
    let last = log
        .lines()
        .rfind(|line| line.contains("the app's docked Python console"))
        .unwrap_or_else(|| panic!("worker log: {log}"));
    assert!(last.contains("checked settled"), "{last}");
    // Semantic steps check the same rule by the target's ancestry: the console's own frame and
    // an editable object inside it are refused, nothing sent; an object outside it is not
    // (whatever the step's own checks then say of it).
    let tree = driver
        .client
        .accessibility(&driver.session, Some(3000), Some(16))
        .await
        .unwrap()
        .tree;
    let frame = tree
        .nodes
        .iter()
        .find(|node| node.depth == 2 && node.role == "frame" && node.name == "Python console")
        .unwrap_or_else(|| panic!("no console frame: {:?}", tree.nodes));
    let inside = |node: &desk_contract::a11y::AxNode| {
        let mut parent = node.parent;
        while let Some(index) = parent {
            if index == frame.index {
                return true;
            }
            parent = tree.nodes[index as usize].parent;
        }
        false
    };
    let text = tree
        .nodes
        .iter()
        .find(|node| node.editable && inside(node))
        .unwrap_or_else(|| panic!("no editable object in the console: {:?}", tree.nodes));
    let outside = tree
        .nodes
        .iter()
        .find(|node| node.depth == 2 && node.role == "layered pane")
        .unwrap();
    let index = driver.index;
    let program = |id: &str, index: u64, step: &Value| ProgramRequest {
        request_id: id.to_string(),
        expected_action_index: index,
        control: None,
        screenshot_id: None,
        steps: serde_json::from_value(json!([step])).unwrap(),
    };
    for (id, step) in ["ax-in-1", "ax-in-2"].into_iter().zip([
        json!({"type": "ax_set_text", "observation_id": tree.observation_id, "node": text.index,
               "text": payload, "mode": "set", "intent": "set the console's text"}),
        json!({"type": "ax_press", "observation_id": tree.observation_id, "node": frame.index,
               "intent": "press the console"}),
    ]) {
        let what = step.clone();
        let request = program(id, index, &step);
        match driver.client.program(&driver.session, &request).await {
            Err(ClientError::Api(body)) => {
                assert_eq!(
                    body.code,
                    ErrorCode::DestinationProhibited,
                    "{what}: {body:?}"
                );
            }
            other => panic!("{what} must be refused with destination_prohibited: {other:?}"),
        }
    }
    assert_eq!(driver.index, index, "refused steps take no action index");
    let outside_step = json!({"type": "ax_press", "observation_id": tree.observation_id,
                              "node": outside.index, "intent": "press the 3D view"});
    let request = program("ax-out", index, &outside_step);
    let outside_result = driver.client.program(&driver.session, &request).await;
    match &outside_result {
        Err(ClientError::Api(body)) => {
            assert_ne!(body.code, ErrorCode::DestinationProhibited, "{body:?}")
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => driver.index += 1,
    }
    let log =
        std::fs::read_to_string(broker.session_dir(&driver.session).join("worker.log")).unwrap();
    let semantic = log
        .lines()
        .filter(|line| line.contains("lies in the app's docked Python console"))
        .count();
    assert_eq!(semantic, 2, "worker log: {log}");
    driver.wait(500).await;
    assert!(!ran.exists(), "the payload ran: input reached the console");
    println!(
        "docked console: refused in {refusals:?} ms (live), {settled_ms} ms (settled view); \
         3D view click and typing passed; ax steps into it refused, outside: {:?}",
        outside_result.map(|response| response.receipt.submitted)
    );
    driver.client.release(&driver.session).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_lockdown_the_worker_alone_refuses_input_into_the_macro_dialog() {
    if !xvfb_available() || !freecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // The broker reads its profiles when it starts.
    std::fs::create_dir_all(root.path().join("profiles")).unwrap();
    std::fs::write(
        root.path().join("profiles/freecad-unlocked.toml"),
        unlocked_profile(),
    )
    .unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let mut driver = Driver::lease(&broker, "freecad-unlocked").await;
    // Macro > Macros... opens: the inner layer is gone.
    driver.click(188, 28, "open the Macro menu").await;
    driver.click(327, 95, "Macro > Macros...").await;
    driver.wait(1000).await;
    let windows = driver
        .client
        .windows(&driver.session)
        .await
        .unwrap()
        .windows;
    let dialog = windows
        .iter()
        .find(|window| window.title == "Execute macro")
        .unwrap_or_else(|| panic!("Macro > Macros... opened no dialog: {windows:?}"));
    let centre = (
        dialog.bounds.x + i32::try_from(dialog.bounds.width / 2).unwrap(),
        dialog.bounds.y + i32::try_from(dialog.bounds.height / 2).unwrap(),
    );
    let index = driver.index;
    let attempts = [
        json!({"type": "click", "x": centre.0, "y": centre.1, "intent": "click in the dialog"}),
        json!({"type": "type", "text": "payload", "intent": "type a macro name"}),
        json!({"type": "key", "keys": ["return"], "intent": "run it"}),
    ];
    for attempt in attempts {
        let what = attempt.clone();
        match driver.send(attempt).await {
            Err(ClientError::Api(body)) => {
                assert_eq!(
                    body.code,
                    ErrorCode::DestinationProhibited,
                    "{what}: {body:?}"
                );
            }
            other => panic!("{what} must be refused with destination_prohibited: {other:?}"),
        }
    }
    assert_eq!(driver.index, index, "refused input takes no action index");
    let titles = driver.titles().await;
    assert!(
        titles.iter().any(|title| title == "Execute macro"),
        "the dialog is untouched: {titles:?}"
    );
    driver.client.release(&driver.session).await.unwrap();
}

/// Expressions (a property's binding, typed after `=` in any field) and spreadsheet cells go
/// through FreeCAD 0.20's expression engine, the same in the GUI and in the headless
/// `freecadcmd` used here. Each attempt to reach Python or write a file is refused by the
/// engine itself (no call syntax, no function that runs code or touches files; attribute
/// access stops at properties): it fails to parse, names an unknown function or fails to
/// evaluate, and no marker file appears; the controls (a volume, a cell formula) evaluate.
/// Measured: a cell may hold a Python object an attribute path reaches (`Box.Shape.exportStep`
/// evaluates to the bound method) but nothing can call it: call syntax does not parse.
const EXPRESSIONS: &str = r#"
import json, os, FreeCAD
scratch = os.environ["DESK_SCRATCH"]
marker = lambda name: "<<" + os.path.join(scratch, name) + ">>"
d = FreeCAD.newDocument("e")
box = d.addObject("Part::Box", "Box")
probe = d.addObject("Part::Box", "Probe")
sheet = d.addObject("Spreadsheet::Sheet", "Sheet")
d.recompute()
attempts = [
    "__import__(<<os>>).system(<<touch " + scratch + "/ran>>)",
    "eval(<<open('" + scratch + "/ran', 'w')>>)",
    "exec(<<import os>>)",
    "open(" + marker("opened") + ", <<w>>)",
    "Box.Shape.exportStep(" + marker("shape.step") + ")",
    "Box.Shape.exportStep",
    "Box.Shape.__class__",
    "Box.Document.saveAs(" + marker("saved.FCStd") + ")",
    "Box.Document.FileName",
    "App.ActiveDocument.Box",
    "FreeCAD.Console",
    "create(<<os>>, <<system>>)",
    "Sheet.exportFile(" + marker("cells.csv") + ")",
]
out = {"property": {}, "cell": {}}
for expression in attempts:
    try:
        probe.setExpression("Length", expression)
        d.recompute()
        said = "invalid" if "Invalid" in probe.State else "value %s" % probe.Length.Value
    except Exception as error:
        detail = error.args[0] if error.args else ""
        said = "refused: %s" % (detail.get("sErrMsg") if isinstance(detail, dict) else detail)
    out["property"][expression] = said
    probe.setExpression("Length", None)
    d.recompute()
for row, expression in enumerate(attempts, start=1):
    sheet.set("A%d" % row, "=" + expression)
d.recompute()
for row, expression in enumerate(attempts, start=1):
    value = sheet.get("A%d" % row)
    out["cell"][expression] = "text" if isinstance(value, str) else "value %s" % value
probe.setExpression("Length", "Box.Shape.Volume / 100 mm^2")
sheet.set("B1", "=Box.Length * 2")
d.recompute()
out["control property"] = probe.Length.Value
out["control cell"] = float(sheet.get("B1"))
out["files"] = sorted(n for n in os.listdir(scratch) if not n.startswith("."))
print("RESULT " + json.dumps(out))
"#;

#[test]
fn expressions_and_cells_reach_no_python_and_write_no_file() {
    if !freecad_available() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("expressions.py");
    std::fs::write(&script, EXPRESSIONS).unwrap();
    let output = Command::new("freecadcmd")
        .arg(&script)
        .env("HOME", scratch.path())
        .env("DESK_SCRATCH", scratch.path())
        .output()
        .unwrap();
    // FreeCAD's console may print to either stream.
    let printed = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let line = printed
        .lines()
        // Its progress output may share the line.
        .find_map(|line| line.split_once("RESULT ").map(|(_, result)| result))
        .unwrap_or_else(|| panic!("no result: {printed}"));
    let out: Value = serde_json::from_str(line).unwrap();
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
    // The engine evaluates (the controls): a refusal is the payload's, not a broken probe.
    let volume = out["control property"].as_f64().unwrap();
    assert!((volume - 10.0).abs() < 1e-6, "{out}");
    assert_eq!(out["control cell"], json!(20.0), "{out}");
    for (expression, said) in out["property"].as_object().unwrap() {
        let said = said.as_str().unwrap();
        assert!(
            said == "invalid" || said.starts_with("refused"),
            "property expression {expression}: {said}"
        );
    }
    for (expression, said) in out["cell"].as_object().unwrap() {
        // A cell whose expression fails keeps its text: every call does.
        if expression.contains('(') {
            assert_eq!(said, "text", "cell ={expression}");
        }
    }
    assert_eq!(out["files"], json!([]), "a payload wrote a file: {out}");
}

/// The report view's command line, with the lockdown removed (the inner layer's hiding of the
/// report view and the Python console gone): FreeCAD 0.20's report view is read-only output
/// with no command line, so Python typed into it with Return runs nothing. The control is the
/// Python console docked beside it, where the same typing runs: this test's profile also drops
/// the accessible rules, since with them the worker refuses that input itself
/// (`the_worker_refuses_input_into_the_docked_python_console`).
#[tokio::test(flavor = "multi_thread")]
async fn the_report_view_has_no_command_line() {
    if !xvfb_available() || !freecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("profiles")).unwrap();
    std::fs::write(
        root.path().join("profiles/freecad-unlocked.toml"),
        without_accessible_rules(&unlocked_profile()),
    )
    .unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let mut driver = Driver::lease(&broker, "freecad-unlocked").await;
    // The attempt directory as the sandbox shows it (the same path as the host's workspace).
    let attempt_dir = std::fs::canonicalize(
        broker
            .session_dir(&driver.session)
            .join("workspace/attempt"),
    )
    .unwrap();
    let payload = |name: &str| {
        format!(
            "open({:?}, 'w').write('ran')",
            attempt_dir.join(name).display().to_string()
        )
    };
    // View > Panels > Report view: it docks left of the Python console (bottom, y 580-770).
    driver.click(97, 28, "open the View menu").await;
    driver.click(126, 587, "open View > Panels").await;
    driver.click(489, 587, "Panels > Report view").await;
    driver.wait(800).await;

    // The control: typed into the docked console, the payload runs.
    driver
        .click(700, 740, "click into the Python console")
        .await;
    driver.type_text(&payload("ran-console")).await;
    driver.key(&["return"]).await;
    driver.wait(1000).await;
    assert!(
        attempt_dir.join("ran-console").exists(),
        "the control did not run: the observation is blind"
    );

    // The console hidden (View > Panels > Python console), the report view fills the dock.
    driver.click(97, 28, "open the View menu").await;
    driver.click(126, 587, "open View > Panels").await;
    driver.click(499, 656, "Panels > Python console").await;
    driver.wait(800).await;
    let titles = driver.titles().await;
    driver.click(640, 700, "click into the report view").await;
    let before = rows(&driver.wait(300).await, 580..770);
    driver.type_text(&payload("ran-report")).await;
    driver.key(&["return"]).await;
    let after = driver.wait(1000).await;
    save_shot(&after, "report-view", driver.index);
    assert!(
        !attempt_dir.join("ran-report").exists(),
        "Python typed into the report view ran"
    );
    assert!(
        rows(&after, 580..770) == before,
        "the report view took the typed text: it has an input line"
    );
    println!("report view: windows {titles:?}, nothing ran, nothing typed appeared");
    driver.client.release(&driver.session).await.unwrap();
}
