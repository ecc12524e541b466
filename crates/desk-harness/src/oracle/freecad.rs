//! The oracle's FreeCAD recipe (`docs/freecad-recipes.md`): a 3D task solved through the GUI
//! only, as a person would with the Part and TechDraw workbenches: no Python console, no macro.
//!
//! The solid is built from the gold's [`PartSpec`] as a constructive solid: parametric
//! primitives typed into Part's "Geometric Primitives" dialog (boxes, cylinders, a quarter
//! cylinder for a bend round, 45°-turned boxes for chamfers), one Union of the material, one
//! Union of everything cut away, and one Cut. The sheet is TechDraw's default page renamed
//! `Layout1` at page scale 0.5, with one view per reference view taken from the 3D view's
//! standard directions (keys 0–6) or, for a section, cut from its plan view; each moved to the
//! slot of its cell of the gold's grid (`sheet.rs`, the slot rule) and dimensioned on edges
//! `sheet.rs` computes from the part; the notes as an annotation in a free slot.
//!
//! Every position is a widget measured on the pinned `freecad` profile at 1920x1080 (the combo
//! view docked left at its default width); the script never reads the screen.
//!
//! No fixed wait follows an input: the broker settles every action until FreeCAD is idle (its
//! threads not running, no timer due, nothing drawn; docs/settle.md), so a list, menu, editor,
//! dialog or page the input opens, a recompute, a workbench's load, a view's projection and the
//! save are done when the next input is sent. Removing all 288 waits from the dev split's
//! recorded 3D rollouts and replaying them scored 1.0 on all four tasks (and 1.0 with the 29
//! longest kept). Only the section view's batch keeps its waits: no dev task has a section, so
//! it was not replayed without them.

use desk_cad::generate3d::{PartTask, View};
use serde_json::Value;

use super::steps::{click, key, num, type_text, wait};

mod csg;
mod sheet;

use csg::{Placed, Primitive, decompose};
use sheet::{
    DimTool, EMPTY_PAGE, PAGE_CENTRE, PAGE_SCALE, SectionStep, ViewPlan, note_slot, to_screen,
    view_plans,
};

/// The workbench selector of the toolbar.
const WORKBENCH_COMBO: (i64, i64) = (580, 58);
/// Part toolbar: "Create primitives…", Cut and Union.
const PART_PRIMITIVES: (i64, i64) = (480, 136);
const PART_CUT: (i64, i64) = (1163, 136);
const PART_FUSE: (i64, i64) = (1196, 136);
/// TechDraw toolbar: "Insert Default Page" and "Insert View".
const TD_DEFAULT_PAGE: (i64, i64) = (28, 136);
const TD_INSERT_VIEW: (i64, i64) = (142, 136);
/// The Combo View's Model tab and its tree: the first object row and the row pitch.
const MODEL_TAB: (i64, i64) = (29, 189);
const TREE_ROW_0: (i64, i64) = (79, 264);
const TREE_ROW_PITCH: i64 = 18;
/// The MDI tabs of the 3D view and of the page (the second tab, labelled Layout1).
const TAB_3D: (i64, i64) = (330, 1034);
const TAB_PAGE: (i64, i64) = (468, 1034);
/// TechDraw toolbar: the Horizontal, Vertical and Diameter Dimension tools.
const TD_DIM_HORIZONTAL: (i64, i64) = (670, 136);
const TD_DIM_VERTICAL: (i64, i64) = (703, 136);
const TD_DIM_DIAMETER: (i64, i64) = (769, 136);
/// TechDraw menu > Annotations > Insert Annotation, and > Insert Section View with its task
/// panel's OK, Identifier field and first two Section Orientation buttons (Up, Down).
const TD_MENU: (i64, i64) = (198, 28);
const TD_MENU_SECTION: (i64, i64) = (250, 190);
const TASK_OK: (i64, i64) = (102, 232);
const SECTION_IDENTIFIER: (i64, i64) = (200, 340);
const SECTION_UP: (i64, i64) = (61, 475);
const SECTION_DOWN: (i64, i64) = (117, 475);
const TD_MENU_ANNOTATIONS: (i64, i64) = (229, 684);
const TD_MENU_INSERT_ANNOTATION: (i64, i64) = (570, 685);
/// The property editor (Data tab) value column: a page's Scale; a view's X and Y; an
/// annotation's Text (with its "…" button) and X and Y.
const PROP_PAGE_SCALE: (i64, i64) = (160, 768);
const PROP_VIEW_X: (i64, i64) = (160, 648);
const PROP_VIEW_Y: (i64, i64) = (160, 668);
const PROP_NOTE_TEXT: (i64, i64) = (160, 648);
const PROP_NOTE_TEXT_EDIT: (i64, i64) = (248, 648);
const PROP_NOTE_X: (i64, i64) = (160, 817);
const PROP_NOTE_Y: (i64, i64) = (160, 837);
/// The string-list dialog the "…" button opens: its editor and OK.
const LIST_EDITOR: (i64, i64) = (950, 480);
const LIST_OK: (i64, i64) = (951, 608);
/// The primitives dialog: Create and Close, the type selector, the parameter column, and the
/// Location fields (position, rotation axis, angle).
const DLG_CREATE: (i64, i64) = (152, 232);
const DLG_CLOSE: (i64, i64) = (240, 232);
const DLG_TYPE: (i64, i64) = (145, 314);
const PARAM_X: i64 = 231;
const PARAM_ROW_0: i64 = 367;
const PARAM_ROW_PITCH: i64 = 33;
/// The cylinder's "Rotation angle" (its sector), below the two cone-angle rows.
const CYL_SECTOR: (i64, i64) = (231, 508);
const LOC_X: i64 = 211;
const LOC_POSITION: [i64; 3] = [743, 776, 809];
const LOC_AXIS: [i64; 3] = [907, 936, 965];
const LOC_ANGLE: i64 = 996;

