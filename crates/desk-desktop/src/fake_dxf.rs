//! The fixture drawing a [`crate::FakeDesktop`] saves when asked to ([`crate::fake::FakeSave::FixtureDxf`]):
//! a valid ASCII R12 DXF (millimetres) holding a 100 mm square, which the benchmark's own DXF
//! reader parses.
//!
//! Invariant: the bytes depend only on the number of inputs the fake has executed, so the same
//! action sequence always saves the same file, and a save after further input saves a different
//! one (a `999` comment names the count).

/// The fixture DXF saved after `n_inputs` executed inputs.
pub fn fixture_dxf(n_inputs: usize) -> String {
    let mut text = format!("999\ndeskbroker fake desktop: fixture saved after {n_inputs} inputs\n");
    text.push_str(
        "  0\nSECTION\n  2\nHEADER\n  9\n$ACADVER\n  1\nAC1009\n  9\n$INSUNITS\n 70\n4\n",
    );
    text.push_str("  0\nENDSEC\n  0\nSECTION\n  2\nENTITIES\n");
    let corners = [(0.0, 0.0), (100.0, 0.0), (100.0, 100.0), (0.0, 100.0)];
    for (corner_idx, &(x1, y1)) in corners.iter().enumerate() {
        let (x2, y2) = corners[(corner_idx + 1) % corners.len()];
        text.push_str(&format!(
            "  0\nLINE\n  8\n0\n 10\n{x1:.1}\n 20\n{y1:.1}\n 30\n0.0\n 11\n{x2:.1}\n 21\n{y2:.1}\n 31\n0.0\n"
        ));
    }
    text.push_str("  0\nENDSEC\n  0\nEOF\n");
    text
}
