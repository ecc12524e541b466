//! Seeded generation of 3D part tasks: a [`PartSpec`] (what the trusted gold builder makes),
//! the drawing views the public reference shows, and the task text with every dimension a
//! human needs.
//!
//! Invariants: no clock or OS randomness (a SplitMix64 stream seeded per task index); sizes on
//! a 5 mm grid (hole diameters and fillets on whole mm); every feature lies inside the part so
//! the gold is one valid solid. Three families: a plate (holes, blind hole, pocket, rounded or
//! chamfered corners), an L-bracket (holes in both legs, a rounded bend) and a revolved flange
//! (hub, bore, bolt circle). Views are chosen per task, not always front/top/side.

use crate::generate::Rng;

mod families;
mod spec;

use families::{bracket, flange, pick, plate};
pub use spec::*;

/// Base seed of the 3D generator.
const SEED: u64 = 0x00de_5cb0_cad0_3d01;

/// Generates 3D task number `index` (0-based); a pure function of `index`.
pub fn generate_part(index: u64) -> PartTask {
    let mut rng = Rng(SEED ^ index.wrapping_mul(0x0100_0000_01b3));
    let mut steps = Vec::new();
    let (spec, views) = match index % 3 {
        0 => plate(&mut rng, &mut steps),
        1 => bracket(&mut rng, &mut steps),
        _ => flange(&mut rng, &mut steps),
    };
    let names: Vec<String> = views.iter().map(|view| view.describe()).collect();
    let mut prompt = format!(
        "Model the part shown in the reference image ({{reference}}) in FreeCAD as one true \
         solid. Units are millimetres. The reference shows {} (visible edges solid, hidden \
         edges dashed, all views at one scale). Keep that orientation; the position of the part \
         does not matter.\n",
        names.join(", ")
    );
    for step in &steps {
        prompt.push_str("- ");
        prompt.push_str(step);
        prompt.push('\n');
    }
    let material = pick(
        &mut rng,
        &["ALUMINIUM 6061-T6", "STEEL S235", "BRASS CW614N"],
    );
    let notes = vec![
        format!("MATERIAL: {material}"),
        "UNITS: MM".to_owned(),
        "BREAK SHARP EDGES".to_owned(),
    ];
    prompt.push_str(&format!(
        "Then add a TechDraw page labelled {SHEET_NAME} showing the same views of the solid \
         (same directions); in each orthographic view, a horizontal dimension of its longest \
         horizontal straight edge, a vertical dimension of its longest vertical straight edge \
         and a diameter dimension of its largest full circle, where the view has them; and one \
         note with the lines: {}.\n",
        notes.join(" / ")
    ));
    prompt.push_str("Save the document (Ctrl+S) when finished.");
    let sheet = SheetSpec {
        name: SHEET_NAME.to_owned(),
        views: views.clone(),
        notes,
    };
    PartTask {
        prompt,
        views,
        spec,
        sheet,
    }
}
