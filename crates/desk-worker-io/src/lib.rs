//! The worker protocol's I/O, shared by both desktop workers (`deskbroker-worker` on X11 and
//! `desk-win-worker` on Windows) and the broker's remote client: the one JSON-line serve loop
//! ([`serve_connection`]: read a request line, answer it with its frame as a binary attachment,
//! stop on `shutdown`), the TCP listener with mutual TLS ([`listen`]) and the TLS
//! configurations of both ends ([`tls`]). desk-contract holds the types and no I/O; this crate
//! holds the I/O and no desktop.
//!
//! Invariants: TCP is only ever served through TLS that requires a client certificate chaining
//! to the pinned CA (no plaintext listener, no optional client authentication); a request that
//! was read is handled exactly once whether or not its answer can be written; when a client
//! goes away without `shutdown`, the handler is told so it can release held input.

mod error;
pub mod listen;
mod serve;
pub mod tls;

pub use error::WorkerIoError;
pub use listen::{ListenArgs, TcpEndpoint};
pub use serve::{Duplex, Ended, Handler, Identity, serve_connection};

#[cfg(test)]
mod tests;
