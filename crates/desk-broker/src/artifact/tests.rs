//! The structural DXF validator against the fixture drawing and its truncations, and how a
//! broker's validators combine (the scorer's reader is tested where it is injected, in
//! `deskbroker`).

use desk_desktop::ArtifactFormat;

use super::{ArtifactValidator, ArtifactValidators, validate};
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
}

#[test]
fn every_validator_of_the_format_runs_and_a_format_without_one_is_refused() {
    #[derive(Debug)]
    struct Refuses;
    impl ArtifactValidator for Refuses {
        fn format(&self) -> ArtifactFormat {
            ArtifactFormat::Dxf
        }
        fn check(&self, _bytes: &[u8]) -> Result<(), String> {
            Err("the injected reader refused it".to_string())
        }
    }
    let fixture = desk_desktop::fake_dxf::fixture_dxf(1);
    let validators = ArtifactValidators::structural().with(Refuses);
    match validators.validate(ArtifactFormat::Dxf, fixture.as_bytes()) {
        Err(BrokerError::ArtifactInvalid(message)) => {
            assert_eq!(message, "the injected reader refused it")
        }
        other => panic!("{other:?}"),
    }
    // The structural check runs first: a truncated file is refused with its message.
    match validators.validate(ArtifactFormat::Dxf, &fixture.as_bytes()[..10]) {
        Err(BrokerError::ArtifactInvalid(message)) => {
            assert!(message.contains("EOF group"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let none = ArtifactValidators::default();
    none.validate(ArtifactFormat::Any, b"anything").unwrap();
    match none.validate(ArtifactFormat::Fcstd, b"anything") {
        Err(BrokerError::ArtifactInvalid(message)) => {
            assert!(message.contains("no validator for fcstd"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}
