//! The optional classifier over a pluggable HTTP endpoint (`docs/screenshot-gate.md`,
//! "Classifier"): the [`Classifier`] trait and [`HttpClassifier`], which POSTs the text OCR read
//! on the changed region (never the frame) to the endpoint the signed policy names and reads a
//! score back. One request per OCR run with text, under the policy's time bound; the answer must
//! name the model digest the policy pins. Any failure (no answer in time, a refused connection,
//! a status other than 200, an answer too large or not exactly the schema, another model) is a
//! [`GateError::Classifier`], which the gate turns into `insufficient_data`, never `allow`.
//!
//! The client speaks plain HTTP/1.1 to a loopback address only (the policy's lint refuses any
//! other): text read off the screen never crosses the network unencrypted. A classifier on
//! another host is reached through a local TLS proxy.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::GateError;

/// `schema_version` of a classifier request.
pub const REQUEST_SCHEMA: &str = "deskbroker.gate-classifier-request.v1";
/// `schema_version` of a classifier answer.
pub const RESPONSE_SCHEMA: &str = "deskbroker.gate-classifier-response.v1";
/// Largest classifier answer read, in bytes (headers and body).
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// A scorer of the text read on a frame.
pub trait Classifier: Send + Sync {
    /// The risk score of `text` in thousandths (0 to 1000), within `timeout`.
    fn score(&self, text: &str, timeout: Duration) -> Result<u32, GateError>;
}

/// What the gate sends: the text read, nothing else of the frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierRequest {
    /// [`REQUEST_SCHEMA`].
    pub schema_version: String,
    /// The words OCR read on the changed region, joined by single spaces in reading order.
    pub text: String,
}

/// What the classifier answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierResponse {
    /// [`RESPONSE_SCHEMA`].
    pub schema_version: String,
    /// SHA-256 (hex) of the model that scored; must be the policy's `model_sha256`.
    pub model_sha256: String,
    /// The score in thousandths, 0 to 1000.
    pub score_permille: u32,
}

/// An endpoint `http://<loopback host>:<port>/<path>`, parsed; why not, for a person. The
/// policy's lint calls this too, so the lint and the gate agree.
pub fn parse_endpoint(endpoint: &str) -> Result<(String, u16, String), String> {
    let rest = endpoint
        .strip_prefix("http://")
        .ok_or("must start with http:// (a loopback address; see docs/screenshot-gate.md)")?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or("must name a port (http://127.0.0.1:PORT/path)")?;
    let port: u16 = port
        .parse()
        .map_err(|_| "has a port that is not a number from 1 to 65535".to_string())?;
    if port == 0 {
        return Err("has port 0".to_string());
    }
    if !["127.0.0.1", "[::1]", "localhost"].contains(&host) {
        return Err("must be on a loopback host (127.0.0.1, [::1] or localhost)".to_string());
    }
    if path.len() > 256 || !path.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err("has a path that is not up to 256 printable ASCII characters".to_string());
    }
    Ok((host.to_string(), port, path.to_string()))
}

/// The classifier at an HTTP endpoint, pinned to one model digest.
#[derive(Debug, Clone)]
pub struct HttpClassifier {
    host: String,
    port: u16,
    path: String,
    model_sha256: String,
}

impl HttpClassifier {
    /// The classifier at `endpoint` (see [`parse_endpoint`]) whose answers must name
    /// `model_sha256`.
    pub fn new(endpoint: &str, model_sha256: &str) -> Result<HttpClassifier, GateError> {
        let (host, port, path) = parse_endpoint(endpoint)
            .map_err(|problem| GateError::Policy(format!("classifier endpoint {problem}")))?;
        Ok(HttpClassifier {
            host,
            port,
            path,
            model_sha256: model_sha256.to_string(),
        })
    }

    fn address(&self) -> Result<SocketAddr, GateError> {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        (host, self.port)
            .to_socket_addrs()
            .map_err(|error| GateError::Classifier(format!("cannot resolve the host: {error}")))?
            .find(|address| address.ip().is_loopback())
            .ok_or_else(|| GateError::Classifier("the host is not a loopback address".to_string()))
    }
}

