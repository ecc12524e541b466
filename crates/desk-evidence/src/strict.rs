//! Strict JSON: a parser that turns bytes into a [`serde_json::Value`] and refuses what a
//! signed-evidence reader must never accept silently, plus the typed-record discipline.
//!
//! Rejected at any depth, with the path of the offending value: duplicate object keys, the
//! constants `NaN`/`Infinity`/`-Infinity`, integers outside ±(2^53 − 1) (RFC 8785 numbers are
//! doubles, so larger integers would change when canonicalized), numbers that overflow a finite
//! double, lone UTF-16 surrogates, raw control characters in strings, trailing bytes and nesting
//! deeper than [`MAX_DEPTH`].
//!
//! Typed records ([`from_value_exact`]) must deserialize with `deny_unknown_fields` semantics
//! and then serialize back to exactly the value read: the key set is exact (an `Option` field is
//! present as `null`, never absent) and no value was coerced.
//!
//! Invariant: a [`Value`] returned by [`parse_value`] passes [`check_value`].

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::error::{EvidenceError, StrictJsonProblem};

/// Deepest nesting of arrays and objects the parser accepts.
pub const MAX_DEPTH: usize = 64;

/// Largest integer magnitude accepted: 2^53 − 1, the largest exactly representable in a double
/// together with all its neighbours (I-JSON, RFC 7493).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Parses `bytes` as one strict JSON document.
pub fn parse_value(bytes: &[u8]) -> Result<Value, EvidenceError> {
    let text = std::str::from_utf8(bytes).map_err(|error| {
        EvidenceError::strict(
            "$",
            StrictJsonProblem::Syntax(format!("not UTF-8 at byte {}", error.valid_up_to())),
        )
    })?;
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        position: 0,
    };
    parser.skip_whitespace();
    let value = parser.value("$", 0)?;
    parser.skip_whitespace();
    if parser.position != parser.bytes.len() {
        return Err(parser.syntax("$", "trailing bytes after the document"));
    }
    Ok(value)
}

/// Parses `bytes` strictly and then as the exact typed record `T` (see [`from_value_exact`]).
pub fn parse_typed<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, EvidenceError> {
    from_value_exact(parse_value(bytes)?, "$")
}

/// Deserializes `value` (found at `root_path`) as `T` and requires that `T` serializes back to
/// exactly `value`, so unknown, missing or coerced fields are all refused with their path.
pub fn from_value_exact<T: DeserializeOwned + Serialize>(
    value: Value,
    root_path: &str,
) -> Result<T, EvidenceError> {
    let typed: T = match serde_path_to_error::deserialize(value.clone()) {
        Ok(typed) => typed,
        Err(error) => {
            let path = join_serde_path(root_path, &error.path().to_string());
            let message = error.inner().to_string();
            let problem = if let Some(rest) = message.strip_prefix("unknown field ") {
                StrictJsonProblem::UnknownField(first_quoted(rest))
            } else if let Some(rest) = message.strip_prefix("missing field ") {
                StrictJsonProblem::MissingField(first_quoted(rest))
            } else {
                StrictJsonProblem::WrongType(message)
            };
            return Err(EvidenceError::strict(path, problem));
        }
    };
    let round_trip = serde_json::to_value(&typed).map_err(|error| {
        EvidenceError::strict(root_path, StrictJsonProblem::NotExact(error.to_string()))
    })?;
    if let Some((path, message)) = first_difference(&value, &round_trip, root_path) {
        return Err(EvidenceError::strict(
            path,
            StrictJsonProblem::NotExact(message),
        ));
    }
    Ok(typed)
}

/// Checks an in-memory value for what [`parse_value`] would refuse: integers outside
/// ±(2^53 − 1) and non-finite numbers.
pub fn check_value(value: &Value) -> Result<(), EvidenceError> {
    check_value_at(value, "$")
}

fn check_value_at(value: &Value, path: &str) -> Result<(), EvidenceError> {
    match value {
        Value::Number(number) => check_number(number, path),
        Value::Array(items) => {
            for (item_idx, item) in items.iter().enumerate() {
                check_value_at(item, &format!("{path}[{item_idx}]"))?;
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                check_value_at(item, &child_path(path, key))?;
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

fn check_number(number: &Number, path: &str) -> Result<(), EvidenceError> {
    if let Some(unsigned) = number.as_u64() {
        if unsigned > MAX_SAFE_INTEGER {
            return Err(EvidenceError::strict(
                path,
                StrictJsonProblem::IntegerOutOfRange(unsigned.to_string()),
            ));
        }
    } else if let Some(signed) = number.as_i64() {
        if signed.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(EvidenceError::strict(
                path,
                StrictJsonProblem::IntegerOutOfRange(signed.to_string()),
            ));
        }
    } else if !number.as_f64().is_some_and(f64::is_finite) {
        return Err(EvidenceError::strict(
            path,
            StrictJsonProblem::NonFiniteNumber(number.to_string()),
        ));
    }
    Ok(())
}

/// The path of `key` inside the object at `parent`: `$.key`, or `$["odd key"]`.
pub(crate) fn child_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || character == '_');
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{key:?}]")
    }
}

