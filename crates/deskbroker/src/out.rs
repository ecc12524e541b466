//! The binary's standard output. Every command prints through [`outln!`]/[`out!`], which turn a
//! failed write into an error instead of the panic of `println!`: a reader that closes the pipe
//! early (`deskbroker bench score … | head`) ends the command quietly with status 0, and any
//! other write failure (disk full behind a redirect) is an ordinary `error:` exit.

use std::io::Write as _;

/// Standard output was closed by its reader; `main` exits quietly with success.
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes `args` to stdout and flushes.
pub(crate) fn print(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(error) => Err(anyhow::Error::new(error).context("failed to write to standard output")),
    }
}

/// `println!` that returns the write error from the enclosing function.
macro_rules! outln {
    () => {
        $crate::out::print(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::out::print(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `print!` that returns the write error from the enclosing function.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::print(format_args!($($arg)*))?
    };
}
