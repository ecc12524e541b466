//! Unit tests of the extractors' header and path checks.

use axum::http::{HeaderMap, HeaderValue, header};

use super::check_content_type;
use crate::ids::{MAX_SESSION_ID_BYTES, is_plain_id};

#[test]
fn only_json_or_no_content_type_is_accepted() {
    let with = |value: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
        check_content_type(&headers)
    };
    assert!(check_content_type(&HeaderMap::new()).is_ok());
    for accepted in [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
    ] {
        assert!(with(accepted).is_ok(), "{accepted}");
    }
    for refused in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/jsonx",
        "",
    ] {
        let error = with(refused).expect_err(refused);
        assert_eq!(
            error.status_and_code().1,
            desk_contract::ErrorCode::InvalidRequest,
            "{refused}"
        );
    }
}

#[test]
fn session_ids_are_plain_tokens() {
    assert!(is_plain_id("s_0123456789abcdef0123456789abcdef"));
    assert!(is_plain_id("s_missing"));
    assert!(is_plain_id(&"a".repeat(MAX_SESSION_ID_BYTES)));
    for refused in [
        String::new(),
        "a".repeat(MAX_SESSION_ID_BYTES + 1),
        "s x".to_string(),
        "a.b".to_string(),
        "../etc".to_string(),
        "é".to_string(),
        "a\0b".to_string(),
    ] {
        assert!(!is_plain_id(&refused), "{refused:?}");
    }
}
