//! Small pure helpers: clock, RFC 3339 formatting, ids and hashing.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::BrokerError;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

/// Formats milliseconds since the epoch as RFC 3339 UTC with millisecond precision.
pub(crate) fn rfc3339(epoch_ms: u64) -> String {
    let days = i64::try_from(epoch_ms / 86_400_000).unwrap_or(0);
    let ms_of_day = epoch_ms % 86_400_000;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1_000 % 60,
        ms_of_day % 1_000
    )
}

/// Lowercase hex SHA-256: desk-evidence's, the one the evidence chain uses.
pub use desk_evidence::sha256_hex;

/// Checks an identifier from a client: 1..=200 printable ASCII characters.
pub(crate) fn check_identifier(field: &str, value: &str) -> Result<(), BrokerError> {
    if value.is_empty() || value.len() > 200 || !value.chars().all(|c| c.is_ascii_graphic()) {
        return Err(BrokerError::InvalidRequest(format!(
            "{field} must be 1 to 200 printable ASCII characters without spaces"
        )));
    }
    Ok(())
}
