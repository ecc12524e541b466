//! The OpenAPI 3.1 document served at `GET /v1/openapi.json`, generated from the contract's
//! types so it cannot drift from what the broker sends and accepts.
//!
//! Every schema comes from a `schemars::JsonSchema` derive on a `desk-contract` wire type
//! (feature `schemars`): request bodies as serde deserializes them, answers as serde serializes
//! them. The paths come from the route table in `openapi/table.rs` (method, path, summary,
//! credential, body and answer types, and the error codes the handler can answer with); each
//! code's statuses come from [`statuses`], the mapping `api_error.rs` applies, so an operation
//! documents every status its codes take. There is no checked-in copy to fall behind: clients
//! are generated from the served document (`python/tests/test_openapi_client.py` generates one
//! with `openapi-python-client` and runs a session through it). Two rewrites keep generated
//! clients sane: unit enums are string `enum`s, and each tagged variant has a title
//! (`DragAction`).
//!
//! Invariants: every route of [`crate::routes::ROUTES`] has exactly one operation (checked by a test);
//! component names are unique (two types of one name would fail [`document`]'s test).

mod table;

use std::sync::LazyLock;

use axum::http::StatusCode;
use desk_contract::ErrorCode;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use table::{Access, Answer, OPERATIONS, Operation, schema_of};

/// The document as served: generated once, pretty-printed.
static OPENAPI_JSON: LazyLock<String> = LazyLock::new(|| {
    // Serializing a `Value` (string keys only) cannot fail; an empty object would fail every test.
    serde_json::to_string_pretty(&document()).unwrap_or_else(|_| "{}".to_string())
});

/// The OpenAPI 3.1 document, as JSON text.
pub fn openapi_json() -> &'static str {
    &OPENAPI_JSON
}

/// The statuses an answer with `code` can carry (`api_error.rs`, [`crate::api_error::status`]).
/// `invalid_request` is also 405 on a method no operation has; no operation documents that, and
/// 413 (a body over the limit) only on operations that read a body.
pub fn statuses(code: ErrorCode, reads_body: bool) -> &'static [StatusCode] {
    match code {
        ErrorCode::InvalidRequest if reads_body => {
            &[StatusCode::BAD_REQUEST, StatusCode::PAYLOAD_TOO_LARGE]
        }
        ErrorCode::InvalidAction | ErrorCode::InvalidRequest | ErrorCode::InvalidParams => {
            &[StatusCode::BAD_REQUEST]
        }
        // 401 a missing or wrong credential, 403 a peer that is not admitted.
        ErrorCode::Unauthorized => &[StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN],
        ErrorCode::PolicyInvalid | ErrorCode::ProfileNotAllowed | ErrorCode::ClipboardDisabled => {
            &[StatusCode::FORBIDDEN]
        }
        ErrorCode::NotFound => &[StatusCode::NOT_FOUND],
        ErrorCode::LeaseExpired | ErrorCode::SessionKilled => &[StatusCode::GONE],
        ErrorCode::SessionBusy => &[StatusCode::TOO_MANY_REQUESTS],
        ErrorCode::CheckpointFailed
        | ErrorCode::ArtifactInvalid
        | ErrorCode::AppNotMaximized
        | ErrorCode::ResetUnstable
        | ErrorCode::ScreenshotUnknown
        | ErrorCode::ScreenshotStale
        | ErrorCode::PointOutsideImage
        | ErrorCode::AxObservationStale
        | ErrorCode::AxForeignWindow
        | ErrorCode::AxNotActionable
        | ErrorCode::DestinationNotApp
        | ErrorCode::DestinationProhibited
        | ErrorCode::ApprovalRequired
        | ErrorCode::ClipboardUnavailable => &[StatusCode::UNPROCESSABLE_ENTITY],
        ErrorCode::InputOutcomeUnknown | ErrorCode::Internal => {
            &[StatusCode::INTERNAL_SERVER_ERROR]
        }
        ErrorCode::Unsupported => &[StatusCode::NOT_IMPLEMENTED],
        ErrorCode::DesktopFailed
        | ErrorCode::ResourceLimit
        | ErrorCode::WorkspaceUnverified
        | ErrorCode::ClipboardOutcomeUnknown => &[StatusCode::BAD_GATEWAY],
        ErrorCode::SandboxUnavailable | ErrorCode::JournalUnavailable => {
            &[StatusCode::SERVICE_UNAVAILABLE]
        }
        // The control refusals and every other conflict.
        _ => &[StatusCode::CONFLICT],
    }
}

/// Schema generators: request bodies as deserialized, answers as serialized.
struct Generators {
    requests: SchemaGenerator,
    answers: SchemaGenerator,
}

