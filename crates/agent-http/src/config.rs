//! Timeouts and retry policy.

use std::time::Duration;

use agent_core::LlmError;
use serde::Deserialize;

/// How an [`HttpClient`](crate::HttpClient) connects, waits and retries.
/// Deserialisable from a provider's config table (`timeout_secs`, ...).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct HttpConfig {
    /// Time to establish a connection, in seconds.
    pub connect_timeout_secs: f64,
    /// Whole-request time for non-streamed calls; time to the response
    /// headers for streamed ones, in seconds.
    pub timeout_secs: f64,
    /// Longest silence between two chunks of a streamed body, in seconds.
    pub read_timeout_secs: f64,
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// First backoff delay, in milliseconds; doubles with every retry.
    pub initial_backoff_ms: u64,
    /// Upper bound of one backoff delay, in milliseconds.
    pub max_backoff_ms: u64,
    /// Upper bound of all waiting between attempts, in seconds; a
    /// `Retry-After` that would exceed it ends the retries.
    pub max_total_wait_secs: f64,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// Largest body of a non-streamed response (and most of an error
    /// body read), in bytes. A larger success body fails with a decode
    /// error naming this setting instead of being buffered.
    pub max_response_bytes: usize,
    /// Largest SSE line, SSE event (its data lines together) or NDJSON
    /// line of a streamed response, in bytes, for the decoders of
    /// [`HttpClient::post_sse`](crate::HttpClient::post_sse) and
    /// [`HttpClient::post_ndjson`](crate::HttpClient::post_ndjson). A
    /// larger one ends the stream with a decode error.
    pub max_event_bytes: usize,
    /// Longest a streamed response may take, in seconds, from its headers
    /// to its last byte; then the stream ends with a timeout error.
    pub stream_timeout_secs: f64,
    /// Most bytes of one streamed response, all events together; past it
    /// the stream ends with a decode error naming this setting, so a
    /// server that never stops cannot fill the memory.
    pub max_stream_bytes: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            connect_timeout_secs: 10.0,
            timeout_secs: 300.0,
            read_timeout_secs: 120.0,
            max_retries: 3,
            initial_backoff_ms: 500,
            max_backoff_ms: 30_000,
            max_total_wait_secs: 120.0,
            user_agent: concat!("agentry/", env!("CARGO_PKG_VERSION")).to_owned(),
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
            max_event_bytes: Self::DEFAULT_MAX_EVENT_BYTES,
            stream_timeout_secs: 600.0,
            max_stream_bytes: Self::DEFAULT_MAX_STREAM_BYTES,
        }
    }
}

impl HttpConfig {
    /// The default [`max_response_bytes`](Self::max_response_bytes): 16 MiB.
    pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
    /// The default [`max_event_bytes`](Self::max_event_bytes): 1 MiB, also
    /// the limit of [`SseDecoder::new`](crate::sse::SseDecoder::new) and
    /// [`NdjsonDecoder::new`](crate::ndjson::NdjsonDecoder::new).
    pub const DEFAULT_MAX_EVENT_BYTES: usize = 1024 * 1024;
    /// The default [`max_stream_bytes`](Self::max_stream_bytes): 64 MiB,
    /// far above any reply a model writes (a long answer with its events'
    /// framing is well under 1 MiB).
    pub const DEFAULT_MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;

