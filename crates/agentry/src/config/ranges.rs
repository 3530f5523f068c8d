//! The range of every numeric key of `agentry.toml` ([`NUMERIC_RANGES`]),
//! checked when the configuration is loaded: a value outside it is a
//! [`ConfigError::OutOfRange`] naming the key, where it was set and the
//! range. (The local model's `[providers.llama]` numbers are checked by its
//! crate; `[serve]` is the server's, which reads it.)

use figment::value::Value;

use super::{ConfigError, Settings};
use crate::ProviderKind;

/// Where the key of a [`KeyRange`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// At its dotted key, e.g. `agent.max_iterations`.
    Fixed,
    /// In every `[providers.NAME]` table of a provider reached over HTTP
    /// (all but `llama`): `providers.NAME.KEY`.
    HttpProvider,
    /// In every `[mcp.servers.NAME]` table: `mcp.servers.NAME.KEY`.
    McpServer,
    /// In every `[catalog."MODEL"]` entry, the shipped ones included.
    CatalogEntry,
}

/// The values a numeric key allows, both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyRange {
    /// Where the key is.
    pub place: Place,
    /// The key: dotted for [`Place::Fixed`], else its name in each table
    /// (dotted for a key of a table inside it, e.g. `rate_limit.burst`).
    pub key: &'static str,
    /// The smallest value allowed.
    pub min: f64,
    /// The largest value allowed.
    pub max: f64,
    /// Whether the key takes whole numbers only.
    pub integer: bool,
    /// What the number counts, shown after the range (may be empty).
    pub unit: &'static str,
}

/// 1 GiB: the most bytes any size limit may be.
const GIB: f64 = 1_073_741_824.0;
/// A day, in seconds: the longest timeout.
const DAY_SECS: f64 = 86_400.0;
/// A week, in seconds: the longest run deadline.
const WEEK_SECS: f64 = 604_800.0;
/// The most tokens one model call may generate (or a summary take).
const MAX_TOKENS: f64 = 1_000_000.0;
/// The largest context window, in tokens.
const MAX_WINDOW: f64 = 100_000_000.0;
/// The shortest timeout, in seconds: 1 ms (0 would fail everything).
const MIN_SECS: f64 = 0.001;

const fn range(place: Place, key: &'static str, min: f64, max: f64, integer: bool, unit: &'static str) -> KeyRange {
    KeyRange {
        place,
        key,
        min,
        max,
        integer,
        unit,
    }
}

const fn fixed(key: &'static str, min: f64, max: f64, unit: &'static str) -> KeyRange {
    range(Place::Fixed, key, min, max, true, unit)
}

const fn fixed_float(key: &'static str, min: f64, max: f64, unit: &'static str) -> KeyRange {
    range(Place::Fixed, key, min, max, false, unit)
}

const fn http(key: &'static str, min: f64, max: f64, integer: bool, unit: &'static str) -> KeyRange {
    range(Place::HttpProvider, key, min, max, integer, unit)
}

