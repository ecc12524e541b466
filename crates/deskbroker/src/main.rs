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
mod chown;
mod cli;
mod demo;
mod drop_ids;
mod dxf_check;
mod evidence;
mod load;
mod local;
mod models;
mod observer;
mod own_uid;
mod paths;
mod perf;
mod policy_cmd;
mod session;
mod validators;
mod watchdog;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Logs on stderr: `--log` (or `DESKBROKER_LOG`) when given, else `RUST_LOG`, else
/// `default`; ANSI colours only when stderr is a terminal and `NO_COLOR` is unset. Each line is
/// written with a run's progress bar hidden (`desk_harness::progress::suspend`), so the two
/// never overwrite each other.
fn init_logging(explicit: Option<&str>, default: &str) {
    let filter = match explicit {
        Some(filter) => EnvFilter::new(filter),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default)),
    };
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    // A log destination that cannot be written (disk full, file size limit) must cost log
    // lines, not requests: tracing-subscriber would otherwise report each failed write with
    // `eprintln!`, which panics when stderr itself fails.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(|| LogWriter)
        .log_internal_errors(false)
        .init();
}

/// stderr, below any progress bar.
struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        desk_harness::progress::suspend(|| std::io::Write::write(&mut std::io::stderr(), buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::Write::flush(&mut std::io::stderr())
    }
}

fn main() -> ExitCode {
    // The broker's reading child of workspace files (desk-broker's `artifact/read.rs`): before
    // clap, logging or a runtime, as the session's app uid with an empty environment.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|command| command == desk_broker::WORKSPACE_READ_COMMAND)
    {
        return desk_broker::workspace_read_child(args.get(2..).unwrap_or_default());
    }
    let cli = cli::Cli::parse();
    // A benchmark's output is its progress and its summary: its logs are quiet unless asked.
    let default_filter = match cli.command {
        cli::Command::Bench(_) => "warn",
        _ => "info",
    };
    init_logging(cli.log.as_deref(), default_filter);
    let result = match cli.command {
        // Neither needs a runtime: the watchdog polls, the kill switch acts on files.
        cli::Command::Watchdog(args) => watchdog::watchdog(args),
        cli::Command::Kill(args) => watchdog::kill(args),
        cli::Command::Readback(args) => watchdog::readback(args),
        cli::Command::Observer(args) => observer::observer(args),
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
            cli::Command::Serve(args) => local::serve(*args).await,
            cli::Command::Session(command) => session::run(command).await,
            cli::Command::Demo(args) => demo::run(args).await,
            cli::Command::Bench(command) => bench::run(command).await,
            cli::Command::Perf(args) => perf::run(args).await,
            cli::Command::Certs(command) => certs::run(command).await,
            cli::Command::Evidence(command) => evidence::run(command).await,
            cli::Command::Load(args) => load::run(args).await,
            cli::Command::Policy(command) => policy_cmd::run(command).await,
            cli::Command::Watchdog(_)
            | cli::Command::Kill(_)
            | cli::Command::Readback(_)
            | cli::Command::Observer(_) => Ok(()),
        }
    })
}
