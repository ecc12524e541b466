//! `report.html`: a self-contained static page per run (inline CSS, no scripts, no network).
//!
//! Per rollout: the reference PNG and the candidate render side by side, the score with its
//! per-category breakdown, and the trace of intents per turn with a thumbnail of the frame the
//! agent saw next and links to every intermediate frame. Every link is relative to the out
//! directory, so the folder can be moved or archived as is.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{HarnessError, write_file};
use crate::record::RolloutRecord;
use crate::suite::{Summary, rollout_dir};

mod compare;
mod html;
mod turns;

pub use compare::write_compare;
use html::STYLE;
pub use html::escape;
pub use turns::FrameFacts;

/// The report's file name inside the out directory.
pub const REPORT_FILE: &str = "report.html";

/// The legend under a 3D task's pictures.
const LEGEND_3D: &str = "</div><p class=\"legend3d\"><small>3D legend: every picture but the \
reference was drawn by the trusted judge from the saved files in the scoring run, never from \
the agent's screenshots. Sheets: <code>Layout1</code> recomputed headless from its stored \
views, dimensions and notes; hatched faces are section cuts, dashed lines hidden edges. \
Parts: the union of the part's solids seen from front-right-top (+X, -Y, +Z) with Z up, OCCT \
hidden-line removal: continuous lines visible edges, dashed lines hidden edges, seam edges \
left out. A missing picture: the judge had nothing to draw (no <code>Layout1</code>, no \
solid, a zero before the judge ran).</small></p><div class=\"pair\">";

/// Writes `report.html` into `out_dir`.
pub fn write_report(
    out_dir: &Path,
    summary: &Summary,
    records: &[RolloutRecord],
) -> Result<(), HarnessError> {
    let facts: Vec<FrameFacts> = records
        .iter()
        .map(|record| FrameFacts::read(&rollout_dir(out_dir, &record.task_id)))
        .collect();
    write_file(
        &out_dir.join(REPORT_FILE),
        render_with(summary, records, &facts).as_bytes(),
    )
}

/// The report page as a string, without facts read from the rollouts' frames.
pub fn render(summary: &Summary, records: &[RolloutRecord]) -> String {
    render_with(summary, records, &[])
}

/// The report page; `facts[i]` (when present) describes `records[i]`'s frames.
pub fn render_with(summary: &Summary, records: &[RolloutRecord], facts: &[FrameFacts]) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>deskbroker bench report</title><style>{STYLE}</style></head><body>\
         <h1>deskbroker bench report</h1><p>{} · {} · {} · deskbroker {} · {} rollouts, \
         {} done, {} infra_error (not scored), mean score <b>{:.4}</b>, {:.1} s</p>\
         <p>{} · {} · {} · {} · deskbroker {} ({})</p>",
        escape(&summary.contract_version),
        escape(&summary.corpus_version),
        escape(&summary.scorer_version),
        escape(&summary.broker_version),
        summary.n_rollouts,
        summary.n_done,
        summary.n_infra_error,
        summary.mean_score,
        summary.total_ms as f64 / 1000.0,
        escape(&summary.versions.app),
        escape(&summary.versions.xvfb),
        escape(&summary.versions.window_manager),
        escape(&summary.versions.os),
        escape(&summary.versions.deskbroker),
        escape(&summary.versions.deskbroker_commit)
    );
    for kind in crate::suite::kind_means(summary) {
        let _ = write!(
            html,
            "<p>{} tasks: {} scored, mean score <b>{:.4}</b></p>",
            kind.kind, kind.n_scored, kind.mean_score
        );
    }
    html.push_str(
        "<table><tr><th>task</th><th>kind</th><th>level</th><th>agent</th><th>status</th><th>score</th>\
         <th>actions</th><th>turns</th><th>wall s</th></tr>",
    );
    for row in &summary.rollouts {
        let _ = write!(
            html,
            "<tr><td><a href=\"#{id}\">{id}</a></td><td>{}</td><td>{:?}</td><td>{}</td>\
             <td>{}</td><td class=\"{}\">{:.4}</td><td>{}</td><td>{}</td><td>{:.1}</td></tr>",
            crate::suite::kind_name(row.drawing_type),
            row.level,
            escape(&row.agent.agent),
            row.status.as_str(),
            if row.score >= 0.99 { "good" } else { "bad" },
            row.score,
            row.actions_used,
            row.n_turns,
            row.wall_time_ms as f64 / 1000.0,
            id = escape(&row.task_id),
        );
    }
    html.push_str("</table>");
    for (idx, record) in records.iter().enumerate() {
        rollout_section(
            &mut html,
            record,
            facts.get(idx).cloned().unwrap_or_default(),
        );
    }
    html.push_str("</body></html>\n");
    html
}

