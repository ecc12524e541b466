//! The per-turn trace of a rollout in `report.html`: the frame the model saw with every
//! click of its batch drawn on it (the model's point as a ring, the point the broker injected,
//! the receipt's `pointer_target`, as a cross; a drag as its path), what the model said (its
//! text, or the raw `computer_action` arguments), and each action with its receipt and settle
//! result.

use std::fmt::Write as _;

use serde_json::Value;

use super::html::escape;
use crate::record::{TraceItem, TraceTurn, TurnRecord};

/// What the report knows about a rollout's frames from its directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameFacts {
    /// The handoff frame (the first the model saw), relative to the rollout directory.
    pub handoff: Option<String>,
    /// Width and height of the frames, from the handoff frame's PNG header.
    pub size: Option<(u32, u32)>,
}

impl FrameFacts {
    /// Reads the facts of the rollout directory `dir`: its lowest-numbered frame and its size.
    pub fn read(dir: &std::path::Path) -> FrameFacts {
        let first = std::fs::read_dir(dir.join("frames"))
            .ok()
            .and_then(|entries| {
                entries
                    .flatten()
                    .filter_map(|entry| entry.file_name().into_string().ok())
                    .filter(|name| name.ends_with(".png"))
                    .min()
            });
        let size = first.as_ref().and_then(|name| {
            let bytes = std::fs::read(dir.join("frames").join(name)).ok()?;
            let read = |at: usize| -> Option<u32> {
                Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
            };
            (bytes.get(1..4) == Some(b"PNG")).then_some((read(16)?, read(20)?))
        });
        FrameFacts {
            handoff: first.map(|name| format!("frames/{name}")),
            size,
        }
    }
}

/// The points an action names: `x`/`y`, or a drag's `path`.
fn action_points(action: &Value) -> Vec<(i64, i64)> {
    let point = |value: &Value| -> Option<(i64, i64)> {
        match value {
            Value::Object(map) => Some((map.get("x")?.as_i64()?, map.get("y")?.as_i64()?)),
            Value::Array(pair) if pair.len() == 2 => Some((pair[0].as_i64()?, pair[1].as_i64()?)),
            _ => None,
        }
    };
    if let Some(path) = action.get("path").and_then(Value::as_array) {
        return path.iter().filter_map(point).collect();
    }
    point(action).into_iter().collect()
}

/// The frame the model saw, with the batch's points drawn on it.
fn seen_frame(
    turn: &TraceTurn,
    seen: Option<&str>,
    size: Option<(u32, u32)>,
    link: &dyn Fn(&str) -> String,
) -> String {
    let Some(seen) = seen else {
        return "<p>no frame</p>".to_owned();
    };
    let Some((width, height)) = size else {
        return format!(
            "<a href=\"{0}\"><img class=\"shot\" src=\"{0}\" alt=\"seen\"></a>",
            link(seen)
        );
    };
    let mut svg = format!(
        // Inline SVG in HTML needs no namespace (and the page names no URL).
        "<a href=\"{0}\"><svg class=\"shot\" viewBox=\"0 0 {width} {height}\" role=\"img\">\
         <image href=\"{0}\" width=\"{width}\" height=\"{height}\"/>",
        link(seen)
    );
    let actions = match &turn.outcome {
        TurnRecord::Actions { actions, .. } => actions.as_slice(),
        _ => &[],
    };
    let radius = (width.max(height) / 90).max(6);
    for (idx, action) in actions.iter().enumerate() {
        let points = action_points(action);
        if points.len() > 1 {
            let list: Vec<String> = points.iter().map(|(x, y)| format!("{x},{y}")).collect();
            let _ = write!(
                svg,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"#f80\" stroke-width=\"{}\"/>",
                list.join(" "),
                radius / 3
            );
        }
        if let Some((x, y)) = points.last() {
            let _ = write!(
                svg,
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"{radius}\" fill=\"none\" stroke=\"#f80\" \
                 stroke-width=\"{w}\"/><text x=\"{tx}\" y=\"{y}\" fill=\"#f80\" \
                 font-size=\"{fs}\" font-weight=\"bold\">{n}</text>",
                w = radius / 3,
                tx = x + i64::from(radius) + 2,
                fs = radius * 2,
                n = idx + 1
            );
        }
        let injected = turn
            .items
            .iter()
            .find(|item| item.item_idx == idx)
            .and_then(|item| item.receipt.as_ref())
            .and_then(|receipt| receipt.pointer_target);
        if let Some(target) = injected {
            let (x, y, r) = (target.x, target.y, radius);
            let _ = write!(
                svg,
                "<path d=\"M{} {y}H{}M{x} {}V{}\" stroke=\"#e0f\" stroke-width=\"{}\"/>",
                x.saturating_sub(r),
                x + r,
                y.saturating_sub(r),
                y + r,
                (r / 4).max(2)
            );
        }
    }
    svg.push_str("</svg></a>");
    svg
}

