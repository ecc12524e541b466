//! Unit tests of the extractors' header and path checks.

use axum::http::{HeaderMap, HeaderValue, header};

use super::check_content_type;

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
            error.code(),
            desk_contract::ErrorCode::InvalidRequest,
            "{refused}"
        );
    }
}