    /// Checks every number: timeouts positive and finite, the wait budget
    /// not negative, the backoff bounds in order, the size caps above zero.
    /// The error names the key and the range, as `agentry.toml` spells it.
    pub fn validate(&self) -> Result<(), LlmError> {
        let out_of_range = |key: &str, value: &dyn std::fmt::Display, range: &str| {
            Err(LlmError::invalid_request(format!(
                "`{key} = {value}` is out of range: use {range}"
            )))
        };
        for (key, value) in [
            ("connect_timeout_secs", self.connect_timeout_secs),
            ("timeout_secs", self.timeout_secs),
            ("read_timeout_secs", self.read_timeout_secs),
            ("stream_timeout_secs", self.stream_timeout_secs),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return out_of_range(key, &value, "a positive number of seconds");
            }
        }
        if !(self.max_total_wait_secs.is_finite() && self.max_total_wait_secs >= 0.0) {
            return out_of_range(
                "max_total_wait_secs",
                &self.max_total_wait_secs,
                "0 or a positive number of seconds",
            );
        }
        if self.max_backoff_ms < self.initial_backoff_ms {
            return out_of_range(
                "max_backoff_ms",
                &self.max_backoff_ms,
                &format!("at least initial_backoff_ms ({})", self.initial_backoff_ms),
            );
        }
        for (key, value) in [
            ("max_response_bytes", self.max_response_bytes),
            ("max_event_bytes", self.max_event_bytes),
            ("max_stream_bytes", self.max_stream_bytes),
        ] {
            if value == 0 {
                return out_of_range(key, &value, "1 or more bytes");
            }
        }
        Ok(())
    }

    pub(crate) fn connect_timeout(&self) -> Duration {
        secs(self.connect_timeout_secs)
    }

    pub(crate) fn timeout(&self) -> Duration {
        secs(self.timeout_secs)
    }

    pub(crate) fn read_timeout(&self) -> Duration {
        secs(self.read_timeout_secs)
    }

    pub(crate) fn max_total_wait(&self) -> Duration {
        secs(self.max_total_wait_secs)
    }

    pub(crate) fn stream_timeout(&self) -> Duration {
        secs(self.stream_timeout_secs)
    }

    /// The delay before retry number `retry` (0-based): exponential backoff
    /// with full jitter, i.e. uniform in `[0, min(max, initial * 2^retry)]`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .initial_backoff_ms
            .saturating_mul(1u64 << retry.min(32))
            .min(self.max_backoff_ms);
        Duration::from_millis(fastrand::u64(0..=ceiling))
    }
}

/// Seconds as a duration: negative and NaN are zero, too large is
/// [`Duration::MAX`].
pub(crate) fn secs(value: f64) -> Duration {
    Duration::try_from_secs_f64(value.max(0.0)).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_out_of_range_are_errors_naming_the_key() {
        assert!(HttpConfig::default().validate().is_ok());
        let cases = [
            (
                HttpConfig {
                    timeout_secs: 0.0,
                    ..HttpConfig::default()
                },
                "`timeout_secs = 0`",
            ),
            (
                HttpConfig {
                    connect_timeout_secs: f64::NAN,
                    ..HttpConfig::default()
                },
                "`connect_timeout_secs = NaN`",
            ),
            (
                HttpConfig {
                    read_timeout_secs: -1.0,
                    ..HttpConfig::default()
                },
                "`read_timeout_secs = -1`",
            ),
            (
                HttpConfig {
                    stream_timeout_secs: f64::INFINITY,
                    ..HttpConfig::default()
                },
                "`stream_timeout_secs = inf`",
            ),
            (
                HttpConfig {
                    max_total_wait_secs: -0.5,
                    ..HttpConfig::default()
                },
                "`max_total_wait_secs = -0.5`",
            ),
            (
                HttpConfig {
                    initial_backoff_ms: 10,
                    max_backoff_ms: 5,
                    ..HttpConfig::default()
                },
                "at least initial_backoff_ms (10)",
            ),
            (
                HttpConfig {
                    max_response_bytes: 0,
                    ..HttpConfig::default()
                },
                "`max_response_bytes = 0`",
            ),
            (
                HttpConfig {
                    max_event_bytes: 0,
                    ..HttpConfig::default()
                },
                "`max_event_bytes = 0`",
            ),
        ];
        for (config, expected) in cases {
            let error = config.validate().err().map(|error| error.message).unwrap_or_default();
            assert!(
                error.contains(expected) && error.contains("out of range"),
                "{expected}: {error}"
            );
        }
    }

    #[test]
    fn backoff_is_jittered_below_an_exponential_ceiling() {
        let config = HttpConfig {
            initial_backoff_ms: 100,
            max_backoff_ms: 1000,
            ..HttpConfig::default()
        };
        for retry in 0..10 {
            let ceiling = (100u64 << retry).min(1000);
            for _ in 0..50 {
                assert!(config.backoff(retry) <= Duration::from_millis(ceiling));
            }
        }
        let spread: std::collections::HashSet<_> = (0..50).map(|_| config.backoff(3)).collect();
        assert!(spread.len() > 5, "full jitter spreads the delays");
    }
}
