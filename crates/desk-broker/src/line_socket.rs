//! One request line, one answer line over a Unix socket: the exchange the observer
//! (`observer/serve.rs`, `observer/client.rs`) and the watchdog's readback
//! (`watchdog/readback.rs`) share. Each caller keeps its own peer rule, limits, timeouts and
//! the words of its refusals; this module only moves the lines.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The uid of the process at the other end of `stream` (`None`: the kernel did not say).
pub(crate) fn peer_uid(stream: &UnixStream) -> Option<u32> {
    nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .ok()
        .map(|credentials| credentials.uid())
}

/// Serves one exchange on an accepted `stream`: reads one request line of at most
/// `max_request` bytes, answers it with `answer` (or `{"error": ...}` when the line cannot be
/// read, is too long, or `answer` refuses it) and one newline. The error is the write's.
pub(crate) fn serve_one(
    stream: &UnixStream,
    timeout: Duration,
    max_request: u64,
    answer: impl FnOnce(&str) -> Result<Vec<u8>, String>,
) -> std::io::Result<()> {
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let mut line = String::new();
    let read = BufReader::new(stream.take(max_request)).read_line(&mut line);
    let answer = match read {
        Err(error) => Err(format!("cannot read the request: {error}")),
        Ok(_) if !line.ends_with('\n') => Err(format!(
            "the request is not one line of at most {max_request} bytes"
        )),
        Ok(_) => answer(&line),
    };
    let mut bytes = match answer {
        Ok(bytes) => bytes,
        Err(error) => serde_json::to_vec(&serde_json::json!({ "error": error }))
            .unwrap_or_else(|_| b"{}".to_vec()),
    };
    bytes.push(b'\n');
    let mut writer = stream;
    writer.write_all(&bytes)
}

/// Sets `stream`'s timeouts (an error: the reason's text).
pub(crate) fn set_timeouts(stream: &UnixStream, timeout: Duration) -> Result<(), String> {
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|error| format!("{error}"))
}

/// Sends `request` and one newline on `stream` and reads one answer line of at most
/// `max_answer` bytes (an error: the reason's text, "cannot send: ..." or "cannot read the
/// answer: ...").
pub(crate) fn exchange(
    stream: &UnixStream,
    mut request: Vec<u8>,
    max_answer: u64,
) -> Result<String, String> {
    request.push(b'\n');
    let mut writer = stream;
    writer
        .write_all(&request)
        .map_err(|error| format!("cannot send: {error}"))?;
    let mut line = String::new();
    BufReader::new(stream.take(max_answer))
        .read_line(&mut line)
        .map_err(|error| format!("cannot read the answer: {error}"))?;
    Ok(line)
}

/// The `error` of an answer that is `{"error": ...}` rather than a signed answer.
pub(crate) fn refusal(answer: &[u8]) -> Option<serde_json::Value> {
    match serde_json::from_slice(answer) {
        Ok(serde_json::Value::Object(mut map)) => map.remove("error"),
        _ => None,
    }
}
