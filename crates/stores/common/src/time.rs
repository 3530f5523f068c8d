//! The timestamps of [`ConversationMeta`](agent_core::ConversationMeta):
//! RFC 3339 in UTC with milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as RFC 3339 in UTC with milliseconds (`2026-01-31T12:00:00.000Z`),
/// the timestamp format of [`ConversationMeta`](agent_core::ConversationMeta).
/// Such timestamps sort chronologically as text. Times before 1970 are
/// written as 1970.
pub fn utc_timestamp(time: SystemTime) -> String {
    let time = time.max(UNIX_EPOCH);
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The [`utc_timestamp`] of now: what stores write as `created_at` and
/// `updated_at`.
pub fn utc_now() -> String {
    utc_timestamp(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let time = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(utc_timestamp(time), "2023-11-14T22:13:20.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(utc_timestamp(leap), "2000-02-29T00:00:00.000Z");
        let end_of_year = UNIX_EPOCH + Duration::from_secs(1_767_225_599);
        assert_eq!(utc_timestamp(end_of_year), "2025-12-31T23:59:59.000Z");
    }
}
