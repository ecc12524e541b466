//! Prints every module cycle of the workspace with the edges that make it one (`from -> to`):
//! what to read when breaking a cycle listed in `cycles.allow`.
//!
//!     cargo run -q -p desk-tidy --example cycles [TARGET]
//!
//! With TARGET (a crate target's name, such as `desk-cad`), only that target's cycles.

use std::path::Path;
use std::process::ExitCode;

#[allow(clippy::print_stdout, clippy::print_stderr)] // a command-line tool: its output is the point
fn main() -> ExitCode {
    let only = std::env::args().nth(1);
    // The workspace around the current directory (not the one this binary was built in: a
    // shared target directory may hold a build from another checkout).
    let Some(workspace) = std::env::current_dir().ok().and_then(|dir| {
        dir.ancestors()
            .find(|dir| dir.join("crates/desk-tidy/cycles.allow").is_file())
            .map(Path::to_path_buf)
    }) else {
        eprintln!("cycles: run this inside the deskbroker workspace");
        return ExitCode::FAILURE;
    };
    let cycles = match desk_tidy::module_cycles(&workspace) {
        Ok(cycles) => cycles,
        Err(error) => {
            eprintln!("cycles: {error}");
            return ExitCode::FAILURE;
        }
    };
    for (cycle, edges) in cycles {
        if only.as_deref().is_some_and(|target| target != cycle.target) {
            continue;
        }
        println!("{cycle}");
        for edge in edges {
            println!("    {edge}");
        }
    }
    ExitCode::SUCCESS
}
