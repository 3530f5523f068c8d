//! [`SqlConfig`]: which database, and the limits a query runs under.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Configuration of the `sql` tools, deserialisable from a `[tools.sql]`
/// table:
///
/// ```toml
/// [tools.sql]
/// path = "data/shop.sqlite"   # opened read-only; never created
/// timeout_ms = 5000           # per call
/// max_rows = 1000             # upper bound for the `limit` argument
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlConfig {
    /// The SQLite database file. It must exist; it is opened read-only.
    /// A relative path is relative to the working directory.
    pub path: PathBuf,
    /// How long one call may run, in milliseconds, before it is stopped.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// The most rows one query may return, whatever `limit` the model asks for.
    #[serde(default = "default_max_rows")]
    pub max_rows: usize,
}

impl SqlConfig {
    /// The default time limit: 5 seconds.
    pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
    /// The default row cap.
    pub const DEFAULT_MAX_ROWS: usize = 1_000;

    /// A configuration for `path` with the default limits.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            timeout_ms: Self::DEFAULT_TIMEOUT_MS,
            max_rows: Self::DEFAULT_MAX_ROWS,
        }
    }

    /// Sets the time limit.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// Sets the row cap.
    pub fn with_max_rows(mut self, max_rows: usize) -> Self {
        self.max_rows = max_rows;
        self
    }
}

fn default_timeout_ms() -> u64 {
    SqlConfig::DEFAULT_TIMEOUT_MS
}

fn default_max_rows() -> usize {
    SqlConfig::DEFAULT_MAX_ROWS
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_to_missing_fields() {
        let config: SqlConfig = serde_json::from_str(r#"{"path": "shop.sqlite"}"#).unwrap();
        assert_eq!(config, SqlConfig::new("shop.sqlite"));
        let config: SqlConfig = serde_json::from_str(r#"{"path": "a.db", "timeout_ms": 250, "max_rows": 10}"#).unwrap();
        assert_eq!(config, SqlConfig::new("a.db").with_timeout_ms(250).with_max_rows(10));
    }
}
