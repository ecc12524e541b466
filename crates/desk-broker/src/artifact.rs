//! Artifact validators: what a saved attempt file must be before a checkpoint accepts it, by the
//! format its profile names (`[attempt] format`), as [`ArtifactValidator`]s the embedding puts
//! in [`crate::BrokerConfig::validators`]. desk-broker links no CAD code: a check that needs it
//! (the scorer's DXF reader) is injected; the `deskbroker` binary adds desk-cad's.
//!
//! The broker's own, structural ([`ArtifactValidators::structural`], `BrokerConfig::new`'s):
//! `dxf`: an ASCII DXF must end with its `0`/`EOF` group (a truncated save fails even where a
//! parser would be lenient). `fcstd`: a zip with a bounded `Document.xml` holding a stored shape
//! or a TechDraw page (`fcstd.rs`). `dwg`: an AutoCAD 2018 DWG, `AC1032` with a file header that
//! decrypts to the DWG file id (`dwg.rs`). `any`: no check. Every validator of the format runs,
//! in order; a format other than `any` with none is refused (deny by default). Pure functions
//! of the bytes.

use std::sync::Arc;

use desk_desktop::ArtifactFormat;

pub(crate) mod dwg;
mod fcstd;
pub(crate) mod read;

use crate::error::BrokerError;

/// The sentinel that opens a binary DXF.
const BINARY_DXF_SENTINEL: &[u8] = b"AutoCAD Binary DXF\r\n\x1a\0";

/// A check a saved file of one format must pass before a checkpoint accepts it.
pub trait ArtifactValidator: Send + Sync + std::fmt::Debug {
    /// The format whose files it checks.
    fn format(&self) -> ArtifactFormat;

    /// `Ok` when `bytes` may be checkpointed; otherwise why not, in a sentence the client is
    /// answered (`artifact_invalid`), saying what to do.
    fn check(&self, bytes: &[u8]) -> Result<(), String>;
}

/// The validators a broker checks saved files with ([`crate::BrokerConfig::validators`]).
#[derive(Debug, Clone, Default)]
pub struct ArtifactValidators(Vec<Arc<dyn ArtifactValidator>>);

impl ArtifactValidators {
    /// The broker's own structural checks: DXF's EOF group, FCStd's document, DWG's header.
    pub fn structural() -> ArtifactValidators {
        ArtifactValidators(vec![
            Arc::new(DxfEofGroup),
            Arc::new(FcstdDocument),
            Arc::new(DwgHeader),
        ])
    }

    /// These, then `validator` for its format.
    pub fn with(mut self, validator: impl ArtifactValidator + 'static) -> ArtifactValidators {
        self.0.push(Arc::new(validator));
        self
    }

    /// Checks `bytes` with every validator of `format`, in order; `artifact_invalid` names
    /// what failed. `any` needs none; another format without one is refused.
    pub fn validate(&self, format: ArtifactFormat, bytes: &[u8]) -> Result<(), BrokerError> {
        if format == ArtifactFormat::Any {
            return Ok(());
        }
        let mut checked = false;
        for validator in self
            .0
            .iter()
            .filter(|validator| validator.format() == format)
        {
            validator
                .check(bytes)
                .map_err(BrokerError::ArtifactInvalid)?;
            checked = true;
        }
        if checked {
            Ok(())
        } else {
            let name = match format {
                ArtifactFormat::Any => "any",
                ArtifactFormat::Dxf => "dxf",
                ArtifactFormat::Fcstd => "fcstd",
                ArtifactFormat::Dwg => "dwg",
            };
            Err(BrokerError::ArtifactInvalid(format!(
                "this broker has no validator for {name} files, so it accepts none"
            )))
        }
    }
}

/// The structural checks alone ([`ArtifactValidators::structural`]), for tests.
#[cfg(test)]
pub(crate) fn validate(format: ArtifactFormat, bytes: &[u8]) -> Result<(), BrokerError> {
    ArtifactValidators::structural().validate(format, bytes)
}

/// The message of a validator's `artifact_invalid` refusal.
fn refusal(error: BrokerError) -> String {
    match error {
        BrokerError::ArtifactInvalid(message) => message,
        other => other.to_string(),
    }
}

/// DXF: binary, or ASCII ending with its `0`/`EOF` group.
#[derive(Debug, Clone, Copy)]
struct DxfEofGroup;

impl ArtifactValidator for DxfEofGroup {
    fn format(&self) -> ArtifactFormat {
        ArtifactFormat::Dxf
    }

    fn check(&self, bytes: &[u8]) -> Result<(), String> {
        if !bytes.starts_with(BINARY_DXF_SENTINEL) && !ends_with_eof_group(bytes) {
            return Err(
                "the DXF does not end with its EOF group (a truncated or unfinished save); save \
                 again from the app, then checkpoint"
                    .to_string(),
            );
        }
        Ok(())
    }
}

/// FCStd: `fcstd.rs`.
#[derive(Debug, Clone, Copy)]
struct FcstdDocument;

impl ArtifactValidator for FcstdDocument {
    fn format(&self) -> ArtifactFormat {
        ArtifactFormat::Fcstd
    }

    fn check(&self, bytes: &[u8]) -> Result<(), String> {
        fcstd::validate_fcstd(bytes).map_err(refusal)
    }
}

/// DWG: `dwg.rs`.
#[derive(Debug, Clone, Copy)]
struct DwgHeader;

impl ArtifactValidator for DwgHeader {
    fn format(&self) -> ArtifactFormat {
        ArtifactFormat::Dwg
    }

    fn check(&self, bytes: &[u8]) -> Result<(), String> {
        dwg::validate_dwg(bytes).map_err(refusal)
    }
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
