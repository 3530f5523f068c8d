//! Timeouts and retry policy.

use std::time::Duration;

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
        }
    }
}

impl HttpConfig {
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

fn secs(value: f64) -> Duration {
    Duration::try_from_secs_f64(value.max(0.0)).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