/// Every numeric key the configuration reads, with its range. Timeouts
/// and limits start above 0 (unless 0 means "none"), timeouts end at a
/// day (far past any use, and far from overflowing a `Duration`),
/// retries at 10, sizes at 1 GiB; budgets are finite and at least 0.
pub const NUMERIC_RANGES: &[KeyRange] = &[
    // [agent]: the loop and what each request carries.
    fixed("agent.max_iterations", 1.0, 1_000.0, "model calls"),
    fixed("agent.max_tokens", 1.0, MAX_TOKENS, "tokens"),
    fixed_float("agent.temperature", 0.0, 2.0, ""),
    fixed_float("agent.max_turn_secs", 0.0, DAY_SECS, "seconds (0: no limit)"),
    fixed("agent.max_consecutive_failures", 1.0, 100.0, "iterations"),
    fixed("agent.max_calls_per_reply", 0.0, 1_000.0, "calls (0: no cap)"),
    fixed("agent.max_concurrent_tools", 1.0, 256.0, "calls"),
    fixed("agent.max_tool_result_bytes", 0.0, GIB, "bytes (0: no cap)"),
    fixed("agent.context.window_tokens", 1.0, MAX_WINDOW, "tokens"),
    fixed_float("agent.context.compact_at", 0.01, 1.0, "(a share of the window)"),
    fixed("agent.context.keep_recent_turns", 0.0, 1_000.0, "turns"),
    fixed("agent.context.elide_results_over_bytes", 0.0, GIB, "bytes"),
    fixed("agent.context.summary_max_tokens", 1.0, MAX_TOKENS, "tokens"),
    // [agent.budget]
    fixed("agent.budget.max_total_tokens", 0.0, 1e12, "tokens"),
    fixed_float("agent.budget.max_cost_usd", 0.0, 1_000_000.0, "USD"),
    fixed("agent.budget.max_tool_calls", 0.0, 1_000_000.0, "calls"),
    fixed_float("agent.budget.deadline_secs", MIN_SECS, WEEK_SECS, "seconds"),
    fixed("agent.budget.deadline", 1.0, WEEK_SECS * 1_000.0, "milliseconds"),
    // [tools] and the built-in domains' tables.
    fixed_float("tools.timeout_secs", MIN_SECS, DAY_SECS, "seconds"),
    fixed("tools.max_result_bytes", 0.0, GIB, "bytes (0: no cap)"),
    fixed("tools.web.max_bytes", 1.0, GIB, "bytes"),
    fixed("tools.web.max_text_chars", 1.0, 100_000_000.0, "characters"),
    fixed("tools.web.timeout_secs", 1.0, 3_600.0, "seconds"),
    fixed("tools.web.max_redirects", 0.0, 20.0, "redirects"),
    fixed("tools.web.max_attachment_bytes", 1.0, GIB, "bytes"),
    fixed("tools.sql.timeout_ms", 1.0, 3_600_000.0, "milliseconds"),
    fixed("tools.sql.max_rows", 1.0, 1_000_000.0, "rows"),
    // [mcp.servers.NAME]
    range(
        Place::McpServer,
        "startup_timeout_secs",
        MIN_SECS,
        3_600.0,
        false,
        "seconds",
    ),
    range(
        Place::McpServer,
        "call_timeout_secs",
        MIN_SECS,
        DAY_SECS,
        false,
        "seconds",
    ),
    // [providers.NAME]: the HTTP client of every remote provider.
    http("connect_timeout_secs", MIN_SECS, 3_600.0, false, "seconds"),
    http("timeout_secs", MIN_SECS, DAY_SECS, false, "seconds"),
    http("read_timeout_secs", MIN_SECS, DAY_SECS, false, "seconds"),
    http("stream_timeout_secs", MIN_SECS, DAY_SECS, false, "seconds"),
    http("max_total_wait_secs", 0.0, DAY_SECS, false, "seconds"),
    http("max_retries", 0.0, 10.0, true, "retries"),
    http("initial_backoff_ms", 0.0, 600_000.0, true, "milliseconds"),
    http("max_backoff_ms", 0.0, 3_600_000.0, true, "milliseconds"),
    http("max_response_bytes", 1.0, GIB, true, "bytes"),
    http("max_event_bytes", 1.0, GIB, true, "bytes"),
    http("max_stream_bytes", 1.0, GIB, true, "bytes"),
    // The largest attachment of each kind a provider is sent (0: none).
    http("max_image_bytes", 0.0, GIB, true, "bytes"),
    http("max_document_bytes", 0.0, GIB, true, "bytes"),
    http("max_audio_bytes", 0.0, GIB, true, "bytes"),
    // [providers.NAME.circuit_breaker] and [providers.NAME.rate_limit].
    http(
        "circuit_breaker.consecutive_failures",
        0.0,
        1_000.0,
        true,
        "failures (0: not by count)",
    ),
    http(
        "circuit_breaker.failure_rate",
        0.0,
        1.0,
        false,
        "(a share of the window; 0: not by rate)",
    ),
    http("circuit_breaker.window", 1.0, 10_000.0, true, "calls"),
    http("circuit_breaker.min_calls", 0.0, 10_000.0, true, "calls"),
    http("circuit_breaker.open_secs", MIN_SECS, DAY_SECS, false, "seconds"),
    http("rate_limit.requests_per_minute", 1.0, 1_000_000.0, true, "requests"),
    http("rate_limit.burst", 1.0, 1_000_000.0, true, "requests"),
    http("rate_limit.tokens_per_minute", 1.0, 1e9, true, "tokens"),
    http("rate_limit.max_wait_secs", 0.0, DAY_SECS, false, "seconds"),
    // Provider specifics.
    fixed("providers.anthropic.default_max_tokens", 1.0, MAX_TOKENS, "tokens"),
    fixed(
        "providers.anthropic.thinking.budget_tokens",
        1_024.0,
        MAX_TOKENS,
        "tokens",
    ),
    fixed(
        "providers.gemini.thinking_budget",
        -1.0,
        MAX_TOKENS,
        "tokens (0: off, -1: the model decides)",
    ),
    fixed("providers.ollama.num_ctx", 1.0, MAX_WINDOW, "tokens"),
    // [telemetry]
    fixed_float("telemetry.metrics_interval_secs", 0.01, DAY_SECS, "seconds"),
    // [catalog."MODEL"]: prices in USD per million tokens.
    range(
        Place::CatalogEntry,
        "input",
        0.0,
        10_000.0,
        false,
        "USD per million tokens",
    ),
    range(
        Place::CatalogEntry,
        "output",
        0.0,
        10_000.0,
        false,
        "USD per million tokens",
    ),
    range(
        Place::CatalogEntry,
        "cached_input",
        0.0,
        10_000.0,
        false,
        "USD per million tokens",
    ),
    range(
        Place::CatalogEntry,
        "cache_write",
        0.0,
        10_000.0,
        false,
        "USD per million tokens",
    ),
    range(Place::CatalogEntry, "context_window", 1.0, MAX_WINDOW, true, "tokens"),
];

