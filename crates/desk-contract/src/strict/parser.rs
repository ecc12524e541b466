//! The strict JSON parser proper: a recursive descent over UTF-8 text with a bounded depth.
//!
//! The path of the value being parsed is kept as a stack of segments and rendered only when an
//! error is reported, so parsing costs O(input) however deep or wide the document is.
//!
//! Invariant: `position` is always on a UTF-8 character boundary of `text`, and recursion never
//! exceeds [`MAX_DEPTH`] + 1 frames of `value`.

use serde_json::{Map, Number, Value};

use super::limits::{MAX_DEPTH, MAX_SAFE_INTEGER, child_path, clip, clip_path};
use crate::error::{StrictJsonError, StrictJsonProblem};

/// Parses `bytes` as one strict JSON document.
pub(super) fn parse(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    let text = std::str::from_utf8(bytes).map_err(|error| {
        StrictJsonError::new(
            "$",
            StrictJsonProblem::Syntax(format!("not UTF-8 at byte {}", error.valid_up_to())),
        )
    })?;
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        position: 0,
        path: Vec::new(),
    };
    parser.skip_whitespace();
    if parser.peek().is_none() {
        return Err(StrictJsonError::new(
            "$",
            StrictJsonProblem::Syntax("empty document".to_string()),
        ));
    }
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.position != parser.bytes.len() {
        return Err(parser.syntax("trailing bytes after the document"));
    }
    Ok(value)
}

enum Segment {
    Key(String),
    Index(usize),
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    // Invariant: `position` is always on a UTF-8 character boundary of `text`.
    position: usize,
    path: Vec<Segment>,
}

impl Parser<'_> {
    fn render_path(&self) -> String {
        let mut path = "$".to_string();
        for segment in &self.path {
            path = match segment {
                Segment::Key(key) => child_path(&path, key),
                Segment::Index(index) => format!("{path}[{index}]"),
            };
        }
        clip_path(&path)
    }

    fn fail(&self, problem: StrictJsonProblem) -> StrictJsonError {
        StrictJsonError::new(self.render_path(), problem)
    }

    fn syntax(&self, message: &str) -> StrictJsonError {
        self.fail(StrictJsonProblem::Syntax(format!(
            "{message} at byte {}",
            self.position
        )))
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.position += 1;
        }
    }

    fn expect_literal(&mut self, literal: &str) -> Result<(), StrictJsonError> {
        if self.text[self.position..].starts_with(literal) {
            self.position += literal.len();
            Ok(())
        } else {
            Err(self.syntax("unexpected character"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, StrictJsonError> {
        match self.peek() {
            None => Err(self.syntax("unexpected end of input")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.expect_literal("true").map(|()| Value::Bool(true)),
            Some(b'f') => self.expect_literal("false").map(|()| Value::Bool(false)),
            Some(b'n') => self.expect_literal("null").map(|()| Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => {
                let rest = &self.text[self.position..];
                for constant in ["NaN", "Infinity", "+Infinity"] {
                    if rest.starts_with(constant) {
                        return Err(
                            self.fail(StrictJsonProblem::NonFiniteConstant(constant.to_string()))
                        );
                    }
                }
                Err(self.syntax("unexpected character"))
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, StrictJsonError> {
        if depth > MAX_DEPTH {
            return Err(self.fail(StrictJsonProblem::TooDeep(MAX_DEPTH)));
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
                return Err(self.syntax("expected an object key"));
            }
            let key = self.string()?;
            self.path.push(Segment::Key(key.clone()));
            if map.contains_key(&key) {
                return Err(self.fail(StrictJsonProblem::DuplicateKey(clip(&key))));
            }
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.syntax("expected ':'"));
            }
            self.position += 1;
            self.skip_whitespace();
            let item = self.value(depth)?;
            self.path.pop();
            map.insert(key, item);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b'}') => {
                    self.position += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.syntax("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, StrictJsonError> {
        if depth > MAX_DEPTH {
            return Err(self.fail(StrictJsonProblem::TooDeep(MAX_DEPTH)));
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
            self.path.push(Segment::Index(items.len()));
            items.push(self.value(depth)?);
            self.path.pop();
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b']') => {
                    self.position += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.syntax("expected ',' or ']'")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, StrictJsonError> {
        let digits = self
            .text
            .get(self.position..self.position + 4)
            .filter(|digits| digits.bytes().all(|byte| byte.is_ascii_hexdigit()))
            .ok_or_else(|| self.syntax("invalid \\u escape"))?;
        let code =
            u32::from_str_radix(digits, 16).map_err(|_| self.syntax("invalid \\u escape"))?;
        self.position += 4;
        Ok(code)
    }

    fn string(&mut self) -> Result<String, StrictJsonError> {
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
                None => return Err(self.syntax("unterminated string")),
                Some(b'"') => {
                    self.position += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.position += 1;
                    let escape = self
                        .peek()
                        .ok_or_else(|| self.syntax("unterminated escape"))?;
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
                        b'u' => out.push(self.unicode_escape()?),
                        _ => {
                            // Step back so that `position` stays on a character boundary.
                            self.position -= 1;
                            return Err(self.syntax("invalid escape"));
                        }
                    }
                }
                Some(_) => return Err(self.syntax("raw control character in string")),
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, StrictJsonError> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.text[self.position..].starts_with("\\u") {
                return Err(self.syntax("lone high surrogate"));
            }
            self.position += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.syntax("invalid low surrogate"));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else if (0xDC00..0xE000).contains(&first) {
            return Err(self.syntax("lone low surrogate"));
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid code point"))
    }

    fn number(&mut self) -> Result<Value, StrictJsonError> {
        let start = self.position;
        if self.peek() == Some(b'-') {
            self.position += 1;
        }
        match self.peek() {
            Some(b'0') => self.position += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => {
                if self.text[self.position..].starts_with("Infinity") {
                    return Err(self.fail(StrictJsonProblem::NonFiniteConstant(
                        "-Infinity".to_string(),
                    )));
                }
                return Err(self.syntax("invalid number"));
            }
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.position += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.syntax("invalid number"));
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
                return Err(self.syntax("invalid number"));
            }
            self.digits();
        }
        let token = &self.text[start..self.position];
        if integral {
            return self.integer(token);
        }
        let float: f64 = token.parse().map_err(|_| self.syntax("invalid number"))?;
        Number::from_f64(float)
            .filter(|_| float.is_finite())
            .map(Value::Number)
            .ok_or_else(|| self.fail(StrictJsonProblem::NonFiniteNumber(clip(token))))
    }

    fn integer(&self, token: &str) -> Result<Value, StrictJsonError> {
        let out_of_range = || self.fail(StrictJsonProblem::IntegerOutOfRange(clip(token)));
        let (negative, digits) = match token.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, token),
        };
        // More than 16 digits is beyond 2^53 - 1 whatever they are; this also bounds `parse`.
        if digits.len() > 16 {
            return Err(out_of_range());
        }
        let magnitude: u64 = digits.parse().map_err(|_| out_of_range())?;
        if magnitude > MAX_SAFE_INTEGER {
            return Err(out_of_range());
        }
        let number = if negative {
            // The magnitude is at most 2^53 - 1, so the negation fits an i64.
            Number::from(-i64::try_from(magnitude).map_err(|_| out_of_range())?)
        } else {
            Number::from(magnitude)
        };
        Ok(Value::Number(number))
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.position += 1;
        }
    }
}
