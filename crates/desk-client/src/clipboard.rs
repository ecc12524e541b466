//! The task-scoped clipboard routes: `GET` and `PUT /v1/sessions/{id}/clipboard`.

use desk_contract::clipboard::{ClipboardText, ClipboardWriteRequest, ClipboardWritten};
use desk_contract::control::ControlToken;
use hyper::Method;

use crate::{Client, ClientError, session_path};

impl Client {
    /// `GET /v1/sessions/{id}/clipboard`: at most `max_output_bytes` of the clipboard's text
    /// (the broker's default, 64 KiB, when `None`), with the control token once the session
    /// is claimed.
    pub async fn clipboard_read(
        &self,
        session_id: &str,
        max_output_bytes: Option<u64>,
        control: Option<&ControlToken>,
    ) -> Result<ClipboardText, ClientError> {
        let operation = "clipboard_read";
        let mut path = session_path(operation, session_id, "/clipboard")?;
        let mut pairs = Vec::new();
        if let Some(cap) = max_output_bytes {
            pairs.push(format!("max_output_bytes={cap}"));
        }
        if let Some(token) = control {
            let plain = token
                .owner
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.~".contains(c));
            if !plain {
                return Err(ClientError::Request {
                    operation,
                    message: "the control owner is not a plain query value".to_string(),
                });
            }
            pairs.push(format!("owner={}", token.owner));
            pairs.push(format!("generation={}", token.generation));
        }
        if !pairs.is_empty() {
            path = format!("{path}?{}", pairs.join("&"));
        }
        self.call(operation, Method::GET, &path, None).await
    }

    /// `PUT /v1/sessions/{id}/clipboard`: replaces the clipboard's text. A
    /// `clipboard_outcome_unknown` answer leaves the clipboard unknown; never resend blindly.
    pub async fn clipboard_write(
        &self,
        session_id: &str,
        request: &ClipboardWriteRequest,
    ) -> Result<ClipboardWritten, ClientError> {
        let operation = "clipboard_write";
        let path = session_path(operation, session_id, "/clipboard")?;
        let body = Self::json(operation, request)?;
        self.call(operation, Method::PUT, &path, Some(body)).await
    }
}