fn field((x, y): (i64, i64), value: f64, intent: &str) -> Vec<Value> {
    vec![
        click((x, y), &format!("focus the {intent} field")),
        key(&["ctrl", "a"], "select the old value"),
        type_text(&num(value), intent),
    ]
}

/// Picks entry `index` of the primitives dialog's type list (Plane is 0).
fn choose_type(index: usize, name: &str) -> Vec<Value> {
    let mut batch = vec![
        click(DLG_TYPE, "open the primitive type list"),
        key(&["home"], "first type"),
    ];
    for _ in 0..index {
        batch.push(key(&["down"], "next type"));
    }
    batch.push(key(&["return"], &format!("choose {name}")));
    batch
}

fn primitive_batch(placed: &Placed) -> Vec<Value> {
    let param = |row: i64| (PARAM_X, PARAM_ROW_0 + row * PARAM_ROW_PITCH);
    let mut batch = match &placed.primitive {
        Primitive::Box { size } => {
            let mut batch = choose_type(1, "Box");
            for (row, (value, name)) in size.iter().zip(["length", "width", "height"]).enumerate() {
                batch.extend(field(param(row as i64), *value, &format!("box {name}")));
            }
            batch
        }
        Primitive::Cylinder {
            radius,
            height,
            sector,
        } => {
            let mut batch = choose_type(2, "Cylinder");
            batch.extend(field(param(0), *radius, "cylinder radius"));
            batch.extend(field(param(1), *height, "cylinder height"));
            batch.extend(field(CYL_SECTOR, *sector, "cylinder sector angle"));
            batch
        }
    };
    for (axis, (y, value)) in ["X", "Y", "Z"]
        .iter()
        .zip(LOC_POSITION.iter().zip(placed.position))
    {
        batch.extend(field((LOC_X, *y), value, &format!("position {axis}")));
    }
    for (axis, (y, value)) in ["x", "y", "z"].iter().zip(LOC_AXIS.iter().zip(placed.axis)) {
        batch.extend(field((LOC_X, *y), value, &format!("rotation axis {axis}")));
    }
    batch.extend(field((LOC_X, LOC_ANGLE), placed.angle, "rotation angle"));
    batch.push(click(DLG_CREATE, "Create the primitive"));
    batch
}

fn tree_row(row: usize) -> (i64, i64) {
    (TREE_ROW_0.0, TREE_ROW_0.1 + row as i64 * TREE_ROW_PITCH)
}

/// Selects tree rows `first..first + count` (click, then Shift+Down) and presses `tool`.
fn select_and_apply(first: usize, count: usize, tool: (i64, i64), intent: &str) -> Vec<Value> {
    let mut batch = vec![click(tree_row(first), "select the first object")];
    for _ in 1..count {
        batch.push(key(&["shift", "down"], "extend the selection"));
    }
    batch.push(click(tool, intent));
    batch
}

fn switch_workbench(name: &str) -> Vec<Value> {
    vec![
        click(WORKBENCH_COMBO, "open the workbench list"),
        type_text(name, &format!("find the {name} workbench")),
        key(&["return"], &format!("switch to {name}")),
    ]
}

