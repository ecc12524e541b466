//! `bench compare A B`: one static page comparing two runs task by task (status, score and its
//! change, actions, turns, wall time, both candidate renders), linking into each run's own
//! report. Links are relative to the page, so the three folders can move together. Runs under
//! different contract, corpus or scorer versions are compared but flagged at the top.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use super::html::{STYLE, escape};
use crate::error::{HarnessError, read_json, write_file};
use crate::suite::{Summary, SummaryRow};

/// `to` relative to the directory `from` (both made absolute first).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let absolute = |path: &Path| {
        path.canonicalize().unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|dir| dir.join(path))
                .unwrap_or_else(|_| path.to_owned())
        })
    };
    let (from, to) = (absolute(from), absolute(to));
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for part in &to[common..] {
        out.push(part);
    }
    out
}

fn cell(row: Option<&SummaryRow>) -> String {
    match row {
        None => "<td colspan=\"3\">not run</td>".to_owned(),
        Some(row) => format!(
            "<td>{}</td><td class=\"{}\">{:.4}</td><td>{} / {} / {:.1} s</td>",
            row.status.as_str(),
            if row.score >= 0.99 { "good" } else { "bad" },
            row.score,
            row.actions_used,
            row.n_turns,
            row.wall_time_ms as f64 / 1000.0
        ),
    }
}

/// Writes the comparison page of the runs in `a` and `b` to `out` (a file).
pub fn write_compare(a: &Path, b: &Path, out: &Path) -> Result<(), HarnessError> {
    let first: Summary = read_json(&a.join("summary.json"))?;
    let second: Summary = read_json(&b.join("summary.json"))?;
    let page_dir = out
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(page_dir).map_err(|source| HarnessError::Io {
        op: "create directory",
        path: page_dir.to_owned(),
        source,
    })?;
    let (link_a, link_b) = (relative(page_dir, a), relative(page_dir, b));
    let link = |run: &Path, rel: &str| escape(&format!("{}/{rel}", run.display()));
    let mut html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>deskbroker bench comparison</title><style>{STYLE}</style></head><body>\
         <h1>deskbroker bench comparison</h1>"
    );
    let mut mismatched = Vec::new();
    for (what, x, y) in [
        (
            "contract",
            &first.contract_version,
            &second.contract_version,
        ),
        ("corpus", &first.corpus_version, &second.corpus_version),
        ("scorer", &first.scorer_version, &second.scorer_version),
    ] {
        if x != y {
            mismatched.push(format!("{what}: {} vs {}", escape(x), escape(y)));
        }
    }
    if !mismatched.is_empty() {
        let _ = write!(
            html,
            "<p class=\"bad\">versions differ, scores may not be comparable: {}</p>",
            mismatched.join("; ")
        );
    }
    html.push_str(
        "<table><tr><th></th><th>run</th><th>agent</th><th>rollouts</th>\
                   <th>done</th><th>infra_error</th><th>mean score</th><th>wall s</th></tr>",
    );
    for (name, run, summary) in [("A", &link_a, &first), ("B", &link_b, &second)] {
        let agents: Vec<String> = summary
            .rollouts
            .iter()
            .map(|row| match &row.agent.model {
                Some(model) => format!("{} ({model})", row.agent.agent),
                None => row.agent.agent.clone(),
            })
            .fold(Vec::new(), |mut seen, agent| {
                if !seen.contains(&agent) {
                    seen.push(agent);
                }
                seen
            });
        let _ = write!(
            html,
            "<tr><th>{name}</th><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{:.4}</td><td>{:.1}</td></tr>",
            link(run, "report.html"),
            escape(&run.display().to_string()),
            escape(&agents.join(", ")),
            summary.n_rollouts,
            summary.n_done,
            summary.n_infra_error,
            summary.mean_score,
            summary.total_ms as f64 / 1000.0
        );
    }
    html.push_str("</table>");
    let mut tasks: Vec<&str> = first
        .rollouts
        .iter()
        .chain(&second.rollouts)
        .map(|row| row.task_id.as_str())
        .collect();
    tasks.sort_unstable();
    tasks.dedup();
    html.push_str(
        "<table><tr><th>task</th><th>A status</th><th>A score</th>\
                   <th>A actions / turns / wall</th><th>B status</th><th>B score</th>\
                   <th>B actions / turns / wall</th><th>B − A</th><th>A candidate</th>\
                   <th>B candidate</th></tr>",
    );
    for task in tasks {
        let row_a = first.rollouts.iter().find(|row| row.task_id == task);
        let row_b = second.rollouts.iter().find(|row| row.task_id == task);
        let delta = match (row_a, row_b) {
            (Some(x), Some(y)) => {
                let d = y.score - x.score;
                let class = if d > 1e-9 {
                    "good"
                } else if d < -1e-9 {
                    "bad"
                } else {
                    ""
                };
                format!("<td class=\"{class}\">{d:+.4}</td>")
            }
            _ => "<td></td>".to_owned(),
        };
        let render = |run: &Path, row: Option<&SummaryRow>| match row {
            Some(_) => format!(
                "<td><a href=\"{0}#{2}\"><img class=\"thumb\" loading=\"lazy\" src=\"{1}\" \
                 alt=\"candidate\"></a></td>",
                link(run, "report.html"),
                link(run, &format!("rollouts/{task}/candidate.png")),
                escape(task)
            ),
            None => "<td></td>".to_owned(),
        };
        let _ = write!(
            html,
            "<tr><td>{}</td>{}{}{delta}{}{}</tr>",
            escape(task),
            cell(row_a),
            cell(row_b),
            render(&link_a, row_a),
            render(&link_b, row_b)
        );
    }
    html.push_str("</table></body></html>\n");
    write_file(out, html.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links() {
        assert_eq!(
            relative(Path::new("/x/runs"), Path::new("/x/runs/a")),
            PathBuf::from("a")
        );
        assert_eq!(
            relative(Path::new("/x/pages"), Path::new("/x/runs/b")),
            PathBuf::from("../runs/b")
        );
    }
}
