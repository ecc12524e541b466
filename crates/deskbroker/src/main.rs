//! The `deskbroker` binary: thin wiring of the library crates behind clap subcommands.
//!
//! `serve` runs the broker, `session …` calls it, `demo` is the main job, `perf` measures. The
//! per-session desktop worker is a program of its own, `deskbroker-worker` (`src/bin/`), found
//! next to this one: the sandbox never sees this binary.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

#[macro_use]
mod out;

mod bench;
mod certs;
mod cli;
mod demo;
mod dxf_check;
mod evidence;
mod load;
mod local;
mod models;
mod paths;
mod perf;
mod policy_cmd;
mod session;
mod watchdog;

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn init_logging(filter: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter));
    // A log destination that cannot be written (disk full, file size limit) must cost log
    // lines, not requests: tracing-subscriber would otherwise report each failed write with
    // `eprintln!`, which panics when stderr itself fails.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .init();
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(&cli.log);
    let result = match cli.command {
        // Neither needs a runtime: the watchdog polls, the kill switch acts on files.
        cli::Command::Watchdog(args) => watchdog::watchdog(args),
        cli::Command::Kill(args) => watchdog::kill(args),
        command => run_async(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`… | head`): nothing left to say, not a failure.
        Err(error) if error.downcast_ref::<out::StdoutClosed>().is_some() => ExitCode::SUCCESS,
        // A refused policy: its reasons are printed already.
        Err(error) if error.downcast_ref::<policy_cmd::PolicyRefused>().is_some() => {
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_async(command: cli::Command) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match command {
            cli::Command::Serve(args) => local::serve(args).await,
            cli::Command::Session(command) => session::run(command).await,
            cli::Command::Demo(args) => demo::run(args).await,
            cli::Command::Bench(command) => bench::run(command).await,
            cli::Command::Perf(args) => perf::run(args).await,
            cli::Command::Certs(command) => certs::run(command).await,
            cli::Command::Evidence(command) => evidence::run(command).await,
            cli::Command::Load(args) => load::run(args).await,
            cli::Command::Policy(command) => policy_cmd::run(command).await,
            cli::Command::Watchdog(_) | cli::Command::Kill(_) => Ok(()),
        }
    })
}