impl Generators {
    fn new() -> Generators {
        let settings = SchemaSettings::draft2020_12().with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
        });
        Generators {
            requests: settings.clone().for_deserialize().into_generator(),
            answers: settings.for_serialize().into_generator(),
        }
    }

    /// The components of both generators, and the request-side renames. A type in both keeps
    /// one name when both contracts give the same schema; otherwise the request's schema is
    /// named `<Name>Input`, and so is every request type that refers to a renamed one.
    fn components(mut self) -> (Map<String, Value>, Vec<(String, String)>) {
        let mut components = self.answers.take_definitions(true);
        let requests = self.requests.take_definitions(true);
        let mut renamed: Vec<(String, String)> = Vec::new();
        loop {
            let n_renamed = renamed.len();
            for (name, schema) in &requests {
                let mut schema = schema.clone();
                rename_refs(&mut schema, &renamed);
                let differs = components.get(name).is_some_and(|answer| answer != &schema);
                if differs && !renamed.iter().any(|(known, _)| known == name) {
                    renamed.push((name.clone(), format!("{name}Input")));
                }
            }
            if renamed.len() == n_renamed {
                break;
            }
        }
        for (name, mut schema) in requests {
            rename_refs(&mut schema, &renamed);
            let name = renamed
                .iter()
                .find(|(known, _)| *known == name)
                .map_or(name, |(_, input)| input.clone());
            components.insert(name, schema);
        }
        (components, renamed)
    }
}

/// A unit enum's schema as schemars writes it when its variants have doc comments (a `oneOf` of
/// string constants, which client generators misread as "the first constant") becomes a string
/// `enum`, the variants' docs kept in its description.
fn string_enum(schema: &mut Value) {
    let Some(variants) = schema.get("oneOf").and_then(Value::as_array) else {
        return;
    };
    let mut names = Vec::new();
    let mut docs = Vec::new();
    for variant in variants {
        let Some(name) = variant["const"].as_str() else {
            return;
        };
        if let Some(doc) = variant["description"].as_str() {
            docs.push(format!("`{name}`: {doc}"));
        }
        names.push(json!(name));
    }
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    object.remove("oneOf");
    object.insert("type".into(), json!("string"));
    object.insert("enum".into(), Value::Array(names));
    if !docs.is_empty() {
        let described = object.get("description").and_then(Value::as_str);
        let text = described.map_or_else(String::new, |text| format!("{text}\n\n"));
        object.insert("description".into(), json!(text + &docs.join("\n")));
    }
}

/// Names each variant of a tagged enum (a `oneOf` of objects told apart by a constant `type` or
/// `kind`) `<Tag><Enum>`, e.g. `DragAction`: client generators name a model after its title,
/// and otherwise number the variants (`Action0`, `Action1`, ...), names that change whenever a
/// variant is added.
fn title_variants(components: &mut Map<String, Value>) {
    for (name, schema) in components.iter_mut() {
        let Some(variants) = schema.get_mut("oneOf").and_then(Value::as_array_mut) else {
            continue;
        };
        for variant in variants {
            let tag = ["type", "kind"]
                .iter()
                .find_map(|key| variant["properties"][*key]["const"].as_str())
                .map(pascal_case);
            if let (Some(tag), Some(object)) = (tag, variant.as_object_mut()) {
                object
                    .entry("title")
                    .or_insert_with(|| json!(format!("{tag}{name}")));
            }
        }
    }
}

fn pascal_case(snake: &str) -> String {
    snake
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// Points every `$ref` to a renamed component at its new name.
fn rename_refs(value: &mut Value, renamed: &[(String, String)]) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                if key == "$ref" {
                    let target = renamed.iter().find(|(name, _)| {
                        child.as_str() == Some(&format!("#/components/schemas/{name}"))
                    });
                    if let Some((_, input)) = target {
                        *child = json!(format!("#/components/schemas/{input}"));
                    }
                } else {
                    rename_refs(child, renamed);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rename_refs(item, renamed)),
        _ => {}
    }
}

