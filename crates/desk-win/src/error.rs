//! The crate's one error type: what failed in the platform, the encoder or the stream.

/// Errors of the Windows worker.
#[derive(Debug, thiserror::Error)]
pub enum WinError {
    /// A Win32 call failed.
    #[error("{call} failed: {detail}")]
    Win32 {
        /// The function that failed.
        call: &'static str,
        /// What it reported (`GetLastError` or the condition).
        detail: String,
    },
    /// A captured frame could not be encoded.
    #[error("failed to encode the frame as PNG: {0}")]
    Encode(String),
    /// The protocol stream failed.
    #[error("failed to read or write the protocol stream: {0}")]
    Io(#[from] std::io::Error),
}
