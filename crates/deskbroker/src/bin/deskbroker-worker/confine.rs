//! `deskbroker-worker confine --exec PATH... -- PROGRAM ARGS...`: runs PROGRAM (the app's launch
//! chain: `setpriv`, `nsenter`, `env`, then the app) in a Landlock domain where `execve` reaches
//! only the listed files, so the app cannot start a program the profile does not allow, not even
//! for an instant too short for the census to see (a shell, an interpreter, a compiler that the
//! sandbox's view might still show). The kernel enforces it for the app's whole process tree
//! and nothing inside can lift it. Everything else (reads, writes) stays the sandbox's business:
//! only the execute right is handled.
//!
//! The launcher (`desk-desktop`'s `sandbox/confine.rs`) lists each allowed program with its ELF
//! interpreter, as host paths reaching the same files the sandbox shows. A kernel without
//! Landlock, or one that cannot enforce it fully, is refused (status 2): the app is never
//! started unconfined.

use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use landlock::{
    AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
};

/// Runs `confine ...` (the arguments after `confine`).
pub(crate) fn run(args: &[String]) -> ExitCode {
    let (allowed, argv) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("deskbroker-worker confine: {message}");
            return ExitCode::from(2);
        }
    };
    if let Err(message) = restrict(&allowed) {
        eprintln!("deskbroker-worker confine: {message}");
        return ExitCode::from(2);
    }
    let error = std::process::Command::new(&argv[0]).args(&argv[1..]).exec();
    eprintln!("deskbroker-worker confine: cannot run {}: {error}", argv[0]);
    ExitCode::from(127)
}

/// `--exec PATH` (one or more, absolute) then `--` and the program's argv.
fn parse(args: &[String]) -> Result<(Vec<String>, Vec<String>), String> {
    let Some(split) = args.iter().position(|arg| arg == "--") else {
        return Err("usage: confine --exec PATH... -- PROGRAM ARGS...".to_string());
    };
    let (options, argv) = (&args[..split], &args[split + 1..]);
    if argv.is_empty() {
        return Err("no program after --".to_string());
    }
    let mut allowed = Vec::new();
    let mut options = options.iter();
    while let Some(option) = options.next() {
        match (option.as_str(), options.next()) {
            ("--exec", Some(path)) if path.starts_with('/') => allowed.push(path.clone()),
            ("--exec", _) => return Err("--exec needs an absolute path".to_string()),
            (other, _) => return Err(format!("unknown option {other:?}")),
        }
    }
    if allowed.is_empty() {
        return Err("no --exec path: nothing could run".to_string());
    }
    Ok((allowed, argv.to_vec()))
}

/// Enters a Landlock domain in which only `allowed` may be executed (fully enforced, or an
/// error).
fn restrict(allowed: &[String]) -> Result<(), String> {
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::Execute)
        .and_then(|ruleset| ruleset.create())
        .map_err(|error| format!("cannot create a Landlock ruleset: {error}"))?;
    for path in allowed {
        let file = PathFd::new(path).map_err(|error| format!("cannot open {path}: {error}"))?;
        ruleset = ruleset
            .add_rule(PathBeneath::new(file, AccessFs::Execute))
            .map_err(|error| format!("cannot allow {path}: {error}"))?;
    }
    let status = ruleset
        .restrict_self()
        .map_err(|error| format!("cannot enter the Landlock domain: {error}"))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        other => Err(format!(
            "this kernel does not enforce Landlock's execute right ({other:?}): the app is not \
             started unconfined"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_string()).collect()
    }

    #[test]
    fn arguments_are_checked_before_anything_runs() {
        let ok = parse(&strings(&["--exec", "/a", "--exec", "/b", "--", "/a", "x"]));
        assert_eq!(ok, Ok((strings(&["/a", "/b"]), strings(&["/a", "x"]))));
        for bad in [
            &["--exec", "/a"][..],
            &["--exec", "/a", "--"],
            &["--exec", "rel", "--", "/a"],
            &["--exec", "--", "/a"],
            &["--", "/a"],
            &["--other", "/a", "--", "/a"],
        ] {
            assert!(parse(&strings(bad)).is_err(), "{bad:?}");
        }
    }
}
