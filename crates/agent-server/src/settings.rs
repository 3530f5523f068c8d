//! [`ServeSettings`]: the server's keys and limits as one serde table
//! (`[serve]` of `agentry.toml`), and [`Server::settings`], which applies it.

use std::num::NonZeroU32;
use std::time::Duration;

use serde::Deserialize;

use crate::{
    ApiKeys, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_ENDED_RUNS_PER_KEY, DEFAULT_MAX_RUNS_PER_KEY, DEFAULT_MAX_SESSIONS_PER_KEY,
    DEFAULT_REQUESTS_PER_MINUTE, DEFAULT_SHUTDOWN_GRACE, KeyFormatError, Server,
};

/// The `[serve]` table: API keys and limits of `agentry serve`.
///
/// ```toml
/// [serve]
/// # printf %s YOUR_KEY | sha256sum    (keys are stored as hashes only)
/// api_keys = ["sha256:85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa"]
/// max_body_bytes = 1048576       # 413 above it
/// max_runs_per_key = 8           # 429 above it
/// requests_per_minute = 600      # per key; 429 with Retry-After above it (0: no limit)
/// drain_secs = 0                 # /readyz says 503 this long before the listener closes
/// shutdown_grace_secs = 30       # runs may finish this long at shutdown, then are cancelled
/// header_read_timeout_secs = 10  # a request's headers must arrive within it (idle keep-alive too)
/// body_timeout_secs = 30         # a request's body must arrive within it (408 past it)
/// max_connections = 1024         # more connections wait to be accepted
/// max_ended_runs_per_key = 100   # ended runs kept for GET /v1/runs/{id}, per key
/// max_sessions_per_key = 1000    # 409 above it
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// The API keys, as `sha256:` hashes.
    pub api_keys: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Runs one key may have in flight.
    pub max_runs_per_key: usize,
    /// Requests one key may send a minute (0: no limit).
    pub requests_per_minute: u32,
    /// Seconds `/readyz` answers 503 at shutdown before the listener closes.
    pub drain_secs: u64,
    /// Seconds runs may go on at shutdown before they are cancelled.
    pub shutdown_grace_secs: u64,
    /// Seconds a client has to send a request's headers; an idle
    /// keep-alive connection is closed after as long (at least 1).
    pub header_read_timeout_secs: u64,
    /// Seconds a client has to send a request's body once its headers
    /// arrived (408 past it; at least 1).
    pub body_timeout_secs: u64,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// Ended runs kept per key for `GET /v1/runs/{id}`.
    pub max_ended_runs_per_key: usize,
    /// Sessions one key may have (409 above it).
    pub max_sessions_per_key: usize,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            api_keys: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_runs_per_key: DEFAULT_MAX_RUNS_PER_KEY,
            requests_per_minute: DEFAULT_REQUESTS_PER_MINUTE,
            drain_secs: 0,
            shutdown_grace_secs: DEFAULT_SHUTDOWN_GRACE.as_secs(),
            header_read_timeout_secs: DEFAULT_HEADER_READ_TIMEOUT.as_secs(),
            body_timeout_secs: DEFAULT_BODY_TIMEOUT.as_secs(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_ended_runs_per_key: DEFAULT_MAX_ENDED_RUNS_PER_KEY,
            max_sessions_per_key: DEFAULT_MAX_SESSIONS_PER_KEY,
        }
    }
}

impl ServeSettings {
    /// The keys, checked: each a `sha256:` hash of 64 hex digits.
    ///
    /// # Errors
    ///
    /// A key that is not such a hash (a plain key, say), naming it by its place.
    pub fn api_keys(&self) -> Result<ApiKeys, KeyFormatError> {
        ApiKeys::from_hashes(&self.api_keys)
    }
}

impl Server {
    /// Applies the limits of `settings` (not its keys: see
    /// [`ServeSettings::api_keys`] and [`Server::api_keys`]). Timeouts of 0
    /// count as 1 second.
    pub fn settings(self, settings: &ServeSettings) -> Self {
        self.max_body_bytes(settings.max_body_bytes)
            .max_runs_per_key(settings.max_runs_per_key)
            .requests_per_minute(NonZeroU32::new(settings.requests_per_minute))
            .drain_delay(Duration::from_secs(settings.drain_secs))
            .shutdown_grace(Duration::from_secs(settings.shutdown_grace_secs))
            .header_read_timeout(Duration::from_secs(settings.header_read_timeout_secs.max(1)))
            .body_timeout(Duration::from_secs(settings.body_timeout_secs.max(1)))
            .max_connections(settings.max_connections)
            .max_ended_runs_per_key(settings.max_ended_runs_per_key)
            .max_sessions_per_key(settings.max_sessions_per_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_servers_and_a_table_sets_what_it_names() {
        let defaults = ServeSettings::default();
        assert_eq!(defaults.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
        assert_eq!(defaults.shutdown_grace_secs, DEFAULT_SHUTDOWN_GRACE.as_secs());
        let table: ServeSettings = serde_json::from_value(serde_json::json!({"max_runs_per_key": 2}))
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(table.max_runs_per_key, 2);
        assert_eq!(table.max_sessions_per_key, DEFAULT_MAX_SESSIONS_PER_KEY);
    }

    #[test]
    fn an_unknown_key_or_a_plain_api_key_is_refused() {
        let typo = serde_json::from_value::<ServeSettings>(serde_json::json!({"max_body_byte": 1}));
        assert!(typo.is_err_and(|error| error.to_string().contains("max_body_byte")));
        let plain = ServeSettings {
            api_keys: vec!["sk-plain-key".to_owned()],
            ..ServeSettings::default()
        };
        assert!(plain.api_keys().is_err());
        let hashed = ServeSettings {
            api_keys: vec![crate::hash_key("k")],
            ..ServeSettings::default()
        };
        assert_eq!(hashed.api_keys().map(|keys| keys.is_empty()).ok(), Some(false));
    }
}
