//! Layers through the Layer List dock (`docs/librecad-recipes.md`, sections 7 and 16): a new
//! layer is created (with its linetype) and becomes current; an existing one is picked through
//! the filter.

use serde_json::Value;

use desk_cad::model::Entity;

use super::drafting;
use super::steps::{click, key, type_text, wait};

/// Layer List dock: the "Add layer" button, the filter field and the first row (1920x1080).
/// The broker's desktop puts "+" at (1817, 529); (1807, 525) opens the dialog as well.
pub(super) const ADD_LAYER: (i64, i64) = (1807, 525);
pub(super) const LAYER_FILTER: (i64, i64) = (1767, 492);
pub(super) const LAYER_ROW_0: (i64, i64) = (1830, 558);

/// Makes the entity's layer current: create it through the dock (it becomes current, with the
/// entity's linetype) or pick it through the filter.
pub(super) fn layer_batches(
    entity: &Entity,
    created: &mut Vec<(String, Option<String>)>,
    batches: &mut Vec<Vec<Value>>,
) {
    let layer = entity.layer.as_str();
    if created
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case(layer))
    {
        batches.push(vec![
            click(LAYER_FILTER, "focus the layer filter"),
            key(&["ctrl", "a"], "select the filter text"),
            type_text(layer, &format!("filter the layer list to {layer}")),
        ]);
        batches.push(vec![click(LAYER_ROW_0, &format!("make {layer} current"))]);
        batches.push(vec![
            click(LAYER_FILTER, "focus the layer filter"),
            key(&["ctrl", "a"], "select the filter text"),
            key(&["backspace"], "clear the filter"),
        ]);
    } else {
        batches.push(vec![click(ADD_LAYER, "open the Add layer dialog")]);
        batches.push(vec![wait(500, "let the Layer Settings dialog map")]);
        let mut batch = vec![type_text(layer, &format!("name the new layer {layer}"))];
        if let Some(linetype) = &entity.linetype {
            batch.extend(drafting::layer_linetype(linetype));
        }
        batch.push(key(
            &["return"],
            "confirm the dialog; the new layer becomes current",
        ));
        batches.push(batch);
        batches.push(vec![wait(200, "let the dialog close")]);
        created.push((layer.to_owned(), entity.linetype.clone()));
    }
}
