//! A whole suite over a fake broker, then its `report.html` rendered in headless Chromium.

use std::path::Path;
use std::process::Command;

use desk_harness::{Agent, AgentError, SuiteConfig, run_suite};

use crate::support::{Scripted, Served, batch, click, done};

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .map(|output| output.status.success())
                .unwrap_or(false)
        })
}

/// Decodes a PNG into RGB(A) rows and counts distinct colors on a coarse grid.
fn distinct_colors(path: &Path) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let channels = info.color_type.samples();
    let mut colors = std::collections::BTreeSet::new();
    for y in (0..info.height).step_by(4) {
        for x in (0..info.width).step_by(4) {
            let at = (y as usize * info.width as usize + x as usize) * channels;
            colors.insert(buffer[at..at + channels.min(3)].to_vec());
        }
    }
    (info.width, info.height, colors.len())
}

#[tokio::test]
async fn the_report_renders_in_headless_chromium() {
    let served = Served::start().await;
    let corpus = served.dir.path().join("corpus");
    let tasks = desk_cad::write_corpus_version(
        desk_cad::CorpusVersion::V1,
        &corpus.join("public"),
        &corpus.join("private"),
    )
    .unwrap();
    let out = served.dir.path().join("out");
    let config = SuiteConfig {
        public_dir: corpus.join("public"),
        gold_dir: corpus.join("private"),
        out_dir: out.clone(),
        broker_version: "0.0.0-test".into(),
        versions: desk_harness::SoftwareVersions::default(),
        attempt_id: "report".into(),
        profile: None,
        max_actions: None,
        wall_time: None,
        require_sandbox: false,
    };
    let mut factory = |_: &desk_cad::Task| -> Result<Box<dyn Agent>, AgentError> {
        let mut agent = Scripted::new(vec![
            batch("c1", vec![click(10, 10), click(20, 20)]),
            batch("c2", vec![click(30, 30), done()]),
        ]);
        agent.said = desk_harness::ModelSaid {
            text: Some("Drawing the <first> line".into()),
            reasoning: Some("The reference shows two lines".into()),
        };
        Ok(Box::new(agent))
    };
    let (summary, records) = run_suite(&served.client(), &tasks[..2], &config, &mut factory)
        .await
        .unwrap();
    assert_eq!(summary.n_rollouts, 2);
    assert_eq!(records[0].actions_used, 4);
    assert!(out.join("summary.json").exists());
    assert!(out.join("rollouts/task-001/rollout.json").exists());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("rollouts/task-001/reference.png"));
    assert!(html.contains("rollouts/task-002/frames/"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network"
    );
    let table = desk_harness::format_table(&summary);
    assert!(table.contains("task-001"), "{table}");
    // Each turn: the frame the model saw with its clicks drawn (ring at the model's point,
    // cross at the injected point), the raw tool call, and every receipt's settle result.
    for (x, y) in [(10, 10), (20, 20), (30, 30)] {
        assert!(
            html.contains(&format!("<circle cx=\"{x}\" cy=\"{y}\"")),
            "ring {x},{y}"
        );
    }
    assert!(html.contains("<path d=\"M"), "an injected-point cross");
    assert!(html.contains("injected at (30, 30)"));
    assert!(html.contains("raw tool call") && html.contains("&quot;click&quot;"));
    assert!(html.contains("settle stable"));
    // What the model wrote beside its calls, escaped.
    assert!(html.contains("The reference shows two lines"));
    assert!(html.contains("Drawing the &lt;first&gt; line"));
    assert!(html.contains("<image href=\"rollouts/task-001/frames/"));

    let Some(browser) = chromium() else {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "chromium not found but DESK_REQUIRE_XVFB=1"
        );
        println!("skipped: chromium not found");
        served.stop().await;
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let shot = out.join("report-screenshot.png");
    let output = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1400,1000")
        .arg(format!("file://{}", out.join("report.html").display()))
        .output()
        .unwrap();
    assert!(
        shot.exists(),
        "chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 20_000,
        "trivially small screenshot"
    );
    let (width, height, n_colors) = distinct_colors(&shot);
    assert_eq!((width, height), (1400, 1000));
    assert!(n_colors > 20, "the page looks blank ({n_colors} colors)");
    if let Ok(keep) = std::env::var("DESK_KEEP_REPORT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    served.stop().await;
}

fn freecad_and_bwrap() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v freecadcmd && command -v bwrap"])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false);
    assert!(
        found || std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
        "freecadcmd or bwrap missing but DESK_REQUIRE_XVFB=1"
    );
    found
}

