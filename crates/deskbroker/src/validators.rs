//! The checkpoint validators this binary gives its broker (`BrokerConfig::validators`): the
//! broker's structural checks, then the scorer's own DXF reader (desk-cad), so a checkpointed
//! drawing is one the scorer can score. desk-broker itself links no CAD code.

use desk_broker::{ArtifactValidator, ArtifactValidators};
use desk_desktop::ArtifactFormat;

/// The structural checks and the scorer's DXF reader.
pub(crate) fn broker_validators() -> ArtifactValidators {
    ArtifactValidators::structural().with(ScorerDxf)
}

/// DXF: the bytes parse with the scorer's reader (`desk_cad::read_dxf_bytes`).
#[derive(Debug, Clone, Copy)]
struct ScorerDxf;

impl ArtifactValidator for ScorerDxf {
    fn format(&self) -> ArtifactFormat {
        ArtifactFormat::Dxf
    }

    fn check(&self, bytes: &[u8]) -> Result<(), String> {
        desk_cad::read_dxf_bytes(bytes)
            .map(|_| ())
            .map_err(|message| {
                format!(
                    "the scorer's DXF reader cannot parse the saved file ({message}); save again \
                 from the app, then checkpoint"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use desk_broker::BrokerError;

    use super::*;

    fn refusal(bytes: &[u8]) -> String {
        match broker_validators().validate(ArtifactFormat::Dxf, bytes) {
            Err(BrokerError::ArtifactInvalid(message)) => message,
            other => panic!("expected artifact_invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_dxf_passes_the_eof_check_then_the_scorers_reader() {
        let fixture = desk_desktop::fake_dxf::fixture_dxf(1);
        broker_validators()
            .validate(ArtifactFormat::Dxf, fixture.as_bytes())
            .unwrap();
        // Cut: the broker's EOF check refuses it first.
        let cut = refusal(&fixture.as_bytes()[..fixture.len() / 2]);
        assert!(
            cut.starts_with("the DXF does not end with its EOF group"),
            "{cut}"
        );
        // Ends with the EOF group, so only the scorer's reader can refuse it.
        let garbage = refusal(b"not a drawing\n  0\nEOF\n");
        assert!(
            garbage.starts_with("the scorer's DXF reader cannot parse the saved file (")
                && garbage.ends_with("); save again from the app, then checkpoint"),
            "{garbage}"
        );
        // The broker's structural checks alone let it through: the reader is what refuses.
        ArtifactValidators::structural()
            .validate(ArtifactFormat::Dxf, b"not a drawing\n  0\nEOF\n")
            .unwrap();
    }
}