fn rollout_section(html: &mut String, record: &RolloutRecord, facts: FrameFacts) {
    let base = format!("rollouts/{}/", record.task_id);
    let link = |rel: &str| escape(&format!("{base}{rel}"));
    let _ = write!(
        html,
        "<h2 id=\"{id}\">{id} · {} {:?} · {}{} · score {:.4}</h2><p>status <b>{}</b>{} · {} \
         actions in {} turns ({} refused) · {:.1} s from handoff · tokens {}/{} · \
         <a href=\"{}\">rollout.json</a></p>",
        crate::suite::kind_name(record.drawing_type),
        record.level,
        escape(&record.agent.agent),
        record
            .agent
            .model
            .as_deref()
            .map(|m| format!(" ({})", escape(m)))
            .unwrap_or_default(),
        record.score.score(),
        record.status.as_str(),
        record
            .status_detail
            .as_deref()
            .map(|d| format!(": {}", escape(d)))
            .unwrap_or_default(),
        record.actions_used,
        record.n_turns,
        record.n_rejected_batches,
        record.wall_time_ms as f64 / 1000.0,
        record.tokens.input_tokens,
        record.tokens.output_tokens,
        link("rollout.json"),
        id = escape(&record.task_id),
    );
    html.push_str("<div class=\"pair\">");
    let images: Vec<(&str, Option<&str>)> = match record.drawing_type {
        desk_cad::DrawingType::TwoD => vec![
            ("reference", record.paths.reference.as_deref()),
            ("candidate render", record.paths.candidate_render.as_deref()),
            (
                "candidate over gold: green matched, red gold only, blue candidate only",
                record.paths.overlay.as_deref(),
            ),
        ],
        desk_cad::DrawingType::ThreeD => vec![
            ("gold sheet (judge)", record.paths.gold_sheet.as_deref()),
            (
                "candidate sheet (judge)",
                record.paths.candidate_render.as_deref(),
            ),
            (
                "gold part, isometric (judge)",
                record.paths.gold_part.as_deref(),
            ),
            (
                "candidate part, isometric (judge)",
                record.paths.candidate_part.as_deref(),
            ),
            (
                "reference the agent was given",
                record.paths.reference.as_deref(),
            ),
        ],
    };
    for (caption, path) in images {
        match path {
            Some(path) => {
                let _ = write!(
                    html,
                    "<figure><img src=\"{}\" alt=\"{caption}\"><figcaption>{caption}\
                     </figcaption></figure>",
                    link(path)
                );
            }
            None => {
                let _ = write!(
                    html,
                    "<figure><p>no {caption}</p><figcaption>{caption}</figcaption></figure>"
                );
            }
        }
    }
    if record.drawing_type == desk_cad::DrawingType::ThreeD {
        html.push_str(LEGEND_3D);
    }
    let _ = write!(
        html,
        "</div><p>judge {}</p><table><tr><th>category</th><th>weight</th><th>score</th>\
         <th>gold vs candidate</th></tr>",
        escape(record.score.scorer_version())
    );
    for category in record.score.categories() {
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{:.3}</td><td>{:.4}</td><td>{}</td></tr>",
            escape(&category.name),
            category.weight,
            category.score,
            escape(&category.detail)
        );
    }
    html.push_str("</table>");
    if let Some(reason) = record.score.zero_reason() {
        let _ = write!(
            html,
            "<p class=\"bad\">zero: {} {}</p>",
            escape(&reason),
            escape(record.score.message().unwrap_or(""))
        );
    }
    let _ = write!(
        html,
        "<details open><summary>trace: {} turns</summary><table><tr><th>turn</th>\
         <th>what the model saw (ring: its point, cross: injected point)</th>\
         <th>what it said</th><th>actions, receipts, settle (links to each frame)</th>\
         <th>delivery</th><th>frame after</th></tr>",
        record.trace.len()
    );
    let mut seen = facts.handoff.clone();
    for turn in &record.trace {
        turns::trace_row(html, turn, seen.as_deref(), facts.size, &link);
        if turn.final_frame.is_some() {
            seen = turn.final_frame.clone();
        }
    }
    html.push_str("</table></details>");
}
