//! Records the git commit the binary is built from as `DESKBROKER_COMMIT` (`unknown` outside a
//! git checkout), for the version boundary every benchmark result records.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_owned()).filter(|text| !text.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=DESKBROKER_COMMIT={commit}");
    // Rebuild when HEAD moves: the HEAD file itself and the branch ref it points at.
    for path in ["HEAD", "refs/heads"] {
        if let Some(git_path) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={git_path}");
        }
    }
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(ref_path) = git(&["rev-parse", "--git-path", &head_ref])
    {
        println!("cargo:rerun-if-changed={ref_path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
