//! Whose uid the watchdog runs under ([`WatchdogIdentity`]): what its readback and the kill
//! receipts it signs (`kill/receipts.rs`) name; it names nothing of the watchdog or the kill
//! path.

/// Whose uid the watchdog runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogIdentity {
    /// A uid of its own (a root broker's watchdog drops to it: `deskbroker watchdog`), which
    /// owns `<state_dir>.watchdog/` and the key, so no other non-root uid reads them.
    Own,
    /// The broker's uid (a broker that is not root cannot give it another): the broker's uid
    /// can read the watchdog's key.
    Shared,
}

impl WatchdogIdentity {
    /// `own` or `shared`, as the readback and the kill receipts name it.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchdogIdentity::Own => "own",
            WatchdogIdentity::Shared => "shared",
        }
    }
}