impl Classifier for HttpClassifier {
    fn score(&self, text: &str, timeout: Duration) -> Result<u32, GateError> {
        let started = Instant::now();
        let failed = |what: &str, error: std::io::Error| {
            if matches!(
                error.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                GateError::Classifier(format!(
                    "no answer within {} ms ({what})",
                    timeout.as_millis()
                ))
            } else {
                GateError::Classifier(format!("{what}: {error}"))
            }
        };
        let body = serde_json::to_vec(&ClassifierRequest {
            schema_version: REQUEST_SCHEMA.to_string(),
            text: text.to_string(),
        })
        .map_err(|error| GateError::Classifier(format!("request: {error}")))?;
        let mut stream = TcpStream::connect_timeout(&self.address()?, timeout)
            .map_err(|error| failed("connect", error))?;
        let left = || {
            timeout
                .checked_sub(started.elapsed())
                .filter(|left| !left.is_zero())
                .ok_or_else(|| {
                    GateError::Classifier(format!("no answer within {} ms", timeout.as_millis()))
                })
        };
        stream
            .set_write_timeout(Some(left()?))
            .map_err(|error| failed("socket", error))?;
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.host,
            self.port,
            body.len()
        );
        // One write: a server that answers after its first read then finds the whole request
        // read, instead of closing on an unread body (which resets the connection, and the reset
        // can destroy its answer before this side reads it).
        let mut request = head.into_bytes();
        request.extend_from_slice(&body);
        stream
            .write_all(&request)
            .map_err(|error| failed("send", error))?;
        let mut answer = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            stream
                .set_read_timeout(Some(left()?))
                .map_err(|error| failed("socket", error))?;
            let n = stream
                .read(&mut chunk)
                .map_err(|error| failed("receive", error))?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&chunk[..n]);
            if answer.len() > MAX_RESPONSE_BYTES {
                return Err(GateError::Classifier(format!(
                    "the answer is larger than {MAX_RESPONSE_BYTES} bytes"
                )));
            }
        }
        let response = parse_response(&answer)?;
        if response.model_sha256 != self.model_sha256 {
            return Err(GateError::Classifier(
                "the answer names another model than the policy pins".to_string(),
            ));
        }
        Ok(response.score_permille)
    }
}

/// The body of an HTTP/1.1 answer with status 200 and an exact [`ClassifierResponse`].
fn parse_response(answer: &[u8]) -> Result<ClassifierResponse, GateError> {
    let bad = |what: &str| GateError::Classifier(what.to_string());
    let split = answer
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(|| bad("the answer has no end of headers"))?;
    let head = std::str::from_utf8(&answer[..split]).map_err(|_| bad("headers not UTF-8"))?;
    let status = head.lines().next().unwrap_or_default();
    let mut parts = status.split(' ');
    if !parts
        .next()
        .is_some_and(|version| version.starts_with("HTTP/1."))
        || parts.next() != Some("200")
    {
        return Err(bad("the classifier did not answer 200"));
    }
    if head.lines().any(|line| {
        line.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    }) {
        return Err(bad("a chunked answer is not accepted"));
    }
    let body = &answer[split + 4..];
    let response: ClassifierResponse = serde_json::from_slice(body)
        .map_err(|_| bad("the answer is not exactly the classifier response schema"))?;
    if response.schema_version != RESPONSE_SCHEMA {
        return Err(bad("the answer has another schema_version"));
    }
    if response.score_permille > 1000 {
        return Err(bad("the answer's score_permille is above 1000"));
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_loopback_http_with_a_port() {
        assert!(parse_endpoint("http://127.0.0.1:8080/v1/classify").is_ok());
        assert!(parse_endpoint("http://[::1]:9/x").is_ok());
        assert!(parse_endpoint("http://localhost:9").is_ok());
        for bad in [
            "https://127.0.0.1:8080/",
            "http://10.0.0.1:8080/",
            "http://example.com:80/",
            "http://127.0.0.1/",
            "http://127.0.0.1:0/",
            "http://127.0.0.1:99999/",
            "http://127.0.0.1:80/a b",
        ] {
            assert!(parse_endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_answer_is_exact_or_refused() {
        let ok = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{{\"schema_version\":\"{RESPONSE_SCHEMA}\",\
             \"model_sha256\":\"{}\",\"score_permille\":400}}",
            "a".repeat(64)
        );
        assert_eq!(parse_response(ok.as_bytes()).unwrap().score_permille, 400);
        let extra = ok.replace("400}", "400,\"text\":\"x\"}");
        assert!(parse_response(extra.as_bytes()).is_err());
        let over = ok.replace("400", "1001");
        assert!(parse_response(over.as_bytes()).is_err());
        let refused = ok.replace("200 OK", "500 Oops");
        assert!(parse_response(refused.as_bytes()).is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
    }
}
