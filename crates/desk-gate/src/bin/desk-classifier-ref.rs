//! `desk-classifier-ref --listen 127.0.0.1:PORT [--table FILE]`: the local reference classifier
//! (desk-gate's `ReferenceClassifier`) on a loopback port. Prints its model digest (what a
//! policy's `screenshot_gate.classifier.model_sha256` pins) and serves until killed. The table
//! is a JSON list of `{"phrase", "score_permille"}`; without `--table`, the built-in one.

use std::net::TcpListener;
use std::process::ExitCode;

use desk_gate::{ReferenceClassifier, ScoredPhrase};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut listen = None;
    let mut table = None;
    let mut at = 0;
    while at < args.len() {
        match (args[at].as_str(), args.get(at + 1)) {
            ("--listen", Some(value)) => listen = Some(value.clone()),
            ("--table", Some(value)) => table = Some(value.clone()),
            _ => {
                eprintln!("usage: desk-classifier-ref --listen 127.0.0.1:PORT [--table FILE]");
                return ExitCode::from(2);
            }
        }
        at += 2;
    }
    let Some(listen) = listen else {
        eprintln!("usage: desk-classifier-ref --listen 127.0.0.1:PORT [--table FILE]");
        return ExitCode::from(2);
    };
    let classifier = match table {
        None => ReferenceClassifier::builtin(),
        Some(path) => {
            let parsed = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Vec<ScoredPhrase>>(&bytes).ok())
                .and_then(ReferenceClassifier::new);
            match parsed {
                Some(classifier) => classifier,
                None => {
                    eprintln!("{path}: not a table of phrases with scores 0..=1000");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let listener = match TcpListener::bind(&listen) {
        Ok(listener)
            if listener
                .local_addr()
                .is_ok_and(|addr| addr.ip().is_loopback()) =>
        {
            listener
        }
        Ok(_) => {
            eprintln!("{listen}: listen on a loopback address");
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("{listen}: {error}");
            return ExitCode::FAILURE;
        }
    };
    #[allow(clippy::print_stdout)]
    {
        println!("model_sha256 {}", classifier.model_sha256());
    }
    match classifier.serve(listener) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}