/// The 3D view's standard-view key for a drawing view (FreeCAD's View > Standard views).
fn view_key(view: View) -> Option<&'static str> {
    Some(match view {
        View::Isometric => "0",
        View::Front => "1",
        View::Top => "2",
        View::Right => "3",
        View::Back => "4",
        View::Bottom => "5",
        View::Left => "6",
        View::Section => return None,
    })
}

/// Types `value` into a property editor value cell and commits it.
fn property(cell: (i64, i64), value: &str, intent: &str) -> Vec<Value> {
    vec![
        click(cell, &format!("edit the {intent}")),
        key(&["ctrl", "a"], "select the old value"),
        type_text(value, intent),
        key(&["return"], "commit the value"),
    ]
}

/// Cuts the section from its base plan view (already in its slot): select the base, TechDraw
/// menu's Insert Section View, the orientation button, its identifier (stored as the
/// section's `SectionSymbol`, drawn at the cutting line's ends and in its caption), OK. The
/// section appears at the page centre.
fn section_batch(step: &SectionStep) -> Vec<Value> {
    let (button, name) = if step.looking_up {
        (SECTION_UP, "Section Orientation: Up")
    } else {
        (SECTION_DOWN, "Section Orientation: Down")
    };
    vec![
        click(TAB_PAGE, "show the page"),
        wait(500, "let the page show"),
        click(to_screen(EMPTY_PAGE), "clear the selection"),
        click(to_screen(step.base_point), "select the plan view to cut"),
        wait(300, "let the selection settle"),
        click(TD_MENU, "open the TechDraw menu"),
        wait(300, "let the menu open"),
        click(TD_MENU_SECTION, "Insert Section View"),
        wait(1500, "let the task panel open"),
        click(button, name),
        wait(2000, "let the section compute"),
        // The panel's fields are disabled until an orientation made the section.
        click(SECTION_IDENTIFIER, "focus the section's Identifier field"),
        key(&["ctrl", "a"], "select the old identifier"),
        type_text(step.symbol, "the section's identifier (A of SECTION A-A)"),
        key(&["tab"], "commit the identifier"),
        click(TASK_OK, "OK: keep the section"),
        wait(1500, "let the task panel close"),
    ]
}

/// Moves the view just inserted at the page centre to its slot and dimensions it there.
fn place_and_dimension(plan: &ViewPlan) -> Vec<Vec<Value>> {
    let view = plan.view;
    let mut batch = vec![
        click(TAB_PAGE, "show the page"),
        click(to_screen(EMPTY_PAGE), "clear the selection"),
        click(
            to_screen(plan.grab),
            &format!("select the {} view", view.label()),
        ),
    ];
    batch.extend(property(PROP_VIEW_X, &num(plan.slot.0), "view's page X"));
    batch.extend(property(PROP_VIEW_Y, &num(plan.slot.1), "view's page Y"));
    let mut batches = vec![batch];
    for (tool, point) in &plan.dims {
        let (button, name) = match tool {
            DimTool::Horizontal => (TD_DIM_HORIZONTAL, "Horizontal Dimension"),
            DimTool::Vertical => (TD_DIM_VERTICAL, "Vertical Dimension"),
            DimTool::Diameter => (TD_DIM_DIAMETER, "Diameter Dimension"),
        };
        batches.push(vec![
            click(to_screen(EMPTY_PAGE), "clear the selection"),
            click(to_screen(*point), "select the edge to dimension"),
            click(button, name),
            // Were the pick to miss its edge, the tool would open a modal "Wrong selection"
            // box; Escape closes it so one lost dimension does not take the rest of the sheet.
            key(&["escape"], "close a refusal, if any"),
        ]);
    }
    batches
}

/// Inserts the notes annotation at the page centre, types its lines and moves it to `slot`.
fn notes_batches(notes: &[String], slot: (f64, f64)) -> Vec<Vec<Value>> {
    let mut text = vec![
        click(LIST_EDITOR, "focus the list editor"),
        key(&["ctrl", "a"], "select the default text"),
    ];
    for (index, line) in notes.iter().enumerate() {
        if index > 0 {
            text.push(key(&["return"], "next note line"));
        }
        text.push(type_text(line, "a note line"));
    }
    text.push(click(LIST_OK, "OK: set the note's text"));
    let mut place = vec![click(to_screen(PAGE_CENTRE), "select the note")];
    place.extend(property(PROP_NOTE_X, &num(slot.0), "note's page X"));
    place.extend(property(PROP_NOTE_Y, &num(slot.1), "note's page Y"));
    vec![
        vec![
            click(TAB_PAGE, "show the page"),
            click(TD_MENU, "open the TechDraw menu"),
            click(TD_MENU_ANNOTATIONS, "Annotations"),
            click(TD_MENU_INSERT_ANNOTATION, "Insert Annotation"),
            click(to_screen(PAGE_CENTRE), "select the new annotation"),
            click(PROP_NOTE_TEXT, "select the Text property"),
            click(PROP_NOTE_TEXT_EDIT, "open the text list editor"),
        ],
        text,
        place,
    ]
}