impl KeyRange {
    /// Whether `value` lies in the range (NaN and the infinities never do).
    pub fn contains(&self, value: f64) -> bool {
        self.min <= value && value <= self.max
    }

    /// The key's path in each table of `settings` it applies to.
    fn paths(&self, settings: &Settings) -> Vec<Vec<String>> {
        let config = &settings.config;
        let (prefix, tables): (&[&str], Vec<&String>) = match self.place {
            Place::Fixed => return vec![self.key.split('.').map(str::to_owned).collect()],
            Place::HttpProvider => (
                &["providers"],
                config
                    .providers
                    .0
                    .keys()
                    .filter(|name| ProviderKind::parse(name).is_some_and(|kind| kind != ProviderKind::Llama))
                    .collect(),
            ),
            Place::McpServer => (&["mcp", "servers"], config.mcp.servers.keys().collect()),
            Place::CatalogEntry => (&["catalog"], config.catalog.keys().collect()),
        };
        tables
            .into_iter()
            .map(|table| {
                let mut path: Vec<String> = prefix.iter().map(|&part| part.to_owned()).collect();
                path.push(table.clone());
                path.extend(self.key.split('.').map(str::to_owned));
                path
            })
            .collect()
    }
}

/// A number as a float to compare and as it was written; `None` for a
/// value that is not a number (its type is the deserialiser's business).
fn number(value: &Value) -> Option<(f64, String)> {
    use figment::error::Actual;
    let Value::Num(_, num) = value else { return None };
    match num.to_actual() {
        Actual::Unsigned(n) => Some((n as f64, n.to_string())),
        Actual::Signed(n) => Some((n as f64, n.to_string())),
        Actual::Float(n) => Some((n, format!("{n:?}"))),
        _ => None,
    }
}

impl Settings {
    /// Checks every number the configuration sets against its range in
    /// [`NUMERIC_RANGES`]; the first one outside is the error.
    pub(super) fn check_ranges(&self) -> Result<(), ConfigError> {
        for range in NUMERIC_RANGES {
            for path in range.paths(self) {
                let Some(value) = self.value_at(&path) else { continue };
                let Some((number, written)) = number(&value) else {
                    continue;
                };
                if !range.contains(number) {
                    return Err(ConfigError::OutOfRange {
                        origin: self.origin_of(&value),
                        key: path.join("."),
                        value: written,
                        min: range.min,
                        max: range.max,
                        unit: range.unit,
                    });
                }
            }
        }
        Ok(())
    }
}
