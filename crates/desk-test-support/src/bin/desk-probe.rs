//! `desk-probe --display :N --out FILE [--title T] [--class C] [--max-size WxH]
//! [--repaint-ms N] [--paint-after-press-ms N]`: the probe window as a process, for manual
//! checks and tests that want a separate pid (`--max-size`: a window that cannot cover the work
//! area; `--repaint-ms`: a screen that never settles; `--paint-after-press-ms`: a repaint on a
//! timer after each press).

use std::path::PathBuf;

use desk_test_support::probe::{ProbeOptions, run};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut display = std::env::var("DISPLAY").unwrap_or_default();
    let mut out = PathBuf::from("probe.ndjson");
    let mut options = ProbeOptions::default();
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--display" => display = value,
            "--out" => out = PathBuf::from(value),
            "--title" => options.title = value,
            "--class" => options.class = value,
            "--max-size" => {
                let parsed = value
                    .split_once('x')
                    .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
                let Some(size) = parsed else {
                    eprintln!("--max-size takes WxH, got {value:?}");
                    std::process::exit(2);
                };
                options.max_size = Some(size);
            }
            "--repaint-after-press" => match value.as_str() {
                "yes" => options.repaint_after_press = true,
                "no" => options.repaint_after_press = false,
                _ => {
                    eprintln!("--repaint-after-press takes yes or no, got {value:?}");
                    std::process::exit(2);
                }
            },
            "--paint-after-press-ms" => match value.parse() {
                Ok(delay) => options.paint_after_press_ms = Some(delay),
                Err(_) => {
                    eprintln!("--paint-after-press-ms takes milliseconds, got {value:?}");
                    std::process::exit(2);
                }
            },
            "--compute-after-press-ms" => match value.parse() {
                Ok(ms) => options.compute_after_press_ms = Some(ms),
                Err(_) => {
                    eprintln!("--compute-after-press-ms takes milliseconds, got {value:?}");
                    std::process::exit(2);
                }
            },
            "--repaint-ms" => match value.parse() {
                Ok(interval) => options.repaint_ms = Some(interval),
                Err(_) => {
                    eprintln!("--repaint-ms takes milliseconds, got {value:?}");
                    std::process::exit(2);
                }
            },
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    if let Err(error) = run(&display, &out, &options) {
        eprintln!("desk-probe: {error}");
        std::process::exit(1);
    }
}