/// What the model said: its reasoning and text, then the malformed call or the raw tool-call
/// arguments.
fn said(turn: &TraceTurn) -> String {
    let mut html = String::new();
    if let Some(reasoning) = &turn.said.reasoning {
        let _ = write!(
            html,
            "<details open><summary>reasoning</summary><pre class=\"said\">{}</pre></details>",
            escape(reasoning)
        );
    }
    if let (Some(text), false) = (
        &turn.said.text,
        matches!(turn.outcome, TurnRecord::NoToolCall { .. }),
    ) {
        let _ = write!(
            html,
            "<p><b>said</b></p><pre class=\"said\">{}</pre>",
            escape(text)
        );
    }
    html + &answer(turn)
}

/// The answer itself: its text, the malformed call, or the raw tool-call arguments.
fn answer(turn: &TraceTurn) -> String {
    match &turn.outcome {
        TurnRecord::NoToolCall { text } => {
            format!("<p><b>no tool call</b></p><pre>{}</pre>", escape(text))
        }
        TurnRecord::Malformed { call_id, error } => format!(
            "<p class=\"bad\">malformed tool call{}</p><pre>{}</pre>",
            call_id
                .as_deref()
                .map(|id| format!(" {}", escape(id)))
                .unwrap_or_default(),
            escape(error)
        ),
        TurnRecord::Actions { call_id, actions } => {
            let raw = serde_json::to_string_pretty(&serde_json::json!({ "actions": actions }))
                .unwrap_or_default();
            format!(
                "<p>computer_action <code>{}</code>: {} item{}</p>\
                 <details><summary>raw tool call</summary><pre>{}</pre></details>",
                escape(call_id),
                actions.len(),
                if actions.len() == 1 { "" } else { "s" },
                escape(&raw)
            )
        }
    }
}

fn item_line(item: &TraceItem, link: &dyn Fn(&str) -> String) -> String {
    let label = format!(
        "{} <b>{}</b>: {}",
        item.item_idx + 1,
        escape(&item.action_type),
        escape(&item.intent)
    );
    let label = match &item.frame {
        Some(frame) => format!("<a href=\"{}\">{label}</a>", link(frame)),
        None => label,
    };
    let Some(receipt) = &item.receipt else {
        return format!(
            "<li>{label} <span class=\"bad\">{}</span></li>",
            escape(item.error.as_deref().unwrap_or("not run"))
        );
    };
    let mut facts = format!(
        "#{} {} · {} events · settle {} {} ms{}",
        receipt.action_index,
        escape(receipt.delivery.as_str()),
        receipt.n_input_events,
        receipt.settle.outcome.as_str(),
        receipt.settle.wait_ms,
        if receipt.post_action_visual_stable {
            ""
        } else {
            " <span class=\"bad\">unstable</span>"
        }
    );
    if let Some(target) = receipt.pointer_target {
        let _ = write!(
            facts,
            " · injected at ({}, {}){}",
            target.x,
            target.y,
            match receipt.pointer_on_target {
                Some(false) => " <span class=\"bad\">pointer elsewhere after</span>",
                _ => "",
            }
        );
    }
    if !receipt.observation_failures.is_empty() {
        let _ = write!(
            facts,
            " · <span class=\"bad\">observation failures: {}</span>",
            escape(&receipt.observation_failures.join(", "))
        );
    }
    format!("<li>{label}<br><small>{facts}</small></li>")
}

/// One row of the trace table. `seen` is the frame the model saw before answering.
pub(crate) fn trace_row(
    html: &mut String,
    turn: &TraceTurn,
    seen: Option<&str>,
    size: Option<(u32, u32)>,
    link: &dyn Fn(&str) -> String,
) {
    let mut items = String::from("<ol class=\"items\">");
    for item in &turn.items {
        items.push_str(&item_line(item, link));
    }
    items.push_str("</ol>");
    let delivery = turn
        .delivery
        .as_ref()
        .map(|d| {
            format!(
                "{:?}, {} run, changed: {}<br><small>{}</small>",
                d.status,
                d.n_executed,
                d.screen_changed,
                escape(&d.message)
            )
        })
        .unwrap_or_else(|| "none".to_owned());
    let after = turn
        .final_frame
        .as_deref()
        .map(|frame| {
            format!(
                "<a href=\"{0}\"><img class=\"thumb\" loading=\"lazy\" src=\"{0}\" \
                 alt=\"frame after\"></a>",
                link(frame)
            )
        })
        .unwrap_or_default();
    let _ = write!(
        html,
        "<tr><td>{}<br><small>{:.1} s<br>{} in / {} out tok</small></td><td>{}</td><td>{}</td>\
         <td>{items}</td><td>{delivery}</td><td>{after}</td></tr>",
        turn.turn,
        turn.answered_at_ms as f64 / 1000.0,
        turn.usage.input_tokens,
        turn.usage.output_tokens,
        seen_frame(turn, seen, size, link),
        said(turn),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_of_clicks_and_drags() {
        let click = serde_json::json!({"type": "click", "x": 10, "y": 20});
        assert_eq!(action_points(&click), vec![(10, 20)]);
        let drag = serde_json::json!({"type": "drag", "path": [{"x": 1, "y": 2}, [3, 4]]});
        assert_eq!(action_points(&drag), vec![(1, 2), (3, 4)]);
        let key = serde_json::json!({"type": "key", "keys": ["ctrl", "s"]});
        assert!(action_points(&key).is_empty());
    }
}