/// The whole document.
pub(crate) fn document() -> Value {
    let mut generators = Generators::new();
    let mut paths = Map::new();
    for operation in OPERATIONS {
        let item = paths
            .entry(operation.path.to_string())
            .or_insert_with(|| json!({}));
        if let Some(item) = item.as_object_mut() {
            item.insert(
                operation.method.to_ascii_lowercase(),
                operation_object(operation, &mut generators),
            );
        }
    }
    // ErrorBody is every error's answer.
    let error_body = schema_of::<desk_contract::ErrorBody>(&mut generators.answers);
    let (mut components, renamed) = generators.components();
    components.values_mut().for_each(string_enum);
    title_variants(&mut components);
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "deskbroker",
            "version": "1",
            "description": table::DESCRIPTION,
        },
        "paths": paths,
        "components": {
            "securitySchemes": table::security_schemes(),
            "schemas": components,
        },
    });
    debug_assert_eq!(
        error_body.as_value(),
        &json!({"$ref": "#/components/schemas/ErrorBody"})
    );
    // Request bodies whose schema differs from the answer's of the same name point at the
    // `Input` copy.
    if let Some(paths) = document["paths"].as_object_mut() {
        for operation in paths
            .values_mut()
            .filter_map(Value::as_object_mut)
            .flat_map(|item| item.values_mut())
        {
            if let Some(body) = operation.get_mut("requestBody") {
                rename_refs(body, &renamed);
            }
        }
    }
    document
}

fn operation_object(operation: &Operation, generators: &mut Generators) -> Value {
    let mut object = Map::new();
    object.insert("operationId".into(), json!(operation.id));
    object.insert("summary".into(), json!(operation.summary));
    match operation.access {
        Access::Session => {
            object.insert("security".into(), json!([{"leaseToken": []}]));
        }
        Access::Operator => {
            object.insert(
                "security".into(),
                json!([{}, {"orchestrationCredential": []}]),
            );
        }
        Access::Reviewer => {
            object.insert("security".into(), json!([{"reviewerCredential": []}]));
        }
        Access::Approver => {
            object.insert("security".into(), json!([{"approverCredential": []}]));
        }
        Access::Open => {}
    }
    let mut parameters = Vec::new();
    if operation.path.contains("{id}") {
        parameters.push(json!({
            "name": "id", "in": "path", "required": true,
            "schema": {"type": "string"},
            "description": if operation.path.starts_with("/v1/reviews/") { "review id" } else { "session id" },
        }));
    }
    for parameter in operation.parameters {
        parameters.push(json!({
            "name": parameter.name,
            "in": if operation.path.contains(&format!("{{{}}}", parameter.name)) { "path" } else { "query" },
            "required": parameter.required,
            "schema": (parameter.schema)(),
            "description": parameter.description,
        }));
    }
    if !parameters.is_empty() {
        object.insert("parameters".into(), Value::Array(parameters));
    }
    if let Some(request) = operation.request {
        let schema = request(&mut generators.requests);
        object.insert(
            "requestBody".into(),
            json!({"required": true, "content": {"application/json": {"schema": schema}}}),
        );
    }
    let mut responses = Map::new();
    let success = match operation.answer {
        Answer::Json(schema) | Answer::Shot(schema) => {
            table::success(&operation.answer, schema(&mut generators.answers))
        }
        Answer::Ndjson(what) => json!({
            "description": format!("NDJSON, one {what} record per line"),
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        }),
        Answer::Text(media_type) => json!({
            "description": "success",
            "content": {media_type: {"schema": {"type": "string"}}},
        }),
        Answer::Document => json!({
            "description": "this document",
            "content": {"application/json": {"schema": {"type": "object"}}},
        }),
    };
    responses.insert("200".into(), success);
    for (status, codes) in error_statuses(operation) {
        let named: Vec<String> = codes
            .iter()
            .map(|code| match operation.note(*code) {
                Some(note) => format!("{code} ({note})"),
                None => code.to_string(),
            })
            .collect();
        responses.insert(
            status.as_u16().to_string(),
            json!({
                "description": format!("error; code one of {}", named.join(", ")),
                "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/ErrorBody"},
                }},
            }),
        );
    }
    Value::Object(
        object
            .into_iter()
            .chain([("responses".into(), Value::Object(responses))])
            .collect(),
    )
}

/// Each error status of `operation` with the codes that answer with it, by status.
fn error_statuses(operation: &Operation) -> Vec<(StatusCode, Vec<ErrorCode>)> {
    let mut by_status: Vec<(StatusCode, Vec<ErrorCode>)> = Vec::new();
    for code in operation.codes() {
        for status in statuses(code, operation.request.is_some()) {
            if *status == StatusCode::UNAUTHORIZED && !operation.takes_credential() {
                continue;
            }
            match by_status.iter_mut().find(|(known, _)| known == status) {
                Some((_, codes)) => {
                    if !codes.contains(&code) {
                        codes.push(code);
                    }
                }
                None => by_status.push((*status, vec![code])),
            }
        }
    }
    by_status.sort_by_key(|(status, _)| status.as_u16());
    by_status
}

#[cfg(test)]
mod tests;
