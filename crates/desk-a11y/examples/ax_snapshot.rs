//! Measures snapshots of a running app's accessibility tree: `DBUS_SESSION_BUS_ADDRESS=… cargo
//! run -p desk-a11y --example ax_snapshot -- PID [ROUNDS]`. Prints nodes, truncation and the
//! walk's time per round, and the roles found.
#![allow(clippy::print_stdout)]

use desk_a11y::Accessibility;
use desk_contract::a11y::AxLimits;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let pid: u32 = args
        .next()
        .ok_or("usage: ax_snapshot PID [ROUNDS]")?
        .parse()?;
    let rounds: u32 = args.next().map(|r| r.parse()).transpose()?.unwrap_or(5);
    let mut a11y = Accessibility::new()?;
    let limits = AxLimits::new(None, None)?;
    let mut times = Vec::new();
    for round in 0..rounds {
        let started = std::time::Instant::now();
        let tree = a11y.snapshot(pid, limits, None)?;
        let wall = started.elapsed().as_millis();
        println!(
            "round {round}: {} nodes, truncated {}, walk {} ms, call {wall} ms",
            tree.nodes.len(),
            tree.truncated,
            tree.elapsed_ms
        );
        times.push(tree.elapsed_ms);
        if round + 1 == rounds {
            let mut roles = std::collections::BTreeMap::new();
            for node in &tree.nodes {
                *roles.entry(node.role.clone()).or_insert(0u32) += 1;
            }
            println!("roles: {roles:?}");
            for node in tree.nodes.iter().filter(|n| n.depth <= 1) {
                println!("{node:?}");
            }
        }
    }
    times.sort_unstable();
    println!("median walk {} ms", times[times.len() / 2]);
    Ok(())
}
