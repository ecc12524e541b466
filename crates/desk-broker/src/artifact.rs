//! Artifact validators: what a saved attempt file must be before a checkpoint accepts it, by the
//! format its profile names (`[attempt] format`).
//!
//! `dxf`: an ASCII DXF must end with its `0`/`EOF` group (a truncated save fails even where the
//! parser would be lenient) and the bytes must parse with the scorer's own reader
//! (`desk_cad::read_dxf_bytes`), so a checkpointed drawing is one the scorer can score.
//! `fcstd`: a zip with a bounded `Document.xml` holding a stored shape or a TechDraw page
//! (`fcstd.rs`). `dwg`: an AutoCAD 2018 DWG, `AC1032` with a file header that decrypts to the
//! DWG file id (`dwg.rs`). `any`: no check. Pure functions of the bytes.

use desk_desktop::ArtifactFormat;

pub(crate) mod dwg;
mod fcstd;
pub(crate) mod read;

use crate::error::BrokerError;

/// The sentinel that opens a binary DXF.
const BINARY_DXF_SENTINEL: &[u8] = b"AutoCAD Binary DXF\r\n\x1a\0";

/// Checks `bytes` against `format`'s validator; `artifact_invalid` names what failed.
pub(crate) fn validate(format: ArtifactFormat, bytes: &[u8]) -> Result<(), BrokerError> {
    match format {
        ArtifactFormat::Any => Ok(()),
        ArtifactFormat::Dxf => validate_dxf(bytes),
        ArtifactFormat::Fcstd => fcstd::validate_fcstd(bytes),
        ArtifactFormat::Dwg => dwg::validate_dwg(bytes),
    }
}

fn validate_dxf(bytes: &[u8]) -> Result<(), BrokerError> {
    if !bytes.starts_with(BINARY_DXF_SENTINEL) && !ends_with_eof_group(bytes) {
        return Err(BrokerError::ArtifactInvalid(
            "the DXF does not end with its EOF group (a truncated or unfinished save); save \
             again from the app, then checkpoint"
                .to_string(),
        ));
    }
    desk_cad::read_dxf_bytes(bytes)
        .map(|_| ())
        .map_err(|message| {
            BrokerError::ArtifactInvalid(format!(
                "the scorer's DXF reader cannot parse the saved file ({message}); save again from \
             the app, then checkpoint"
            ))
        })
}

/// Whether the last two non-empty lines are the group code `0` and the value `EOF`.
fn ends_with_eof_group(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text
        .lines()
        .map(str::trim)
        .rev()
        .filter(|line| !line.is_empty());
    matches!((lines.next(), lines.next()), (Some("EOF"), Some("0")))
}

#[cfg(test)]
mod tests;
