//! The session display's CLIPBOARD selection as UTF-8 text, in Rust over x11rb (no `xclip`):
//! the payload travels only in the worker protocol's JSON, never in a command line.
//! Over 400 lines: both sides of the selection protocol (the owner and the requestor) share
//! one endpoint, its atoms and its deadline; split, each half would repeat them.
//!
//! A write starts an owner thread with a connection of its own: it takes CLIPBOARD with a real
//! server timestamp, confirms it owns it, answers the write, then serves `SelectionRequest`s
//! (`TARGETS`, `UTF8_STRING`, `TEXT`, `text/plain;charset=utf-8`) until another client takes
//! the selection (`SelectionClear`), which is also how the next write replaces it. The text is
//! served in one property; a text larger than the display takes in one request is refused
//! before anything changes (no `INCR` serving). A read converts CLIPBOARD to `UTF8_STRING` on a
//! window of its own, accepting an `INCR` transfer, and never transfers more than the ceiling.
//!
//! Invariants: every operation ends within `DEADLINE_MS`; a write that failed before the
//! selection owner was set changed nothing (`ClipboardUnavailable`); once it was set, a
//! failure is an unknown outcome and is never retried here; a read sends no input and changes
//! no selection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use desk_contract::clipboard::{
    CEILING_BYTES, ClipboardText, ClipboardWritten, DEADLINE_MS, check_write, read_cap, truncate,
};
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, PropMode, Property,
    SELECTION_NOTIFY_EVENT, SelectionNotifyEvent, SelectionRequestEvent, Window, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;
use x11rb::{CURRENT_TIME, NONE};

use crate::error::X11Error;

x11rb::atom_manager! {
    /// The atoms of the clipboard protocol.
    Atoms: AtomsCookie {
        CLIPBOARD,
        TARGETS,
        UTF8_STRING,
        TEXT,
        INCR,
        TEXT_PLAIN_UTF8: b"text/plain;charset=utf-8",
        DESK_CLIPBOARD,
    }
}

/// Bytes a `ChangeProperty` request needs besides its data (with the BIG-REQUESTS length).
const CHANGE_PROPERTY_OVERHEAD: usize = 28;

fn deadline() -> Instant {
    Instant::now() + Duration::from_millis(DEADLINE_MS)
}

fn unavailable(message: impl Into<String>) -> X11Error {
    X11Error::ClipboardUnavailable(message.into())
}

/// A connection and an unmapped window of its own that receives property changes.
struct Endpoint {
    conn: RustConnection,
    window: Window,
    atoms: Atoms,
}

impl Endpoint {
    fn open(display: Option<&str>) -> Result<Endpoint, X11Error> {
        let (conn, screen_idx) =
            RustConnection::connect(display).map_err(|source| X11Error::Connect {
                display: display.unwrap_or("$DISPLAY").to_string(),
                source,
            })?;
        let root = conn
            .setup()
            .roots
            .get(screen_idx)
            .map(|screen| screen.root)
            .ok_or_else(|| {
                X11Error::InvalidRequest(format!("screen {screen_idx} does not exist"))
            })?;
        let atoms = Atoms::new(&conn)
            .map_err(X11Error::conn("intern clipboard atoms"))?
            .reply()
            .map_err(X11Error::reply("intern clipboard atoms"))?;
        let window = conn
            .generate_id()
            .map_err(X11Error::reply_or_id("create the clipboard window"))?;
        conn.create_window(
            0,
            window,
            root,
            0,
            0,
            1,
            1,
            0,
            WindowClass::INPUT_ONLY,
            0,
            &CreateWindowAux::new().event_mask(EventMask::PROPERTY_CHANGE),
        )
        .map_err(X11Error::conn("create the clipboard window"))?;
        conn.flush()
            .map_err(X11Error::conn("create the clipboard window"))?;
        Ok(Endpoint {
            conn,
            window,
            atoms,
        })
    }

