//! The probe's clipboard, as an app's copy and paste: `ctrl+v` converts CLIPBOARD to
//! `UTF8_STRING` and records what arrives as a `paste` event (its text in `char`); `ctrl+c`
//! takes CLIPBOARD with the text `probe copy <n>` (recorded as a `copy` event) and serves it
//! until another client takes it.

use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, EventMask, PropMode, SELECTION_NOTIFY_EVENT, SelectionNotifyEvent,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

use super::log::{KeyboardMap, ProbeEvent};

x11rb::atom_manager! {
    Atoms: AtomsCookie {
        CLIPBOARD,
        TARGETS,
        UTF8_STRING,
        PROBE_PASTE,
    }
}

const CONTROL_MASK: u16 = 1 << 2;

/// The probe window's clipboard state.
pub(super) struct ProbeClipboard {
    atoms: Atoms,
    window: u32,
    owned: Option<String>,
    n_copies: u32,
}

fn record(kind: &str, text: String) -> ProbeEvent {
    ProbeEvent {
        kind: kind.to_string(),
        root_x: 0,
        root_y: 0,
        button: None,
        keysym: None,
        keysym_name: None,
        char: Some(text),
        state: 0,
    }
}

impl ProbeClipboard {
    pub(super) fn new(conn: &RustConnection, window: u32) -> ProbeClipboard {
        let atoms = Atoms::new(conn).unwrap().reply().unwrap();
        ProbeClipboard {
            atoms,
            window,
            owned: None,
            n_copies: 0,
        }
    }

    /// What `event` does to the clipboard; the `copy` or `paste` record it produced, if any.
    pub(super) fn handle(
        &mut self,
        conn: &RustConnection,
        keyboard: &KeyboardMap,
        event: &Event,
    ) -> Result<Option<ProbeEvent>, Box<dyn std::error::Error>> {
        let atoms = self.atoms;
        match event {
            Event::KeyPress(key) if u16::from(key.state) & CONTROL_MASK != 0 => {
                match keyboard.keysym(key.detail, 0) {
                    0x76 => {
                        conn.convert_selection(
                            self.window,
                            atoms.CLIPBOARD,
                            atoms.UTF8_STRING,
                            atoms.PROBE_PASTE,
                            key.time,
                        )?;
                        conn.flush()?;
                        Ok(None)
                    }
                    0x63 => {
                        self.n_copies += 1;
                        let text = format!("probe copy {}", self.n_copies);
                        conn.set_selection_owner(self.window, atoms.CLIPBOARD, key.time)?;
                        conn.flush()?;
                        self.owned = Some(text.clone());
                        Ok(Some(record("copy", text)))
                    }
                    _ => Ok(None),
                }
            }
            Event::SelectionNotify(notify) if notify.requestor == self.window => {
                if notify.property == x11rb::NONE {
                    return Ok(Some(record("paste_refused", String::new())));
                }
                let reply = conn
                    .get_property(
                        true,
                        self.window,
                        notify.property,
                        AtomEnum::ANY,
                        0,
                        1 << 20,
                    )?
                    .reply()?;
                Ok(Some(record(
                    "paste",
                    String::from_utf8_lossy(&reply.value).into_owned(),
                )))
            }
            Event::SelectionClear(clear) if clear.selection == atoms.CLIPBOARD => {
                self.owned = None;
                Ok(None)
            }
            Event::SelectionRequest(request) => {
                let property = match (&self.owned, request.target) {
                    (Some(_), target) if target == atoms.TARGETS => {
                        let targets = [atoms.TARGETS, atoms.UTF8_STRING];
                        conn.change_property32(
                            PropMode::REPLACE,
                            request.requestor,
                            request.property,
                            AtomEnum::ATOM,
                            &targets,
                        )?;
                        request.property
                    }
                    (Some(text), target) if target == atoms.UTF8_STRING => {
                        conn.change_property8(
                            PropMode::REPLACE,
                            request.requestor,
                            request.property,
                            atoms.UTF8_STRING,
                            text.as_bytes(),
                        )?;
                        request.property
                    }
                    _ => x11rb::NONE,
                };
                let notify = SelectionNotifyEvent {
                    response_type: SELECTION_NOTIFY_EVENT,
                    sequence: 0,
                    time: request.time,
                    requestor: request.requestor,
                    selection: request.selection,
                    target: request.target,
                    property,
                };
                conn.send_event(false, request.requestor, EventMask::NO_EVENT, notify)?;
                conn.flush()?;
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}
