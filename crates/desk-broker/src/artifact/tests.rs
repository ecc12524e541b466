//! The DXF validator against the fixture drawing and its truncations.

use desk_desktop::ArtifactFormat;

use super::validate;
use crate::error::BrokerError;

#[test]
fn a_complete_dxf_passes_and_any_truncation_fails() {
    let fixture = desk_desktop::fake_dxf::fixture_dxf(1);
    validate(ArtifactFormat::Dxf, fixture.as_bytes()).unwrap();
    for cut in [fixture.len() / 3, fixture.len() / 2, fixture.len() - 5] {
        let truncated = &fixture.as_bytes()[..cut];
        let error = validate(ArtifactFormat::Dxf, truncated).unwrap_err();
        assert!(matches!(error, BrokerError::ArtifactInvalid(_)), "{error}");
        validate(ArtifactFormat::Any, truncated).unwrap();
    }
    let garbage = b"not a drawing\n  0\nEOF\n";
    assert!(matches!(
        validate(ArtifactFormat::Dxf, garbage),
        Err(BrokerError::ArtifactInvalid(_))
    ));
}