    /// The first event `wanted` accepts, polling until `until`.
    fn wait_for<T>(
        &self,
        until: Instant,
        what: &str,
        mut wanted: impl FnMut(Event) -> Option<T>,
    ) -> Result<T, X11Error> {
        loop {
            match self
                .conn
                .poll_for_event()
                .map_err(X11Error::conn("wait for a clipboard event"))?
            {
                Some(event) => {
                    if let Some(found) = wanted(event) {
                        return Ok(found);
                    }
                }
                None if Instant::now() >= until => {
                    return Err(unavailable(format!(
                        "{what} did not happen within {DEADLINE_MS} ms"
                    )));
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }

    /// A server timestamp: the time of a zero-length append to the window's own property.
    fn server_time(&self, until: Instant) -> Result<u32, X11Error> {
        self.conn
            .change_property8(
                PropMode::APPEND,
                self.window,
                self.atoms.DESK_CLIPBOARD,
                AtomEnum::STRING,
                &[],
            )
            .map_err(X11Error::conn("read the server time"))?;
        self.conn
            .flush()
            .map_err(X11Error::conn("read the server time"))?;
        let window = self.window;
        self.wait_for(until, "a server timestamp", |event| match event {
            Event::PropertyNotify(notify) if notify.window == window => Some(notify.time),
            _ => None,
        })
    }
}

/// Reads the clipboard's text, at most `max_output_bytes` of it (an exact prefix at a
/// character boundary, with the whole length). An empty clipboard (no owner) reads as "".
pub fn read(display: Option<&str>, max_output_bytes: u64) -> Result<ClipboardText, X11Error> {
    let cap = read_cap(Some(max_output_bytes))
        .map_err(|error| X11Error::InvalidRequest(error.to_string()))?;
    let until = deadline();
    let endpoint = Endpoint::open(display)?;
    let (conn, window, atoms) = (&endpoint.conn, endpoint.window, endpoint.atoms);
    let owner = conn
        .get_selection_owner(atoms.CLIPBOARD)
        .map_err(X11Error::conn("read the clipboard owner"))?
        .reply()
        .map_err(X11Error::reply("read the clipboard owner"))?
        .owner;
    if owner == NONE {
        return Ok(truncate("", cap));
    }
    conn.convert_selection(
        window,
        atoms.CLIPBOARD,
        atoms.UTF8_STRING,
        atoms.DESK_CLIPBOARD,
        CURRENT_TIME,
    )
    .map_err(X11Error::conn("convert the clipboard"))?;
    conn.flush()
        .map_err(X11Error::conn("convert the clipboard"))?;
    let property =
        endpoint.wait_for(until, "the clipboard owner's answer", |event| match event {
            Event::SelectionNotify(notify) if notify.requestor == window => Some(notify.property),
            _ => None,
        })?;
    if property == NONE {
        return Err(unavailable("the clipboard's owner offers no UTF-8 text"));
    }
    let bytes = read_property(&endpoint, property, until)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| unavailable("the clipboard's text is not valid UTF-8"))?;
    if text.contains('\0') {
        return Err(unavailable(
            "the clipboard's text holds NUL; NUL is refused",
        ));
    }
    Ok(truncate(&text, cap))
}

fn over_ceiling(size: u64) -> X11Error {
    unavailable(format!(
        "the clipboard's text ({size} bytes or more) is over the {CEILING_BYTES}-byte ceiling"
    ))
}

/// Words to ask for so that a property of up to the ceiling comes whole.
const CEILING_WORDS: u32 = 4 * 1024 * 1024 + 1;
const _: () = assert!(CEILING_WORDS as u64 * 4 > CEILING_BYTES);

/// The converted property's bytes, deleted as read; an `INCR` transfer chunk by chunk.
fn read_property(endpoint: &Endpoint, property: Atom, until: Instant) -> Result<Vec<u8>, X11Error> {
    let (conn, window, atoms) = (&endpoint.conn, endpoint.window, endpoint.atoms);
    let get = |delete: bool, words: u32| {
        conn.get_property(delete, window, property, AtomEnum::ANY, 0, words)
            .map_err(X11Error::conn("read the clipboard property"))?
            .reply()
            .map_err(X11Error::reply("read the clipboard property"))
    };
    let head = get(false, 0)?;
    if head.type_ != atoms.INCR {
        if u64::from(head.bytes_after) > CEILING_BYTES {
            let _ = conn.delete_property(window, property);
            return Err(over_ceiling(u64::from(head.bytes_after)));
        }
        return Ok(get(true, CEILING_WORDS)?.value);
    }
    // INCR: deleting the announcement starts the transfer; each new value is one chunk, and
    // an empty one ends it.
    get(true, 1)?;
    conn.flush()
        .map_err(X11Error::conn("start an incremental clipboard transfer"))?;
    let mut data = Vec::new();
    loop {
        endpoint.wait_for(until, "the next clipboard chunk", |event| match event {
            Event::PropertyNotify(notify)
                if notify.window == window
                    && notify.atom == property
                    && notify.state == Property::NEW_VALUE =>
            {
                Some(())
            }
            _ => None,
        })?;
        let chunk = get(true, CEILING_WORDS)?;
        conn.flush()
            .map_err(X11Error::conn("read an incremental clipboard chunk"))?;
        if chunk.value.is_empty() {
            return Ok(data);
        }
        data.extend_from_slice(&chunk.value);
        let size = data.len() as u64 + u64::from(chunk.bytes_after);
        if size > CEILING_BYTES {
            return Err(over_ceiling(size));
        }
    }
}

/// Makes `text` the clipboard's content, served by an owner thread until another client takes
/// the clipboard. Refused before anything changes when the text breaks the limits or is larger
/// than this display takes in one request.
pub fn write(display: Option<&str>, text: String) -> Result<ClipboardWritten, X11Error> {
    check_write(&text).map_err(|error| X11Error::InvalidRequest(error.to_string()))?;
    let byte_length = text.len() as u64;
    let (sender, receiver) = channel();
    let cancelled = Arc::new(AtomicBool::new(false));
    let display = display.map(str::to_string);
    let thread_cancelled = Arc::clone(&cancelled);
    std::thread::Builder::new()
        .name("desk-clipboard-owner".to_string())
        .spawn(move || own(display.as_deref(), &text, &sender, &thread_cancelled))
        .map(drop)
        .map_err(|error| unavailable(format!("failed to start the clipboard owner: {error}")))?;
    match receiver.recv_timeout(Duration::from_millis(DEADLINE_MS)) {
        Ok(Ok(())) => Ok(ClipboardWritten { byte_length }),
        Ok(Err(error)) => Err(error),
        Err(RecvTimeoutError::Timeout) => {
            // The owner may still be about to take the clipboard: it checks this first.
            cancelled.store(true, Ordering::SeqCst);
            Err(X11Error::ClipboardOutcomeUnknown(format!(
                "the clipboard owner did not confirm within {DEADLINE_MS} ms"
            )))
        }
        Err(RecvTimeoutError::Disconnected) => Err(X11Error::ClipboardOutcomeUnknown(
            "the clipboard owner ended without an answer".to_string(),
        )),
    }
}

/// The owner thread: takes the clipboard, reports, serves until replaced.
fn own(
    display: Option<&str>,
    text: &str,
    report: &Sender<Result<(), X11Error>>,
    cancelled: &AtomicBool,
) {
    let endpoint = match take(display, text, cancelled) {
        Ok(endpoint) => endpoint,
        Err(error) => {
            let _ = report.send(Err(error));
            return;
        }
    };
    if report.send(Ok(())).is_err() {
        // The write gave up waiting: its answer said the outcome is unknown; keep serving what
        // the clipboard now holds.
        tracing::warn!("clipboard owner confirmed after the write's deadline");
    }
    tracing::info!(byte_length = text.len(), "clipboard owned");
    match serve(&endpoint, text) {
        Ok(()) => tracing::info!("clipboard taken by another client"),
        Err(error) => tracing::warn!(%error, "clipboard owner stopped"),
    }
}

/// Takes CLIPBOARD and confirms the server recorded this window as its owner.
fn take(display: Option<&str>, text: &str, cancelled: &AtomicBool) -> Result<Endpoint, X11Error> {
    let until = deadline();
    let endpoint = Endpoint::open(display)?;
    let limit = endpoint
        .conn
        .maximum_request_bytes()
        .saturating_sub(CHANGE_PROPERTY_OVERHEAD);
    if text.len() > limit {
        return Err(unavailable(format!(
            "{} bytes is more than this display takes in one transfer ({limit} bytes)",
            text.len()
        )));
    }
    let time = endpoint.server_time(until)?;
    if cancelled.load(Ordering::SeqCst) {
        return Err(unavailable(
            "the write was abandoned before the clipboard changed",
        ));
    }
    let (conn, window, clipboard) = (&endpoint.conn, endpoint.window, endpoint.atoms.CLIPBOARD);
    let unknown = |error: X11Error| X11Error::ClipboardOutcomeUnknown(error.to_string());
    conn.set_selection_owner(window, clipboard, time)
        .map_err(X11Error::conn("take the clipboard"))
        .map_err(unknown)?;
    let owner = conn
        .get_selection_owner(clipboard)
        .map_err(X11Error::conn("confirm the clipboard owner"))
        .map_err(unknown)?
        .reply()
        .map_err(X11Error::reply("confirm the clipboard owner"))
        .map_err(unknown)?
        .owner;
    if owner != window {
        return Err(X11Error::ClipboardOutcomeUnknown(
            "another client owned the clipboard right after it was taken".to_string(),
        ));
    }
    Ok(endpoint)
}

/// Answers requests until the clipboard is taken by another client.
fn serve(endpoint: &Endpoint, text: &str) -> Result<(), X11Error> {
    loop {
        let event = endpoint
            .conn
            .wait_for_event()
            .map_err(X11Error::conn("serve the clipboard"))?;
        match event {
            Event::SelectionClear(clear) if clear.selection == endpoint.atoms.CLIPBOARD => {
                return Ok(());
            }
            Event::SelectionRequest(request) => answer(endpoint, text, &request)?,
            _ => {}
        }
    }
}

/// Answers one `SelectionRequest`: the targets, the text, or a refusal (property `None`).
fn answer(
    endpoint: &Endpoint,
    text: &str,
    request: &SelectionRequestEvent,
) -> Result<(), X11Error> {
    let (conn, atoms) = (&endpoint.conn, endpoint.atoms);
    let operation = "answer a clipboard request";
    // An obsolete requestor names no property: the target is the property.
    let property = if request.property == NONE {
        request.target
    } else {
        request.property
    };
    let texts = [atoms.UTF8_STRING, atoms.TEXT, atoms.TEXT_PLAIN_UTF8];
    let served = if request.selection != atoms.CLIPBOARD {
        false
    } else if request.target == atoms.TARGETS {
        let mut targets = vec![atoms.TARGETS];
        targets.extend(texts);
        conn.change_property32(
            PropMode::REPLACE,
            request.requestor,
            property,
            AtomEnum::ATOM,
            &targets,
        )
        .map_err(X11Error::conn(operation))?;
        true
    } else if texts.contains(&request.target) {
        // TEXT is answered in its UTF-8 encoding.
        let kind = if request.target == atoms.TEXT {
            atoms.UTF8_STRING
        } else {
            request.target
        };
        conn.change_property8(
            PropMode::REPLACE,
            request.requestor,
            property,
            kind,
            text.as_bytes(),
        )
        .map_err(X11Error::conn(operation))?;
        true
    } else {
        false
    };
    let notify = SelectionNotifyEvent {
        response_type: SELECTION_NOTIFY_EVENT,
        sequence: 0,
        time: request.time,
        requestor: request.requestor,
        selection: request.selection,
        target: request.target,
        property: if served { property } else { NONE },
    };
    conn.send_event(false, request.requestor, EventMask::NO_EVENT, notify)
        .map_err(X11Error::conn(operation))?;
    conn.flush().map_err(X11Error::conn(operation))
}