/// The whole script of a 3D task, ending with Ctrl+S and `done`; an error names the shape or
/// view the recipe cannot make.
pub(crate) fn part_batches(part: &PartTask) -> Result<Vec<Vec<Value>>, String> {
    let csg = decompose(&part.spec)?;
    let mut batches = vec![switch_workbench("Part")];
    batches.push(vec![click(
        PART_PRIMITIVES,
        "open the Geometric Primitives dialog",
    )]);
    for placed in csg.material.iter().chain(&csg.removed) {
        batches.push(primitive_batch(placed));
    }
    batches.push(vec![
        click(DLG_CLOSE, "close the primitives dialog"),
        click(MODEL_TAB, "show the model tree"),
    ]);
    let (n_material, n_removed) = (csg.material.len(), csg.removed.len());
    // Tree rows, top-level only: the material, then the removed shapes; a union moves its
    // inputs under it and is listed after every older top-level object.
    if n_material > 1 {
        batches.push(select_and_apply(
            0,
            n_material,
            PART_FUSE,
            "Union of the material",
        ));
    }
    if n_removed > 1 {
        let first = if n_material > 1 { 0 } else { 1 };
        batches.push(select_and_apply(
            first,
            n_removed,
            PART_FUSE,
            "Union of what is cut away",
        ));
    }
    // Now two top-level rows: the material (first) and what is cut away.
    batches.push(select_and_apply(
        0,
        2,
        PART_CUT,
        "Cut: material minus the rest",
    ));
    batches.push(switch_workbench("TechDraw"));
    batches.push(vec![
        click(TD_DEFAULT_PAGE, "Insert Default Page"),
        click(tree_row(1), "select the page in the tree"),
        key(&["f2"], "rename the page"),
        key(&["ctrl", "a"], "select the old label"),
        type_text(&part.sheet.name, "the sheet name the task asks for"),
        key(&["return"], "confirm the label"),
    ]);
    batches.push(property(PROP_PAGE_SCALE, &num(PAGE_SCALE), "page scale"));
    let plans = view_plans(&part.spec, &part.sheet.views)
        .ok_or("a view outside the grid's cells, or a section without a plan view")?;
    let notes_slot = note_slot(&part.spec, &part.sheet.views, &plans)
        .ok_or("a sheet with no room for its notes")?;
    // Dimensioned views first, each moved to its cell's slot (a section after its plan view);
    // the notes; the isometric view last, left at the page centre (its bottom-row cell).
    let planned = |view: &View| plans.iter().any(|plan| plan.view == *view);
    let rest = part.sheet.views.iter().filter(|view| !planned(view));
    let order: Vec<View> = plans
        .iter()
        .map(|plan| plan.view)
        .chain(rest.copied())
        .collect();
    let mut notes_done = false;
    for view in order {
        let plan = plans.iter().find(|plan| plan.view == view);
        if plan.is_none() && !notes_done && !part.sheet.notes.is_empty() {
            batches.extend(notes_batches(&part.sheet.notes, notes_slot));
            notes_done = true;
        }
        match (plan.and_then(|plan| plan.section.as_ref()), view_key(view)) {
            (Some(step), _) => batches.push(section_batch(step)),
            (None, Some(digit)) => batches.push(vec![
                click(TAB_3D, "back to the 3D view"),
                key(&[digit], &format!("standard view: {}", view.label())),
                click(tree_row(0), "select the solid"),
                click(TD_INSERT_VIEW, &format!("Insert View: {}", view.label())),
            ]),
            (None, None) => return Err(format!("a {} view", view.label())),
        }
        if let Some(plan) = plan {
            batches.extend(place_and_dimension(plan));
        }
    }
    if !notes_done && !part.sheet.notes.is_empty() {
        batches.extend(notes_batches(&part.sheet.notes, notes_slot));
    }
    batches.push(vec![click(TAB_PAGE, "show the finished page")]);
    batches.push(vec![
        key(&["ctrl", "s"], "save the document in place"),
        serde_json::json!({"type": "done", "intent": "the part and its sheet are drawn"}),
    ]);
    Ok(batches)
}
