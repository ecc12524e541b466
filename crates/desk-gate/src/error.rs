//! The crate's one error type, [`GateError`].

/// Why a gate policy was refused, a frame could not be gated, or the OCR engine failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The gate policy is invalid (no pattern, an empty or invalid pattern, thresholds out of
    /// order or range, a zero bound).
    #[error("invalid screenshot gate policy: {0}")]
    Policy(String),
    /// The frame is larger than the policy's `max_frame_bytes`.
    #[error("the frame is {bytes} bytes, more than the gate's {max} bytes")]
    FrameTooLarge {
        /// The frame's size.
        bytes: u64,
        /// The policy's bound.
        max: u64,
    },
    /// The frame's header declares more pixels than the policy's `max_pixels` (a
    /// decompression bomb, refused before any pixel is decoded).
    #[error("the frame declares {width}x{height} pixels, more than the gate's {max}")]
    TooManyPixels {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// The policy's bound.
        max: u64,
    },
    /// The frame is not a PNG this gate can decode.
    #[error("the frame is not a decodable PNG: {0}")]
    Frame(String),
    /// The OCR engine is not installed (its program was not found).
    #[error("the OCR engine {0:?} is not installed")]
    EngineMissing(String),
    /// The OCR engine did not answer in time and was killed.
    #[error("the OCR engine took longer than {0} ms and was killed")]
    OcrTimeout(u64),
    /// The OCR engine failed or wrote more than its output bound.
    #[error("the OCR engine failed: {0}")]
    Ocr(String),
    /// The policy's classifier did not give a usable score (no answer in time, refused, an
    /// answer off the schema or naming another model).
    #[error("the classifier failed: {0}")]
    Classifier(String),
}
