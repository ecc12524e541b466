//! The flags of `deskbroker load`, apart from the run (`load.rs`) so that the report names them
//! without naming the run, and the `--desktops` mix they parse.

use std::path::PathBuf;

use clap::Args;

use crate::cli::BrokerArgs;

/// `deskbroker load`.
#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// Concurrent sessions (the broker admits at most 8 unreleased sessions).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=8))]
    pub(crate) sessions: u16,
    /// Actions per session.
    #[arg(long, default_value_t = 300)]
    pub(crate) actions: usize,
    /// The `desk-probe` binary [default: next to this executable, or in the parent directory].
    #[arg(long)]
    pub(crate) probe: Option<PathBuf>,
    /// Instead of the action mix: measure the watchdog alone. A `deskbroker serve` child runs
    /// `--sessions` probe sessions with a 9 s task limit and is SIGSTOPped once all are handed
    /// off; reports how long after its limit each session was stopped (target: within 1 s).
    #[arg(long)]
    pub(crate) frozen_kill: bool,
    /// CAD desktops at once instead of probe windows, as PROFILE=COUNT pairs, e.g.
    /// `--desktops librecad=16,freecad=4` (profiles: librecad, freecad). Every desktop is
    /// leased and reset at once; then each runs a short script that means something in its app
    /// (LibreCAD: a 100x50 rectangle and a circle typed at its command line, a line drawn with
    /// the mouse; FreeCAD: a 40x30x20 box from Part's primitives dialog), checkpoints, and its
    /// saved DXF or FCStd is checked by desk-cad. Reports PSS per desktop (all its processes)
    /// per profile, actions/s, p50/p95 per operation, the time to reset all, and leftovers.
    /// Any failure fails the run, a lease the broker refused included (never fewer desktops).
    #[arg(long, value_name = "PROFILE=N,...", value_parser = parse_mix,
          conflicts_with_all = ["sessions", "actions", "probe", "frozen_kill"])]
    pub(crate) desktops: Option<DesktopMix>,
    /// With --desktops: most unreleased sessions the broker admits [default: all the desktops
    /// asked for].
    #[arg(long, requires = "desktops", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) max_sessions: Option<u32>,
    /// With --desktops: the broker's memory budget in MiB. Each desktop counts its profile's
    /// memory limit (librecad 1024, freecad 2048), so 16 LibreCAD and 4 FreeCAD need 24576.
    /// [default: this host's memory (MemTotal, or the cgroup's limit when lower) less 512 MiB
    /// for the broker; the run prints what it needs against it]
    #[arg(long, requires = "desktops", value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(64..=(16 << 20)))]
    pub(crate) memory_budget_mib: Option<u64>,
    /// Where to write the JSON report.
    #[arg(long, default_value = "load-report.json")]
    pub(crate) json: PathBuf,
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,
}

/// `--desktops`: how many desktops of each profile, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DesktopMix(pub(crate) Vec<(String, usize)>);

impl DesktopMix {
    /// All the desktops asked for.
    pub(crate) fn total(&self) -> usize {
        self.0.iter().map(|(_, count)| count).sum()
    }
}

/// The profiles `--desktops` has a script and an outcome check for.
pub(crate) const CAD_PROFILES: [&str; 2] = ["librecad", "freecad"];

/// Parses `librecad=16,freecad=4`: known profiles, each once, counts 1..=64.
pub(crate) fn parse_mix(text: &str) -> Result<DesktopMix, String> {
    let mut mix: Vec<(String, usize)> = Vec::new();
    for pair in text.split(',') {
        let (name, count) = pair
            .split_once('=')
            .ok_or_else(|| format!("expected PROFILE=COUNT, got {pair:?}"))?;
        if !CAD_PROFILES.contains(&name) {
            return Err(format!(
                "no load script for profile {name:?}; known: {}",
                CAD_PROFILES.join(", ")
            ));
        }
        if mix.iter().any(|(seen, _)| seen == name) {
            return Err(format!("profile {name} is named twice"));
        }
        let count: usize = count
            .parse()
            .map_err(|_| format!("expected a count for {name}, got {count:?}"))?;
        if !(1..=64).contains(&count) {
            return Err(format!("{name}={count}: a count is 1..=64"));
        }
        mix.push((name.to_string(), count));
    }
    Ok(DesktopMix(mix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_parse_and_bad_ones_are_refused() {
        let mix = parse_mix("librecad=16,freecad=4").expect("the issue's mix");
        assert_eq!(
            mix.0,
            vec![("librecad".to_string(), 16), ("freecad".to_string(), 4)]
        );
        assert_eq!(mix.total(), 20);
        for bad in [
            "",
            "librecad",
            "librecad=0",
            "librecad=65",
            "librecad=x",
            "librecad=1,librecad=2",
            "generic=1",
            "librecad=1,",
        ] {
            assert!(parse_mix(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
