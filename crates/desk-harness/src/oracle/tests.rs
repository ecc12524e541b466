//! Unit tests of the LibreCAD oracle: the batching rule over the corpus, the view transform,
//! shared commands, layers and linetypes.

use desk_contract::DisplaySize;

use super::*;
use crate::batch::check_batch;

fn all_types(batches: &[Vec<Value>]) -> Vec<String> {
    batches
        .iter()
        .flatten()
        .map(|action| action["type"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_corpus_script_passes_the_batching_rule() {
    for generated in desk_cad::generate_corpus() {
        let batches = oracle_batches(&generated.gold);
        let n_batches = batches.len();
        for (batch_idx, batch) in batches.iter().enumerate() {
            let actions = check_batch(batch, DisplaySize::FULL_HD, 5000).unwrap();
            let has_done = actions.iter().any(|a| a.type_name() == "done");
            assert_eq!(
                has_done,
                batch_idx + 1 == n_batches,
                "{}",
                generated.task.id
            );
        }
    }
}

#[test]
fn the_view_transform_matches_the_recipes() {
    // The broker desktop's picks of recipes section 14.
    assert_eq!(drawing_to_screen(Point::new(60.0, 20.0)), (331, 832));
    assert_eq!(drawing_to_screen(Point::new(40.0, 40.0)), (251, 752));
}

#[test]
fn connected_lines_share_one_command_and_layers_are_created_once() {
    let line = |a: (f64, f64), b: (f64, f64)| Geometry::Line {
        a: Point::new(a.0, a.1),
        b: Point::new(b.0, b.1),
    };
    let gold = Model {
        entities: vec![
            Entity::on_layer("OUTLINE", line((0.0, 0.0), (10.0, 0.0))),
            Entity::on_layer("OUTLINE", line((10.0, 0.0), (10.0, 10.0))),
            Entity::on_layer(
                "HOLES",
                Geometry::Circle {
                    center: Point::new(5.0, 5.0),
                    r: 2.5,
                },
            ),
            Entity::on_layer("OUTLINE", line((20.0, 0.0), (30.0, 0.0))),
        ],
    };
    let batches = oracle_batches(&gold);
    let texts = typed(&batches);
    assert_eq!(texts.iter().filter(|t| **t == "line").count(), 2);
    assert_eq!(
        texts.iter().filter(|t| **t == "OUTLINE").count(),
        2,
        "{texts:?}"
    );
    assert!(texts.contains(&"2.5"));
    // OUTLINE is created once (named in the dialog) and later picked through the filter.
    let n_add_clicks = batches
        .iter()
        .flatten()
        .filter(|action| action["type"] == "click" && action["x"] == layers::ADD_LAYER.0)
        .count();
    assert_eq!(n_add_clicks, 2);
    let types = all_types(&batches);
    assert_eq!(types.last().map(String::as_str), Some("done"));
}

#[test]
fn linetypes_go_on_new_layers_or_through_the_pen_and_text_is_typeable() {
    let line = |y: f64| Geometry::Line {
        a: Point::new(0.0, y),
        b: Point::new(10.0, y),
    };
    let gold = Model {
        entities: vec![
            Entity::on_layer("CENTER", line(0.0)).with_linetype("CENTER"),
            // On layer 0 (continuous): the pen's line type, then back to By Layer.
            Entity::on_layer("0", line(5.0)).with_linetype("DASHED"),
            Entity::on_layer(
                "0",
                Geometry::Text {
                    insert: Point::new(0.0, 10.0),
                    height: 3.5,
                    value: "2X Ø10 THRU ±0.1".to_owned(),
                },
            ),
        ],
    };
    let batches = oracle_batches(&gold);
    let texts = typed(&batches);
    // Center on the new layer's dialog, Dash through the pen, never HIDDEN (LibreCAD has none).
    assert_eq!(
        texts.iter().filter(|t| **t == "Center").count(),
        1,
        "{texts:?}"
    );
    assert_eq!(texts.iter().filter(|t| **t == "Dash").count(), 1);
    assert!(texts.contains(&"2X %%c10 THRU %%p0.1"), "{texts:?}");
    let pen_opens = batches
        .iter()
        .flatten()
        .filter(|action| action["type"] == "click" && action["x"] == 370 && action["y"] == 96)
        .count();
    assert_eq!(pen_opens, 2, "set the pen, then reset it to By Layer");
    for batch in &batches {
        check_batch(batch, DisplaySize::FULL_HD, 5000).unwrap();
    }
}

/// Every text the batches type, in order.
fn typed(batches: &[Vec<Value>]) -> Vec<&str> {
    batches
        .iter()
        .flatten()
        .filter_map(|action| action["text"].as_str())
        .collect()
}
