//! The generated document: one operation per route, unique and resolvable component names,
//! every error code documented under every status it takes.

use std::collections::BTreeSet;

use desk_contract::ErrorCode;
use serde_json::Value;

use super::document;
use crate::routes::ROUTES;

fn refs(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                match (key.as_str(), child.as_str()) {
                    ("$ref", Some(target)) => {
                        found.insert(target.to_string());
                    }
                    _ => refs(child, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| refs(item, found)),
        _ => {}
    }
}

#[test]
fn every_route_has_exactly_one_operation() {
    let document = document();
    let mut documented = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_uppercase(), path.clone()));
        }
    }
    let routes: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|route| (route.method.to_string(), route.path.to_string()))
        .collect();
    assert_eq!(documented, routes);
    assert_eq!(super::OPERATIONS.len(), ROUTES.len());
}

#[test]
fn components_are_uniquely_named_and_every_reference_resolves() {
    let document = document();
    let schemas = document["components"]["schemas"].as_object().unwrap();
    for name in schemas.keys() {
        // schemars names a second type of the same name `Name2`.
        assert!(
            !name.ends_with(|c: char| c.is_ascii_digit()),
            "two types named {name}"
        );
    }
    let mut found = BTreeSet::new();
    refs(&document, &mut found);
    assert!(found.len() > 20, "{found:?}");
    for target in found {
        let name = target.strip_prefix("#/components/schemas/").unwrap();
        assert!(schemas.contains_key(name), "{target} does not resolve");
    }
    // The drag path's points are one named type, as is every action; each action variant has a
    // title of its own (a generated client's model name), none a component's name.
    assert!(schemas.contains_key("WirePoint"));
    let titles: BTreeSet<&str> = schemas["Action"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| variant["title"].as_str().unwrap())
        .collect();
    assert!(titles.contains("DragAction"), "{titles:?}");
    assert_eq!(
        titles.len(),
        schemas["Action"]["oneOf"].as_array().unwrap().len()
    );
    assert!(titles.iter().all(|title| !schemas.contains_key(*title)));
    // Unit enums are string enums, never a `oneOf` of constants.
    assert_eq!(
        schemas["SandboxMode"]["enum"],
        serde_json::json!(["on", "off"])
    );
    for (name, schema) in schemas {
        let constants = schema["oneOf"].as_array().is_some_and(|variants| {
            variants
                .iter()
                .any(|variant| variant.get("const").is_some())
        });
        assert!(!constants, "{name} is a oneOf of constants");
    }
}

#[test]
fn every_error_code_is_documented_with_every_status_it_takes() {
    let document = document();
    let mut named = BTreeSet::new();
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let reads_body = operation["requestBody"].is_object();
            for (status, response) in operation["responses"].as_object().unwrap() {
                let description = response["description"].as_str().unwrap();
                for code in ErrorCode::ALL {
                    if description.contains(code.as_str()) {
                        named.insert(code.as_str());
                        let statuses = super::statuses(*code, reads_body);
                        assert!(
                            statuses.iter().any(|known| known.as_str() == status),
                            "{code} under {status}"
                        );
                    }
                }
            }
        }
    }
    let all: BTreeSet<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
    assert_eq!(named, all);
}

/// The statuses the document gives each code are the ones `api_error::status` answers with:
/// one error of every kind, and a control refusal of every control code. And the core hides
/// the cause (`BrokerError::hides_cause`) of exactly the errors answered 5xx, but a control
/// refusal's message, which the broker builds, is always sent.
#[test]
fn statuses_agree_with_the_error_mapping() {
    use desk_desktop::BackendError;

    use desk_broker::BrokerError;

    let text = || "x".to_string();
    let desktop = |source| BrokerError::Desktop {
        operation: "test",
        source,
    };
    let mut errors = vec![
        BrokerError::MalformedAction(text()),
        BrokerError::InvalidRequest(text()),
        BrokerError::BodyTooLarge { limit: 1 },
        BrokerError::NotFound(text()),
        BrokerError::SequenceConflict(text()),
        BrokerError::InvalidState {
            operation: "test",
            reason: text(),
        },
        BrokerError::LeaseConflict(text()),
        BrokerError::Unauthorized(text()),
        BrokerError::Forbidden(text()),
        BrokerError::SessionBusy(text()),
        BrokerError::SessionKilled {
            session_id: text(),
            reason: text(),
        },
        BrokerError::LeaseExpired(text()),
        BrokerError::CheckpointRequired(text()),
        BrokerError::CheckpointFailed(text()),
        BrokerError::ArtifactInvalid(text()),
        BrokerError::AppNotMaximized(text()),
        BrokerError::ResetUnstable(text()),
        BrokerError::OutcomeUnknown {
            action_index: 0,
            source: None,
        },
        BrokerError::JournalUnavailable(text()),
        BrokerError::PolicyInvalid(text()),
        BrokerError::ProfileNotAllowed(text()),
        BrokerError::Internal(text()),
        desktop(BackendError::DesktopFailed(text())),
        desktop(BackendError::SandboxUnavailable(text())),
        desktop(BackendError::StartTimedOut(text())),
        desktop(BackendError::LimitsUnavailable(text())),
        desktop(BackendError::WorkspaceUnverified(vec![text()])),
        desktop(BackendError::AccessibilityUnavailable(text())),
        desktop(BackendError::AxStale(text())),
        desktop(BackendError::AxForeignWindow(text())),
        desktop(BackendError::AxNotActionable(text())),
        desktop(BackendError::AxProviderBusy(text())),
        desktop(BackendError::DestinationNotApp(text())),
        desktop(BackendError::DestinationProhibited(text())),
        desktop(BackendError::ResourceLimit(text())),
    ];
    // The codes the broker refuses control and program requests with (`control_status`).
    let control_codes = [
        ErrorCode::InvalidParams,
        ErrorCode::ControlBusy,
        ErrorCode::ControlStopped,
        ErrorCode::ControlStaleGeneration,
        ErrorCode::ControlObserveOnly,
        ErrorCode::ScreenshotUnknown,
        ErrorCode::ScreenshotStale,
        ErrorCode::PointOutsideImage,
        ErrorCode::AxObservationStale,
        ErrorCode::AxForeignWindow,
        ErrorCode::AxNotActionable,
        ErrorCode::DestinationNotApp,
        ErrorCode::DestinationProhibited,
        ErrorCode::ApprovalRequired,
        ErrorCode::InsufficientData,
        ErrorCode::Unsupported,
        ErrorCode::ClipboardDisabled,
        ErrorCode::ClipboardUnavailable,
        ErrorCode::ClipboardOutcomeUnknown,
    ];
    errors.extend(control_codes.map(|code| BrokerError::Control {
        code,
        message: text(),
    }));
    for error in errors {
        let (status, code) = (crate::api_error::status(&error), error.code());
        let control = matches!(error, BrokerError::Control { .. });
        assert_eq!(
            error.hides_cause(),
            status.is_server_error() && !control,
            "{error:?}"
        );
        assert!(
            super::statuses(code, true).contains(&status),
            "{error:?} answers {status} {code}, which the document does not give {code}"
        );
    }
}
