//! Unit tests of canonical bytes and signatures, including RFC 8785 vectors.

use super::*;

fn jcs(input: &str) -> String {
    let value = strict::parse_value(input.as_bytes()).expect("vector parses");
    String::from_utf8(canonical_bytes(&value).expect("canonicalizes")).expect("UTF-8")
}

#[test]
fn rfc8785_number_formatting() {
    // RFC 8785 section 3.2.2.3 and appendix B.
    assert_eq!(
        jcs(r#"{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]}"#),
        r#"{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}"#
    );
    assert_eq!(
        jcs("[-0.0, 1.0, 100, 1e21, 1e20]"),
        "[0,1,100,1e+21,100000000000000000000]"
    );
}

#[test]
fn rfc8785_key_order_by_utf16_code_units() {
    // RFC 8785 section 3.2.3: sorting on UTF-16 code units, not code points.
    let input = r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#;
    let output = jcs(input);
    let keys: Vec<String> = match strict::parse_value(output.as_bytes()).expect("output parses") {
        Value::Object(map) => {
            // `Map` may be sorted itself, so read keys in textual order from the output instead.
            let mut positions: Vec<(usize, String)> = map
                .keys()
                .map(|key| {
                    (
                        output
                            .find(&format!(
                                "{}:",
                                serde_json::to_string(key).unwrap_or_default()
                            ))
                            .unwrap_or(usize::MAX),
                        key.clone(),
                    )
                })
                .collect();
            positions.sort();
            positions.into_iter().map(|(_, key)| key).collect()
        }
        other => panic!("expected an object, got {other}"),
    };
    assert_eq!(
        keys,
        [
            "\r",
            "1",
            "\u{80}",
            "\u{f6}",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}"
        ]
    );
}

#[test]
fn rfc8785_string_escapes() {
    // Only the mandatory escapes; everything else is literal UTF-8.
    assert_eq!(
        jcs(
            r#"{"literals":[null,true,false],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"}"#
        ),
        "{\"literals\":[null,true,false],\"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
    );
}

#[test]
fn canonical_bytes_refuse_unsafe_integers() {
    assert!(canonical_bytes(&serde_json::json!({"n": 1_u64 << 60})).is_err());
    assert!(canonical_bytes(&serde_json::json!({"n": (1_u64 << 53) - 1})).is_ok());
}

#[test]
fn envelope_round_trip_and_tamper() {
    let key = SigningKey::from_bytes(&[7; 32]);
    let envelope = Envelope::sign(&serde_json::json!({"b": 1, "a": "x"}), &key).expect("signs");
    let bytes = envelope.canonical_bytes().expect("canonical");
    let parsed = Envelope::parse(&bytes).expect("parses");
    parsed.verify(&key.verifying_key()).expect("verifies");
    let mut altered = parsed.clone();
    altered
        .payload
        .insert("b".to_string(), serde_json::json!(2));
    assert!(altered.verify(&key.verifying_key()).is_err());
    let other = SigningKey::from_bytes(&[8; 32]);
    assert!(parsed.verify(&other.verifying_key()).is_err());
    assert!(Envelope::sign(&serde_json::json!([1]), &key).is_err());
    assert!(Envelope::parse(br#"{"payload":{},"signature_b64":"","x":1}"#).is_err());
}

#[test]
fn keys_round_trip_through_files() {
    let directory = tempfile::tempdir().expect("tempdir");
    let key = SigningKey::generate().expect("generates");
    let private_path = directory.path().join("key.pem");
    let public_path = directory.path().join("key.pub.pem");
    key.write(&private_path).expect("writes private key");
    key.verifying_key()
        .write(&public_path)
        .expect("writes public key");
    assert!(
        key.write(&private_path).is_err(),
        "write refuses to overwrite"
    );
    let read_back = SigningKey::read(&private_path).expect("reads private key");
    assert_eq!(read_back.verifying_key(), key.verifying_key());
    assert_eq!(
        VerifyingKey::read(&public_path).expect("reads public key"),
        key.verifying_key()
    );
    let raw_path = directory.path().join("key.b64");
    std::fs::write(&raw_path, STANDARD.encode(key.verifying_key().to_bytes())).expect("writes raw");
    assert_eq!(
        VerifyingKey::read(&raw_path).expect("reads raw"),
        key.verifying_key()
    );
    assert!(!format!("{key:?}").contains(&hex::encode([7_u8; 32])));
}