/// Pixels of a PNG darker than mid-grey.
fn ink(path: &Path) -> usize {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let channels = info.color_type.samples();
    buffer[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| p[..channels.min(3)].iter().all(|c| *c < 128))
        .count()
}

/// A 3D task's section: the judge's renders of both sheets and both parts (real drawings, from
/// the scoring run of the real judge on a gold and the FreeCAD oracle's file for it) under the
/// 3D legend, not the 2D overlay's; the page shot in headless Chromium.
#[tokio::test]
async fn a_3d_task_shows_the_judges_sheet_and_part_renders() {
    if !freecad_and_bwrap() {
        println!("skipped: freecadcmd or bwrap not found");
        return;
    }
    let served = Served::start().await;
    let corpus = served.dir.path().join("corpus");
    let tasks = desk_cad::write_corpus_version(
        desk_cad::CorpusVersion::V1,
        &corpus.join("public"),
        &corpus.join("private"),
    )
    .unwrap();
    let out = served.dir.path().join("out");
    let config = SuiteConfig {
        public_dir: corpus.join("public"),
        gold_dir: corpus.join("private"),
        out_dir: out.clone(),
        broker_version: "0.0.0-test".into(),
        versions: desk_harness::SoftwareVersions::default(),
        attempt_id: "report3d".into(),
        profile: None,
        max_actions: None,
        wall_time: None,
        require_sandbox: false,
    };
    let mut factory = |_: &desk_cad::Task| -> Result<Box<dyn Agent>, AgentError> {
        Ok(Box::new(Scripted::new(vec![batch("c1", vec![done()])])))
    };
    let (mut summary, mut records) =
        run_suite(&served.client(), &tasks[..2], &config, &mut factory)
            .await
            .unwrap();
    // The first rollout (at the top of the page) becomes a 3D task judged by the real judge: task 12's gold (task-034 of
    // corpus v2) against the oracle's FreeCAD file for it.
    let gold_task = desk_cad::generate3d::generate_part(12);
    let gold = served.dir.path().join("gold-12.FCStd");
    desk_cad::part_task::build_part(&gold_task.spec, Some(&gold_task.sheet), &[], &gold).unwrap();
    let candidate = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../desk-cad/tests/fixtures/oracle-task-034.FCStd");
    let record = &mut records[0];
    let dir = out.join("rollouts").join(&record.task_id);
    let started = std::time::Instant::now();
    let (report, pictures) = desk_cad::score3d::score_fcstd_pictured(&gold, &candidate).unwrap();
    record.drawing_type = desk_cad::DrawingType::ThreeD;
    record.score = desk_cad::TaskScore::Part(report);
    desk_harness::rollout::write_judge_pictures(&pictures, &dir, record).unwrap();
    println!("judged, drawn and written in {:?}", started.elapsed());
    summary.rollouts[0].drawing_type = desk_cad::DrawingType::ThreeD;
    desk_harness::report::write_report(&out, &summary, &records).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let id = &records[0].task_id;
    let section = &html[html.find(&format!("<h2 id=\"{id}\"")).unwrap()..];
    let section = &section[..section.find("<details").unwrap()];
    assert!(section.contains("3D legend"), "{section}");
    assert!(
        !section.contains("green matched"),
        "no 2D legend: {section}"
    );
    for (file, caption) in [
        ("gold-sheet.png", "gold sheet (judge)"),
        ("candidate.png", "candidate sheet (judge)"),
        ("gold-part.png", "gold part, isometric (judge)"),
        ("candidate-part.png", "candidate part, isometric (judge)"),
    ] {
        let src = format!("<img src=\"rollouts/{id}/{file}\" alt=\"{caption}\">");
        assert!(section.contains(&src), "{src} in {section}");
        let inked = ink(&dir.join(file));
        assert!(
            inked > 2000,
            "{file}: a drawing, not an empty image ({inked} ink pixels)"
        );
    }
    // The 2D task keeps its 2D pictures and legend.
    let first = &html[html
        .find(&format!("<h2 id=\"{}\"", records[1].task_id))
        .unwrap()..];
    assert!(first[..first.find("<details").unwrap()].contains("green matched"));

    let Some(browser) = chromium() else {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "chromium not found but DESK_REQUIRE_XVFB=1"
        );
        served.stop().await;
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let shot = out.join("report3d-screenshot.png");
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1400,1400")
        .arg(format!("file://{}", out.join("report.html").display()))
        .output()
        .unwrap();
    if let Ok(keep) = std::env::var("DESK_KEEP_REPORT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    let inked = ink(&shot);
    println!("screenshot: {inked} ink pixels");
    assert!(inked > 5000, "the 3D section is drawn");
    served.stop().await;
}
