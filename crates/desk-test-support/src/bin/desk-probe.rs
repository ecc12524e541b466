//! `desk-probe --display :N --out FILE [--title T] [--class C]`: the probe window as a process,
//! for manual checks and tests that want a separate pid.

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
