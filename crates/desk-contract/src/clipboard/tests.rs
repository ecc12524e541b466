//! The clipboard's limits, by table: write checks, read caps, truncation and the read query.

use super::*;

#[test]
fn writes_by_table() {
    let ceiling = usize::try_from(CEILING_BYTES).unwrap();
    let cases: Vec<(&str, String, Result<(), ClipboardLimitError>)> = vec![
        ("empty clears", String::new(), Ok(())),
        (
            "unicode and line endings",
            "a\r\nb\rc\n文本🙂".to_string(),
            Ok(()),
        ),
        ("NUL", "a\0b".to_string(), Err(ClipboardLimitError::Nul(1))),
        (
            "leading NUL",
            "\0".to_string(),
            Err(ClipboardLimitError::Nul(0)),
        ),
        ("exactly the ceiling", "x".repeat(ceiling), Ok(())),
        (
            "ceiling + 1",
            "x".repeat(ceiling + 1),
            Err(ClipboardLimitError::OverCeiling(CEILING_BYTES + 1)),
        ),
        (
            "over the ceiling with a NUL: the size decides first",
            format!("\0{}", "x".repeat(ceiling)),
            Err(ClipboardLimitError::OverCeiling(CEILING_BYTES + 1)),
        ),
    ];
    for (name, text, expected) in cases {
        assert_eq!(check_write(&text), expected, "{name}");
    }
}

#[test]
fn read_caps_by_table() {
    let cases = [
        (None, Ok(65_536)),
        (Some(1), Ok(1)),
        (Some(20), Ok(20)),
        (Some(1_048_576), Ok(1_048_576)),
        (
            Some(1_048_577),
            Err(ClipboardLimitError::ReadCap(1_048_577)),
        ),
        (
            Some(2 * 1_048_576),
            Err(ClipboardLimitError::ReadCap(2_097_152)),
        ),
        (Some(0), Err(ClipboardLimitError::ReadCap(0))),
    ];
    for (requested, expected) in cases {
        assert_eq!(read_cap(requested), expected, "{requested:?}");
    }
}

#[test]
fn truncation_by_table() {
    let big = "y".repeat(100 * 1024);
    let cases: Vec<(&str, &str, u64, &str, bool)> = vec![
        ("fits", "hello", 64, "hello", false),
        ("exact", "hello", 5, "hello", false),
        ("cut", "hello", 3, "hel", true),
        ("empty", "", 64, "", false),
        // "é" is 2 bytes: a cap inside it cuts before it, never inside.
        ("char boundary", "aé", 2, "a", true),
        ("4-byte char", "🙂🙂", 7, "🙂", true),
        ("cap below the first char", "🙂", 3, "", true),
    ];
    for (name, text, cap, prefix, truncated) in cases {
        let read = truncate(text, cap);
        assert_eq!(read.text, prefix, "{name}");
        assert_eq!(read.byte_length, text.len() as u64, "{name}");
        assert_eq!(read.truncated, truncated, "{name}");
        assert!(text.starts_with(&read.text), "{name}: an exact prefix");
    }
    let read = truncate(&big, read_cap(None).unwrap());
    assert_eq!(read.text.len(), 65_536);
    assert_eq!(read.byte_length, 102_400);
    assert!(read.truncated);
}

#[test]
fn queries_by_table() {
    let token = |owner: &str, generation| {
        Some(ControlToken {
            owner: owner.to_string(),
            generation,
        })
    };
    let ok = [
        (None, None, None),
        (Some(""), None, None),
        (Some("max_output_bytes=20"), Some(20), None),
        (Some("owner=agent&generation=2"), None, token("agent", 2)),
        (
            Some("generation=3&max_output_bytes=0&owner=a"),
            Some(0),
            token("a", 3),
        ),
    ];
    for (query, max_output_bytes, control) in ok {
        assert_eq!(
            parse_query(query),
            Ok(ClipboardQuery {
                max_output_bytes,
                control
            }),
            "{query:?}"
        );
    }
    let refused = [
        ("max_bytes=10", "unknown query parameter"),
        ("max_output_bytes=1&max_output_bytes=2", "given twice"),
        ("max_output_bytes=-1", "not a decimal number"),
        ("max_output_bytes=+1", "not a decimal number"),
        ("max_output_bytes=010", "not a decimal number"),
        ("max_output_bytes=", "not a decimal number"),
        ("max_output_bytes=99999999999999999", "not a decimal number"),
        ("owner=a", "give both or neither"),
        ("generation=1", "give both or neither"),
    ];
    for (query, says) in refused {
        let error = parse_query(Some(query)).unwrap_err().to_string();
        assert!(error.contains(says), "{query}: {error}");
    }
}
