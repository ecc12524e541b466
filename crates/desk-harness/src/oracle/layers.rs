//! Layers through the Layer List dock (`docs/librecad-recipes.md`, sections 7 and 16): a new
//! layer is created (with its linetype) and becomes current; an existing one is picked through
//! the filter.

use serde_json::Value;

use desk_cad::model::Entity;

use super::{ADD_LAYER, LAYER_FILTER, LAYER_ROW_0, click, drafting, key, type_text, wait};

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