fn join_serde_path(root: &str, serde_path: &str) -> String {
    if serde_path == "." || serde_path.is_empty() {
        root.to_string()
    } else if serde_path.starts_with('[') {
        format!("{root}{serde_path}")
    } else {
        format!("{root}.{serde_path}")
    }
}

fn first_quoted(text: &str) -> String {
    let trimmed = text.trim_start_matches('`');
    trimmed.split('`').next().unwrap_or(trimmed).to_string()
}

fn first_difference(read: &Value, typed: &Value, path: &str) -> Option<(String, String)> {
    match (read, typed) {
        (Value::Object(read_map), Value::Object(typed_map)) => {
            for key in read_map.keys() {
                if !typed_map.contains_key(key) {
                    return Some((child_path(path, key), format!("unknown key {key:?}")));
                }
            }
            for (key, typed_item) in typed_map {
                match read_map.get(key) {
                    None => {
                        return Some((child_path(path, key), format!("missing key {key:?}")));
                    }
                    Some(read_item) => {
                        if let Some(found) =
                            first_difference(read_item, typed_item, &child_path(path, key))
                        {
                            return Some(found);
                        }
                    }
                }
            }
            None
        }
        (Value::Array(read_items), Value::Array(typed_items)) => {
            if read_items.len() != typed_items.len() {
                return Some((path.to_string(), "array length differs".to_string()));
            }
            read_items.iter().zip(typed_items).enumerate().find_map(
                |(item_idx, (read_item, typed_item))| {
                    first_difference(read_item, typed_item, &format!("{path}[{item_idx}]"))
                },
            )
        }
        _ if read == typed => None,
        _ => Some((
            path.to_string(),
            format!("value {read} reads back as {typed}"),
        )),
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    // Invariant: `position` is always on a UTF-8 character boundary of `text`.
    position: usize,
}

impl Parser<'_> {
    fn syntax(&self, path: &str, message: &str) -> EvidenceError {
        EvidenceError::strict(
            path,
            StrictJsonProblem::Syntax(format!("{message} at byte {}", self.position)),
        )
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.position += 1;
        }
    }

    fn expect_literal(&mut self, literal: &str, path: &str) -> Result<(), EvidenceError> {
        if self.text[self.position..].starts_with(literal) {
            self.position += literal.len();
            Ok(())
        } else {
            Err(self.syntax(path, "unexpected character"))
        }
    }

    fn value(&mut self, path: &str, depth: usize) -> Result<Value, EvidenceError> {
        match self.peek() {
            None => Err(self.syntax(path, "unexpected end of input")),
            Some(b'{') => self.object(path, depth + 1),
            Some(b'[') => self.array(path, depth + 1),
            Some(b'"') => Ok(Value::String(self.string(path)?)),
            Some(b't') => self
                .expect_literal("true", path)
                .map(|()| Value::Bool(true)),
            Some(b'f') => self
                .expect_literal("false", path)
                .map(|()| Value::Bool(false)),
            Some(b'n') => self.expect_literal("null", path).map(|()| Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(path),
            Some(_) => {
                let rest = &self.text[self.position..];
                for constant in ["NaN", "Infinity", "+Infinity"] {
                    if rest.starts_with(constant) {
                        return Err(EvidenceError::strict(
                            path,
                            StrictJsonProblem::NonFiniteConstant(constant.to_string()),
                        ));
                    }
                }
                Err(self.syntax(path, "unexpected character"))
            }
        }
    }

    fn object(&mut self, path: &str, depth: usize) -> Result<Value, EvidenceError> {
        if depth > MAX_DEPTH {
            return Err(EvidenceError::strict(
                path,
                StrictJsonProblem::TooDeep(MAX_DEPTH),
            ));
        }
        self.position += 1;
        let mut map = Map::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.position += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.syntax(path, "expected an object key"));
            }
            let key = self.string(path)?;
            let item_path = child_path(path, &key);
            if map.contains_key(&key) {
                return Err(EvidenceError::strict(
                    item_path,
                    StrictJsonProblem::DuplicateKey(key),
                ));
            }
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.syntax(&item_path, "expected ':'"));
            }
            self.position += 1;
            self.skip_whitespace();
            let item = self.value(&item_path, depth)?;
            map.insert(key, item);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b'}') => {
                    self.position += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.syntax(path, "expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, path: &str, depth: usize) -> Result<Value, EvidenceError> {
        if depth > MAX_DEPTH {
            return Err(EvidenceError::strict(
                path,
                StrictJsonProblem::TooDeep(MAX_DEPTH),
            ));
        }
        self.position += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.position += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            let item_path = format!("{path}[{}]", items.len());
            items.push(self.value(&item_path, depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b']') => {
                    self.position += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.syntax(path, "expected ',' or ']'")),
            }
        }
    }

    fn hex4(&mut self, path: &str) -> Result<u32, EvidenceError> {
        let digits = self
            .text
            .get(self.position..self.position + 4)
            .filter(|digits| digits.bytes().all(|byte| byte.is_ascii_hexdigit()))
            .ok_or_else(|| self.syntax(path, "invalid \\u escape"))?;
        let code =
            u32::from_str_radix(digits, 16).map_err(|_| self.syntax(path, "invalid \\u escape"))?;
        self.position += 4;
        Ok(code)
    }

    fn string(&mut self, path: &str) -> Result<String, EvidenceError> {
        self.position += 1;
        let mut out = String::new();
        loop {
            let start = self.position;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.position += 1;
            }
            out.push_str(&self.text[start..self.position]);
            match self.peek() {
                None => return Err(self.syntax(path, "unterminated string")),
                Some(b'"') => {
                    self.position += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.position += 1;
                    let escape = self
                        .peek()
                        .ok_or_else(|| self.syntax(path, "unterminated escape"))?;
                    self.position += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape(path)?),
                        _ => return Err(self.syntax(path, "invalid escape")),
                    }
                }
                Some(_) => return Err(self.syntax(path, "raw control character in string")),
            }
        }
    }

    fn unicode_escape(&mut self, path: &str) -> Result<char, EvidenceError> {
        let first = self.hex4(path)?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.text[self.position..].starts_with("\\u") {
                return Err(self.syntax(path, "lone high surrogate"));
            }
            self.position += 2;
            let second = self.hex4(path)?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.syntax(path, "invalid low surrogate"));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else if (0xDC00..0xE000).contains(&first) {
            return Err(self.syntax(path, "lone low surrogate"));
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.syntax(path, "invalid code point"))
    }

    fn number(&mut self, path: &str) -> Result<Value, EvidenceError> {
        let start = self.position;
        if self.peek() == Some(b'-') {
            self.position += 1;
        }
        match self.peek() {
            Some(b'0') => self.position += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => {
                if self.text[self.position..].starts_with("Infinity") {
                    return Err(EvidenceError::strict(
                        path,
                        StrictJsonProblem::NonFiniteConstant("-Infinity".to_string()),
                    ));
                }
                return Err(self.syntax(path, "invalid number"));
            }
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.position += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.syntax(path, "invalid number"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integral = false;
            self.position += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.position += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.syntax(path, "invalid number"));
            }
            self.digits();
        }
        let token = &self.text[start..self.position];
        if integral {
            let out_of_range = || {
                EvidenceError::strict(
                    path,
                    StrictJsonProblem::IntegerOutOfRange(token.to_string()),
                )
            };
            let number = if let Some(digits) = token.strip_prefix('-') {
                let magnitude: u64 = digits.parse().map_err(|_| out_of_range())?;
                if magnitude > MAX_SAFE_INTEGER {
                    return Err(out_of_range());
                }
                // The magnitude is at most 2^53 - 1, so the negation fits an i64.
                Number::from(-i64::try_from(magnitude).map_err(|_| out_of_range())?)
            } else {
                let magnitude: u64 = token.parse().map_err(|_| out_of_range())?;
                if magnitude > MAX_SAFE_INTEGER {
                    return Err(out_of_range());
                }
                Number::from(magnitude)
            };
            return Ok(Value::Number(number));
        }
        let float: f64 = token
            .parse()
            .map_err(|_| self.syntax(path, "invalid number"))?;
        Number::from_f64(float)
            .filter(|_| float.is_finite())
            .map(Value::Number)
            .ok_or_else(|| {
                EvidenceError::strict(path, StrictJsonProblem::NonFiniteNumber(token.to_string()))
            })
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.position += 1;
        }
    }
}

#[cfg(test)]
mod tests;
