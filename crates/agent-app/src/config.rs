//! Configuration: `agentry.toml`, environment overrides and command-line
//! flags, merged with figment (defaults < file < environment < flags).
//!
//! The file comes from `--config`, else `$AGENTRY_CONFIG`, else
//! `agentry.toml` in the working directory; without one the defaults apply
//! (the embedded local model with the math and travel tools). Every layer
//! is named after its source (the file's path, `environment variable
//! AGENTRY_MODEL`, `command-line flag --provider`), so an error names where
//! the bad value came from and the key it was under.
//!
//! The file's tables are read into the types of the crates they configure:
//! `[agent]` holds the runner's [`RunConfig`] and [`ModelSettings`] (their
//! keys sit beside `provider` and `model`), `[providers.NAME]`,
//! `[tools.NAME]` and `[mcp.servers.NAME]` stay raw until the facade's
//! factory ([`agentry::ProviderConfig::from_table`],
//! [`agentry::ToolDomain::build`]) reads the chosen ones. This module
//! depends on no other module of the app but its errors.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use agent_core::{ModelCatalog, ModelInfo, Pricing};
use agent_prompts::PromptTemplate;
use agent_runner::{AgentConfig, Budget, Grounding, ModelSettings, RunConfig};
use agentry::{ProviderKind, ToolDomain};
use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider, Source};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// The file looked for in the working directory.
pub const CONFIG_FILE_NAME: &str = "agentry.toml";

/// The default provider: the embedded local model.
pub const DEFAULT_PROVIDER: &str = "llama";

/// The time a turn on the embedded local model may take by default, in
/// seconds (`[agent] max_turn_secs`).
pub const LLAMA_MAX_TURN_SECS: f64 = 120.0;

/// `$AGENTRY_HOME`: where models and sessions live.
pub const HOME_VAR: &str = "AGENTRY_HOME";
/// `$AGENTRY_CONFIG`: the configuration file when `--config` is not given.
pub const CONFIG_VAR: &str = "AGENTRY_CONFIG";
/// `$AGENTRY_PROVIDER`: overrides `agent.provider`.
pub const PROVIDER_VAR: &str = "AGENTRY_PROVIDER";
/// `$AGENTRY_MODEL`: overrides `agent.model`.
pub const MODEL_VAR: &str = "AGENTRY_MODEL";
/// Prefix of generic overrides: `AGENTRY_AGENT__MAX_TOKENS=512` sets
/// `agent.max_tokens` (`__` separates keys, names are lowercased).
pub const OVERRIDE_PREFIX: &str = "AGENTRY_";

/// Environment variables, looked up by name: a snapshot, injectable so that
/// tests never depend on (or change) the real process environment. Its
/// `Debug` output lists the names only, never the values (they may hold
/// API keys).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The process environment (variables that are not valid UTF-8 are skipped).
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
                .collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// The value of `name`, when set and not blank.
    pub fn get(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|value| !value.trim().is_empty()).cloned()
    }

    /// Every variable, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `$AGENTRY_HOME`, else the user's data directory + `agentry`.
    pub fn agentry_home(&self) -> PathBuf {
        if let Some(home) = self.get(HOME_VAR) {
            return PathBuf::from(home);
        }
        self.data_dir().unwrap_or_else(std::env::temp_dir).join("agentry")
    }

    /// The user's data directory, as the platform names it: `%APPDATA%` on
    /// Windows, `~/Library/Application Support` on macOS, else
    /// `$XDG_DATA_HOME` (when absolute) or `~/.local/share`.
    fn data_dir(&self) -> Option<PathBuf> {
        let home = || self.get("HOME").or_else(|| self.get("USERPROFILE")).map(PathBuf::from);
        if cfg!(windows) {
            return self.get("APPDATA").map(PathBuf::from).or_else(home);
        }
        if cfg!(target_os = "macos") {
            return home().map(|home| home.join("Library/Application Support"));
        }
        self.get("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| home().map(|home| home.join(".local/share")))
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Env")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The model catalog shipped with Agentry, as TOML: model name -> [`CatalogEntry`].
pub const SHIPPED_CATALOG: &str = include_str!("../data/models.toml");

/// One model's entry, as written in `data/models.toml` and in
/// `[catalog."model-name"]` tables. Prices are US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    /// The provider that serves the model (`openai`, `anthropic`, `llama`, ...).
    #[serde(default)]
    pub provider: String,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Uncached prompt tokens.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the cache (the input price when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Prompt tokens written to the cache (the input price when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl CatalogEntry {
    /// The core type.
    pub fn to_model_info(&self) -> ModelInfo {
        ModelInfo {
            provider: self.provider.clone(),
            context_window: self.context_window,
            pricing: Pricing {
                input_per_million: self.input,
                output_per_million: self.output,
                cached_input_per_million: self.cached_input,
                cache_write_per_million: self.cache_write,
            },
        }
    }

    /// Whether every price is a finite, non-negative number.
    pub fn prices_are_valid(&self) -> bool {
        [Some(self.input), Some(self.output), self.cached_input, self.cache_write]
            .into_iter()
            .flatten()
            .all(|price| price.is_finite() && price >= 0.0)
    }
}

/// The shipped entries. The file is part of the binary and covered by tests;
/// should it ever fail to parse, the catalog is empty (costs are then
/// reported as unknown) rather than the program failing.
pub fn shipped_entries() -> BTreeMap<String, CatalogEntry> {
    parse_catalog(SHIPPED_CATALOG).unwrap_or_default()
}

/// Catalog entries from TOML text; the error names the entry and key at fault.
pub fn parse_catalog(text: &str) -> Result<BTreeMap<String, CatalogEntry>, String> {
    Figment::from(Toml::string(text))
        .extract()
        .map_err(|error| error.to_string())
}

/// A [`ModelCatalog`] of `entries`.
pub fn to_catalog(entries: &BTreeMap<String, CatalogEntry>) -> ModelCatalog {
    let mut catalog = ModelCatalog::new();
    for (name, entry) in entries {
        catalog.insert(name.clone(), entry.to_model_info());
    }
    catalog
}

/// Values from command-line flags; each beats the file and the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--config FILE`.
    pub config: Option<PathBuf>,
    /// `--provider NAME`.
    pub provider: Option<String>,
    /// `--model NAME`.
    pub model: Option<String>,
    /// `--base-url URL`: the chosen provider's `base_url`.
    pub base_url: Option<String>,
    /// `--tools a,b`: replaces `tools.enabled`.
    pub tools: Option<Vec<String>>,
    /// `--max-iterations N`.
    pub max_iterations: Option<u32>,
}

/// The `[agent]` table: the provider and model, the system prompt, and the
/// runner's configuration, whose keys ([`RunConfig`]'s `max_iterations`,
/// `tool_protocol`, `reask_repeated_calls`, ...; [`ModelSettings`]'
/// `max_tokens`, `temperature`, `prompt_caching`, ...) sit in the table
/// beside them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct AgentSettings {
    /// `llama | openai | azure-openai | openai-compatible | anthropic | gemini | ollama`.
    pub provider: String,
    /// The model; unset: the provider table's `model`, else the provider's
    /// default. It is put in the provider's table as its `model` key.
    pub model: Option<String>,
    /// Replaces the built-in system prompt.
    pub system_prompt: Option<String>,
    /// Check every final answer's figures against the user's words and the
    /// tool results, re-ask the model and never pass on an invented figure
    /// (`agent_runner::Grounding`). Unset: on for `llama`, off for the
    /// others.
    pub grounding: Option<bool>,
    /// The time one turn may take, in seconds: past it the turn ends with
    /// what was found so far (`budget_exceeded`). Unset: 120 for `llama`
    /// (a small local model can otherwise write for many minutes), none for
    /// the others; 0: no limit. With `[agent.budget] deadline_secs` too, the
    /// shorter applies.
    pub max_turn_secs: Option<f64>,
    /// `[agent.budget]`: budgets that end a run early.
    pub budget: BudgetSettings,
    /// The loop's policies (its `budget` and `grounding` are the keys above).
    #[serde(flatten)]
    pub run: RunConfig,
    /// What every request carries (`prompt_caching` on by default).
    #[serde(flatten)]
    pub request: ModelSettings,
    /// Keys of none of the above: typos, reported by [`Settings::read`].
    #[serde(flatten)]
    #[allow(
        clippy::zero_sized_map_values,
        reason = "only the keys are wanted; a set cannot be flattened"
    )]
    unknown: BTreeMap<String, IgnoredAny>,
}

/// The keys of `[agent]` that are not the runner's.
const AGENT_KEYS: [&str; 6] = [
    "provider",
    "model",
    "system_prompt",
    "grounding",
    "max_turn_secs",
    "budget",
];

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            provider: DEFAULT_PROVIDER.to_owned(),
            model: None,
            system_prompt: None,
            grounding: None,
            max_turn_secs: None,
            budget: BudgetSettings::default(),
            run: RunConfig::default(),
            request: ModelSettings {
                prompt_caching: true,
                ..ModelSettings::default()
            },
            unknown: BTreeMap::new(),
        }
    }
}

/// The `[agent.budget]` table: the runner's [`Budget`], with the deadline
/// in seconds (`deadline_secs`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct BudgetSettings {
    /// `max_total_tokens`, `max_cost_usd`, `max_tool_calls`.
    #[serde(flatten)]
    pub limits: Budget,
    /// Wall-clock limit of one run, in seconds.
    pub deadline_secs: Option<f64>,
    /// Keys of none of the above, reported by [`Settings::read`].
    #[serde(flatten)]
    #[allow(
        clippy::zero_sized_map_values,
        reason = "only the keys are wanted; a set cannot be flattened"
    )]
    unknown: BTreeMap<String, IgnoredAny>,
}

impl BudgetSettings {
    /// The runner's budget.
    pub fn to_budget(&self) -> Budget {
        let mut budget = self.limits;
        if let Some(secs) = self.deadline_secs {
            budget.deadline = std::time::Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|deadline| !deadline.is_zero());
        }
        budget
    }
}

/// The `[tools]` table; `[tools.NAME]`, the options of the built-in domain
/// NAME, is read when the domain is built.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct ToolSettings {
    /// Tool domains the agent may use.
    pub enabled: Vec<String>,
    /// How long one tool call may run, in seconds (no limit when unset).
    pub timeout_secs: Option<f64>,
    /// The longest tool result kept in the conversation, in bytes; longer
    /// ones are cut with a marker saying so. 0: no cap. Unset: `[agent]
    /// max_tool_result_bytes`, 32 KiB by default.
    pub max_result_bytes: Option<usize>,
    /// Tools whose calls wait for the user's approval before they run:
    /// `chat` asks y/N, `run` pauses (stop reason `awaiting_approval`) and
    /// `agentry resume NAME --approve ID|--deny ID` continues.
    pub require_approval: Vec<String>,
    /// The names of the `[tools.NAME]` tables (checked by [`Settings::read`]).
    #[serde(flatten)]
    #[allow(
        clippy::zero_sized_map_values,
        reason = "only the keys are wanted; a set cannot be flattened"
    )]
    tables: BTreeMap<String, IgnoredAny>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            enabled: default_domains(),
            timeout_secs: None,
            max_result_bytes: None,
            require_approval: Vec::new(),
            tables: BTreeMap::new(),
        }
    }
}

/// The keys of `[tools]` besides the domains' tables.
const TOOLS_KEYS: [&str; 4] = ["enabled", "timeout_secs", "max_result_bytes", "require_approval"];

/// The domains enabled when `[tools] enabled` is not set: math and the
/// travel demo's, those of them this build has.
pub fn default_domains() -> Vec<String> {
    [ToolDomain::Math, ToolDomain::Travel]
        .into_iter()
        .filter(|domain| domain.is_compiled())
        .map(|domain| domain.name().to_owned())
        .collect()
}

/// A table kept raw until its crate deserialises it. `Debug` shows its keys
/// only: it may hold a secret (`api_key`).
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct RawTable(pub Dict);

impl RawTable {
    /// Whether the table has no key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for RawTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// The `[providers.NAME]` tables, kept raw until the facade reads the
/// chosen provider's ([`agentry::ProviderConfig::from_table`]). `Debug`
/// shows table names and keys only: a table may hold an `api_key`.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct ProviderTables(pub BTreeMap<String, RawTable>);

impl fmt::Debug for ProviderTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter()).finish()
    }
}

pub use agentry::telemetry::{TELEMETRY_PROTOCOLS, TelemetryConfig as TelemetrySettings};

/// The `[mcp]` table: `[mcp.servers.NAME]`, each MCP server a tool domain
/// NAME, enabled like any other through `[tools] enabled` or `--tools`:
///
/// ```toml
/// [mcp.servers.everything]       # a stdio server: a command and its arguments
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-everything"]
/// env = { LOG_LEVEL = "warn" }   # besides PATH, HOME, ... (see `inherit_env`)
/// cwd = "servers"                # relative to this file
///
/// [mcp.servers.remote]           # a streamable-HTTP server
/// url = "https://mcp.example.com/mcp"
/// headers = { Authorization = "Bearer ..." }   # never logged
/// ```
///
/// `Debug` shows server names and their keys only: `env` and `headers` may
/// hold secrets.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// `[mcp.servers.NAME]`: the MCP servers, each a tool domain NAME.
    pub servers: BTreeMap<String, RawTable>,
}

impl fmt::Debug for McpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.servers.iter()).finish()
    }
}

impl McpSettings {
    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Whether `name` is a configured server.
    pub fn has(&self, name: &str) -> bool {
        self.servers.contains_key(name)
    }
}

/// The `[scenes]` table as read: `default`, and one raw table per scene,
/// checked by [`Settings::scene_specs`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SceneTables {
    /// The scene that runs when the model names none of them.
    #[serde(default)]
    pub default: Option<String>,
    /// `[scenes.NAME]`.
    #[serde(flatten)]
    pub scenes: BTreeMap<String, RawTable>,
}

impl SceneTables {
    /// Whether no scene (and no default) is configured.
    pub fn is_empty(&self) -> bool {
        self.default.is_none() && self.scenes.is_empty()
    }
}

/// One `[scenes.NAME]` table (the facade's).
pub use agentry::SceneConfig as SceneEntry;

/// A configured scene, its template file read.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneSpec {
    /// The scene's name (its table's key).
    pub name: String,
    /// The table.
    pub entry: SceneEntry,
    /// The template's text, when `prompt_template` is set.
    pub template: Option<String>,
}

/// Every configured scene, in the order of their names, and the default.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneSpecs {
    /// The scenes.
    pub scenes: Vec<SceneSpec>,
    /// `[scenes] default`.
    pub default: Option<String>,
}

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
#[cfg(feature = "serve")]
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

#[cfg(feature = "serve")]
impl Default for ServeSettings {
    fn default() -> Self {
        use agent_server::{
            DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
            DEFAULT_MAX_ENDED_RUNS_PER_KEY, DEFAULT_MAX_RUNS_PER_KEY, DEFAULT_MAX_SESSIONS_PER_KEY,
            DEFAULT_REQUESTS_PER_MINUTE, DEFAULT_SHUTDOWN_GRACE,
        };
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

/// The `[store]` table: where `agentry serve` keeps sessions.
///
/// ```toml
/// [store]
/// # Default: a SQLite file in $AGENTRY_HOME/serve. Instances sharing a
/// # PostgreSQL database continue each other's sessions.
/// url = "postgres://agentry@db.internal/agentry"
/// ```
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSettings {
    /// `postgres://...` (or `postgresql://`), or `sqlite:PATH`; none: a
    /// SQLite file in `$AGENTRY_HOME/serve`.
    pub url: Option<String>,
}

impl fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreSettings")
            .field("url", &self.url.as_deref().map(redact_url))
            .finish()
    }
}

/// `url` with its passwords replaced by `[redacted]`: the one in the user
/// information (`user:PASSWORD@host`) and any query parameter whose name
/// holds `password` (`?password=...`, `&sslpassword=...`), in any case.
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut shown = redact_user_info(base);
    if let Some(query) = query {
        shown.push('?');
        let parameters: Vec<String> = query
            .split('&')
            .map(|parameter| match parameter.split_once('=') {
                Some((name, _)) if name.to_ascii_lowercase().contains("password") => format!("{name}=[redacted]"),
                _ => parameter.to_owned(),
            })
            .collect();
        shown.push_str(&parameters.join("&"));
    }
    shown
}

/// `scheme://user:PASSWORD@host/path` with the password redacted.
fn redact_user_info(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:[redacted]@{host}{path}")
        }
        _ => url.to_owned(),
    }
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[agent]`.
    pub agent: AgentSettings,
    /// `[providers.NAME]`.
    pub providers: ProviderTables,
    /// `[tools]`.
    pub tools: ToolSettings,
    /// `[catalog."model-name"]`, merged over the shipped catalog.
    pub catalog: BTreeMap<String, CatalogEntry>,
    /// `[telemetry]`.
    pub telemetry: TelemetrySettings,
    /// `[mcp]`: MCP servers, each a tool domain.
    pub mcp: McpSettings,
    /// `[scenes]`: named sub-agents the model routes each request to.
    pub scenes: SceneTables,
    /// `[serve]`: API keys and limits of `agentry serve`.
    #[cfg(feature = "serve")]
    pub serve: ServeSettings,
    /// `[serve]`, unchecked: this build has no `agentry serve`.
    #[cfg(not(feature = "serve"))]
    pub serve: RawTable,
    /// `[store]`: where `agentry serve` keeps sessions.
    pub store: StoreSettings,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            agent: AgentSettings::default(),
            providers: ProviderTables::default(),
            tools: ToolSettings::default(),
            catalog: shipped_entries(),
            telemetry: TelemetrySettings::default(),
            mcp: McpSettings::default(),
            scenes: SceneTables::default(),
            #[cfg(feature = "serve")]
            serve: ServeSettings::default(),
            #[cfg(not(feature = "serve"))]
            serve: RawTable::default(),
            store: StoreSettings::default(),
        }
    }
}

/// The loaded configuration: the merged values, where each came from, and
/// the flags that are not configuration keys (`--base-url`).
#[derive(Clone)]
pub struct Settings {
    /// The merged configuration.
    pub config: Config,
    /// The file read, if any.
    pub file: Option<PathBuf>,
    /// `--base-url`: the chosen provider's `base_url`.
    pub base_url: Option<String>,
    /// `$AGENTRY_HOME` (or its default).
    pub home: PathBuf,
    /// Whether `file` was found in the working directory rather than named
    /// by `--config` or `$AGENTRY_CONFIG`: a file that came with the
    /// project being worked on, not one the user chose.
    pub file_is_local: bool,
    figment: Figment,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The figment holds raw values, keys included: never shown.
        f.debug_struct("Settings")
            .field("config", &self.config)
            .field("file", &self.file)
            .field("base_url", &self.base_url)
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

/// One named layer of values (an environment variable, a flag).
struct Layer {
    name: String,
    data: Dict,
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.name.clone())
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.data.clone()))
    }
}

fn layer(name: impl Into<String>, key: &str, value: Value) -> Layer {
    let data = match figment::util::nest(key, value) {
        Value::Dict(_, dict) => dict,
        _ => Dict::new(),
    };
    Layer {
        name: name.into(),
        data,
    }
}

impl Settings {
    /// Reads the configuration for these flags, environment and working
    /// directory and validates it, without the trust check of
    /// `Settings::load` (see `crate::trust`): for `agentry trust`, which
    /// shows what a file would do before the user trusts it. Nothing read
    /// this way may start a process or send a request.
    pub fn read(overrides: &Overrides, env: &Env, cwd: &Path) -> Result<Self, ConfigError> {
        let file = config_file(overrides, env, cwd)?;
        let file_is_local = file.as_ref().is_some_and(|path| *path == cwd.join(CONFIG_FILE_NAME))
            && overrides.config.is_none()
            && env.get(CONFIG_VAR).is_none();
        // The shipped catalog is the one default merged under the file:
        // `[catalog."m"] input = 1` changes one price of the shipped entry.
        let mut figment = Figment::from(Serialized::default("catalog", shipped_entries()));
        if let Some(path) = &file {
            figment = figment.merge(Toml::file_exact(path));
        }
        for (name, value) in env.iter() {
            if let Some(key) = env_key(name) {
                let value: Value = value.parse().unwrap_or_else(|_| Value::from(value.to_owned()));
                figment = figment.merge(layer(format!("environment variable {name}"), &key, value));
            }
        }
        let flags = [
            (
                env.get(PROVIDER_VAR),
                format!("environment variable {PROVIDER_VAR}"),
                "agent.provider",
            ),
            (
                env.get(MODEL_VAR),
                format!("environment variable {MODEL_VAR}"),
                "agent.model",
            ),
            (
                overrides.provider.clone(),
                "command-line flag --provider".to_owned(),
                "agent.provider",
            ),
            (
                overrides.model.clone(),
                "command-line flag --model".to_owned(),
                "agent.model",
            ),
        ];
        for (value, name, key) in flags {
            if let Some(value) = value {
                figment = figment.merge(layer(name, key, Value::from(value)));
            }
        }
        if let Some(max) = overrides.max_iterations {
            figment = figment.merge(layer(
                "command-line flag --max-iterations",
                "agent.max_iterations",
                Value::from(max),
            ));
        }
        if let Some(tools) = &overrides.tools {
            let list: Vec<Value> = tools.iter().map(|t| Value::from(t.trim().to_owned())).collect();
            figment = figment.merge(layer("command-line flag --tools", "tools.enabled", Value::from(list)));
        }
        let mut config: Config = figment
            .extract()
            .map_err(|error| from_figment(&locate_flattened(&figment, error)))?;
        if !figment.contains("agent.prompt_caching") {
            config.agent.request.prompt_caching = true;
        }
        let settings = Self {
            config,
            file,
            base_url: overrides.base_url.clone().filter(|url| !url.trim().is_empty()),
            home: env.agentry_home(),
            file_is_local,
            figment,
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Checks what serde cannot: known names and sane numbers.
    fn validate(&self) -> Result<(), ConfigError> {
        self.provider()?;
        let agent = &self.config.agent;
        let expected = |names: &[&[&'static str]]| {
            let mut valid: Vec<&str> = Vec::new();
            for name in names.iter().flat_map(|names| names.iter()) {
                if !valid.contains(name) {
                    valid.push(name);
                }
            }
            valid.join(", ")
        };
        if let Some(key) = agent.unknown.keys().next() {
            let valid = [
                &AGENT_KEYS[..],
                struct_fields::<RunConfig>(),
                struct_fields::<ModelSettings>(),
            ];
            return Err(self.unknown_key(&format!("agent.{key}"), expected(&valid)));
        }
        if let Some(key) = agent.budget.unknown.keys().next() {
            let valid = [struct_fields::<Budget>(), &["deadline_secs"][..]];
            return Err(self.unknown_key(&format!("agent.budget.{key}"), expected(&valid)));
        }
        if let Err(error) = self.agent_config().validate() {
            // `run.max_iterations` is `agent.max_iterations` in the file.
            let field = error.field.split_once('.').map_or(error.field, |(_, rest)| rest);
            return Err(self.invalid(&format!("agent.{field}"), error.requirement));
        }
        let seconds = [
            ("agent.budget.deadline_secs", agent.budget.deadline_secs, false),
            ("agent.max_turn_secs", agent.max_turn_secs, true),
            ("tools.timeout_secs", self.config.tools.timeout_secs, false),
        ];
        for (key, secs, zero_allowed) in seconds {
            if let Some(secs) = secs
                && !((secs > 0.0 || (zero_allowed && secs == 0.0))
                    && std::time::Duration::try_from_secs_f64(secs).is_ok())
            {
                let requirement = if zero_allowed {
                    "must be 0 (no limit) or a positive number of seconds"
                } else {
                    "must be a positive number of seconds"
                };
                return Err(self.invalid(key, requirement));
            }
        }
        self.validate_tools()?;
        self.scene_specs()?;
        #[cfg(feature = "serve")]
        self.api_keys()?;
        for name in self.config.providers.0.keys() {
            if ProviderKind::parse(name).is_none() {
                return Err(self.unknown_key(&format!("providers.{name}"), ProviderKind::all_names()));
            }
        }
        self.validate_telemetry()?;
        for (name, entry) in &self.config.catalog {
            if !entry.prices_are_valid() {
                return Err(self.invalid(&format!("catalog.{name}"), "prices must be non-negative numbers"));
            }
        }
        Ok(())
    }

    /// Checks `[tools]` and `[mcp]`: every enabled domain is a built-in one
    /// of this build or an MCP server, every `[tools.NAME]` a built-in
    /// domain's, every `[mcp.servers.NAME]` a valid server table (nothing is
    /// started).
    fn validate_tools(&self) -> Result<(), ConfigError> {
        let tools = &self.config.tools;
        for name in tools.tables.keys() {
            if ToolDomain::parse(name).is_none() {
                let valid = TOOLS_KEYS.into_iter().chain(ToolDomain::ALL.map(ToolDomain::name));
                return Err(self.unknown_key(&format!("tools.{name}"), valid.collect::<Vec<_>>().join(", ")));
            }
        }
        for name in self.config.mcp.servers.keys() {
            let key = format!("mcp.servers.{name}");
            agentry::check_mcp_name(name).map_err(|message| self.invalid(&key, &message))?;
            // Without the `mcp` feature the table is checked when the domain
            // is enabled: building it says which feature to build with.
            #[cfg(feature = "mcp")]
            self.mcp_server(name)?
                .transport(name)
                .map_err(|error| self.invalid(&key, &error.to_string()))?;
        }
        for name in &tools.enabled {
            if let Some(domain) = ToolDomain::parse(name) {
                if !domain.is_compiled() {
                    return Err(domain.not_compiled().into());
                }
            } else if !self.config.mcp.has(name) {
                let mut available = ToolDomain::compiled_names();
                for server in self.config.mcp.servers.keys() {
                    available.push_str(", ");
                    available.push_str(server);
                }
                return Err(ConfigError::UnknownToolDomain {
                    origin: self.origin("tools.enabled"),
                    name: name.clone(),
                    available,
                });
            }
        }
        Ok(())
    }

    /// Checks the `[telemetry]` table.
    fn validate_telemetry(&self) -> Result<(), ConfigError> {
        self.config
            .telemetry
            .validate()
            .map_err(|error| self.invalid(&format!("telemetry.{}", error.key), &error.message))
    }

    /// The runner's configuration of every agent built from these settings:
    /// `[agent]`'s [`RunConfig`] and [`ModelSettings`], with the budget of
    /// `[agent.budget]` and the turn's time limit, grounding as
    /// [`grounding`](Self::grounding) says, and `[tools] max_result_bytes`.
    pub fn agent_config(&self) -> AgentConfig {
        let agent = &self.config.agent;
        let mut run = agent.run.clone();
        run.budget = agent.budget.to_budget();
        // The turn's time limit and the budget's deadline: the shorter.
        run.budget.deadline = match (run.budget.deadline, self.max_turn()) {
            (Some(deadline), Some(turn)) => Some(deadline.min(turn)),
            (deadline, turn) => deadline.or(turn),
        };
        if let Some(bytes) = self.config.tools.max_result_bytes {
            run.max_tool_result_bytes = bytes;
        }
        run.grounding = self.grounding();
        AgentConfig {
            run,
            request: agent.request.clone(),
        }
    }

    /// The time one turn may take: `agent.max_turn_secs` (0: none), else
    /// [`LLAMA_MAX_TURN_SECS`] for the embedded local model and none for
    /// the hosted providers.
    pub fn max_turn(&self) -> Option<std::time::Duration> {
        let secs = self
            .config
            .agent
            .max_turn_secs
            .or_else(|| (self.provider() == Ok(ProviderKind::Llama)).then_some(LLAMA_MAX_TURN_SECS))?;
        std::time::Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|limit| !limit.is_zero())
    }

    /// Whether final answers are checked: `agent.grounding`, or by
    /// default on for the embedded local model, whose small models invent
    /// figures, and off for the hosted providers.
    pub fn grounding(&self) -> Grounding {
        let on = self
            .config
            .agent
            .grounding
            .unwrap_or_else(|| self.provider() == Ok(ProviderKind::Llama));
        if on { Grounding::On } else { Grounding::Off }
    }

    fn invalid(&self, key: &str, message: &str) -> ConfigError {
        ConfigError::InvalidValue {
            origin: self.origin(key),
            key: key.to_owned(),
            message: message.to_owned(),
        }
    }

    fn unknown_key(&self, key: &str, expected: String) -> ConfigError {
        ConfigError::UnknownKey {
            origin: self.origin(key),
            key: key.to_owned(),
            expected,
        }
    }

    /// The chosen provider.
    pub fn provider(&self) -> Result<ProviderKind, ConfigError> {
        let name = &self.config.agent.provider;
        ProviderKind::parse(name).ok_or_else(|| ConfigError::UnknownProvider {
            origin: self.origin("agent.provider"),
            name: name.clone(),
            valid: ProviderKind::all_names(),
        })
    }

    /// Where the value of `key` came from: a file's path, `environment
    /// variable X`, `command-line flag --y`, or the file (`configuration`
    /// without one) for a default.
    pub fn origin(&self, key: &str) -> String {
        self.figment.find_metadata(key).map_or_else(
            || self.default_origin(),
            |metadata| describe(metadata, self.file.as_deref()),
        )
    }

    /// The string at `key` and whether the working directory's own
    /// `agentry.toml` set it (see [`file_is_local`](Self::file_is_local)).
    pub fn string_at(&self, key: &str) -> Option<(String, bool)> {
        let value = self.figment.find_value(key).ok()?;
        let text = value.as_str()?.to_owned();
        Some((text, self.is_local_value(&value)))
    }

    /// Whether the working directory's own `agentry.toml` (see
    /// [`file_is_local`](Self::file_is_local)) set the value at `key`, of
    /// whatever type; `false` when nothing is there.
    pub fn set_by_local_file(&self, key: &str) -> bool {
        self.figment
            .find_value(key)
            .is_ok_and(|value| self.is_local_value(&value))
    }

    fn is_local_value(&self, value: &Value) -> bool {
        self.file_is_local
            && value
                .tag()
                .ne(&figment::value::Tag::Default)
                .then(|| self.figment.get_metadata(value.tag()))
                .flatten()
                .and_then(|metadata| metadata.source.as_ref()?.file_path().map(Path::to_path_buf))
                .is_some_and(|path| Some(&path) == self.file.as_ref())
    }

    fn default_origin(&self) -> String {
        self.file
            .as_ref()
            .map_or_else(|| "configuration".to_owned(), |path| path.display().to_string())
    }

    /// The table at the dotted `key` (e.g. `providers.openai`) as raw
    /// values, for a factory to read; an empty table when there is none.
    pub fn table_value(&self, key: &str) -> Dict {
        match self.figment.find_value(key) {
            Ok(Value::Dict(_, dict)) => dict,
            _ => Dict::new(),
        }
    }

    /// The table at the dotted `key` (e.g. `mcp.servers.time`) as `T`;
    /// `None` when there is no such table.
    pub fn table<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ConfigError> {
        let Ok(value) = self.figment.find_value(key) else {
            return Ok(None);
        };
        T::deserialize(&value)
            .map(Some)
            .map_err(|error| self.key_error(&error, key))
    }

    /// An error of deserialising the table at `table` (through
    /// [`table_value`](Self::table_value)) as a [`ConfigError`] naming the
    /// whole key and where it was set.
    pub fn key_error(&self, error: &figment::Error, table: &str) -> ConfigError {
        let mut path: Vec<String> = table
            .split('.')
            .filter(|part| !part.is_empty())
            .map(str::to_owned)
            .collect();
        path.extend(error.path.iter().cloned());
        let origin = self.origin(&path.join("."));
        config_error(&error.kind, &path, origin)
    }

    /// `path` (the value of `key`) made absolute: a relative path written in
    /// a file is relative to that file's directory; one from a flag or
    /// variable, to the working directory.
    pub fn resolve_path(&self, key: &str, path: &Path) -> PathBuf {
        if path.is_absolute() {
            return path.to_owned();
        }
        let base = self
            .figment
            .find_metadata(key)
            .and_then(|metadata| metadata.source.as_ref())
            .and_then(Source::file_path)
            .and_then(Path::parent);
        match base {
            Some(dir) => dir.join(path),
            None => path.to_owned(),
        }
    }

    /// The path at `name` of the table `table` (found at `key`), made
    /// absolute by [`resolve_path`](Self::resolve_path), back in the table.
    pub fn resolve_path_in(&self, table: &mut Dict, key: &str, name: &str) {
        if let Some(path) = table.get(name).and_then(Value::as_str) {
            let resolved = self.resolve_path(&format!("{key}.{name}"), Path::new(path));
            table.insert(name.to_owned(), Value::from(resolved.display().to_string()));
        }
    }

    /// The `[mcp.servers.NAME]` table of server `name` (the defaults when
    /// there is none), its `cwd` resolved against the file it came from.
    #[cfg(feature = "mcp")]
    pub fn mcp_server(&self, name: &str) -> Result<agentry::mcp::McpServerConfig, ConfigError> {
        let key = format!("mcp.servers.{name}");
        let mut config: agentry::mcp::McpServerConfig = self.table(&key)?.unwrap_or_default();
        if let Some(cwd) = &config.cwd {
            config.cwd = Some(self.resolve_path(&format!("{key}.cwd"), cwd));
        }
        Ok(config)
    }

    /// The configured keys of `agentry serve`, or the error naming `serve.api_keys`.
    #[cfg(feature = "serve")]
    pub fn api_keys(&self) -> Result<agent_server::ApiKeys, ConfigError> {
        agent_server::ApiKeys::from_hashes(&self.config.serve.api_keys)
            .map_err(|error| self.invalid("serve.api_keys", &error.to_string()))
    }

    /// The configured scenes, their template files read (relative to the
    /// file); `None` when there are none. Errors name the key.
    pub fn scene_specs(&self) -> Result<Option<SceneSpecs>, ConfigError> {
        let tables = &self.config.scenes;
        if tables.is_empty() {
            return Ok(None);
        }
        if tables.scenes.is_empty() {
            return Err(self.invalid(
                "scenes.default",
                "there are no scenes: add a `[scenes.NAME]` table with a `description`",
            ));
        }
        let mut scenes = Vec::with_capacity(tables.scenes.len());
        for name in tables.scenes.keys() {
            let key = format!("scenes.{name}");
            let Some(entry) = self.table::<SceneEntry>(&key)? else {
                return Err(self.invalid(&key, "must be a table"));
            };
            if entry.description.trim().is_empty() {
                return Err(self.invalid(&format!("{key}.description"), "must not be empty"));
            }
            let template = match (&entry.system_prompt, &entry.prompt_template) {
                (Some(_), Some(_)) => {
                    return Err(self.invalid(&key, "set either `system_prompt` or `prompt_template`, not both"));
                }
                (_, Some(path)) => {
                    let template_key = format!("{key}.prompt_template");
                    let full = self.resolve_path(&template_key, path);
                    let text = std::fs::read_to_string(&full).map_err(|error| {
                        self.invalid(&template_key, &format!("cannot read {}: {error}", full.display()))
                    })?;
                    PromptTemplate::parse(text.as_str())
                        .map_err(|error| self.invalid(&template_key, &format!("{}: {error}", full.display())))?;
                    Some(text)
                }
                _ => None,
            };
            scenes.push(SceneSpec {
                name: name.clone(),
                entry,
                template,
            });
        }
        Ok(Some(SceneSpecs {
            scenes,
            default: tables.default.clone(),
        }))
    }

    /// The shipped catalog with the `[catalog]` overrides applied.
    pub fn catalog(&self) -> ModelCatalog {
        to_catalog(&self.config.catalog)
    }

    /// Where sessions are stored: `$AGENTRY_HOME/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }
}

/// The configuration file to read, if any.
fn config_file(overrides: &Overrides, env: &Env, cwd: &Path) -> Result<Option<PathBuf>, ConfigError> {
    let explicit = overrides
        .config
        .clone()
        .map(|path| (path, "--config".to_owned()))
        .or_else(|| {
            env.get(CONFIG_VAR)
                .map(|path| (PathBuf::from(path), format!("${CONFIG_VAR}")))
        });
    if let Some((path, origin)) = explicit {
        let path = if path.is_absolute() { path } else { cwd.join(path) };
        if !path.is_file() {
            return Err(ConfigError::FileNotFound { path, origin });
        }
        return Ok(Some(path));
    }
    let local = cwd.join(CONFIG_FILE_NAME);
    Ok(local.is_file().then_some(local))
}

/// The key an `AGENTRY_A__B` variable overrides (`a.b`); `None` for other
/// variables, including `AGENTRY_HOME` and friends, which have no `__`.
fn env_key(name: &str) -> Option<String> {
    let rest = name.strip_prefix(OVERRIDE_PREFIX)?;
    if !rest.contains("__") {
        return None;
    }
    let parts: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
    parts.iter().all(|part| !part.is_empty()).then(|| parts.join("."))
}

fn describe(metadata: &Metadata, file: Option<&Path>) -> String {
    if let Some(path) = metadata.source.as_ref().and_then(Source::file_path) {
        return path.display().to_string();
    }
    let name = metadata.name.to_string();
    if name.starts_with("environment variable") || name.starts_with("command-line flag") {
        name
    } else {
        file.map_or_else(|| "the built-in defaults".to_owned(), |path| path.display().to_string())
    }
}

/// The field names of the struct `T` deserialises (serde's `FIELDS`),
/// found by asking it to deserialise from a probe that only records them.
fn struct_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{Error as _, Visitor, value::Error};

    struct Probe<'a>(&'a mut &'static [&'static str]);

    impl<'de> serde::Deserializer<'de> for Probe<'_> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
            Err(Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Error> {
            *self.0 = fields;
            Err(Error::custom("probed"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// A table with flattened parts (`[agent]`'s runner options, the budget's
/// limits) reports a bad value at the table, not at its key: finds the key
/// whose value alone fails, so that the error names it.
fn locate_flattened(figment: &Figment, error: figment::Error) -> figment::Error {
    fn culprit<T: DeserializeOwned>(figment: &Figment, table: &str) -> Option<String> {
        let Ok(Value::Dict(tag, dict)) = figment.find_value(table) else {
            return None;
        };
        dict.into_iter().find_map(|(key, value)| {
            let alone = Value::Dict(tag, Dict::from([(key.clone(), value)]));
            alone.deserialize::<T>().is_err().then(|| format!("{table}.{key}"))
        })
    }
    let mut error = error
        .into_iter()
        .next()
        .unwrap_or_else(|| figment::Error::from("unknown error"));
    let located = match error.path.join(".").as_str() {
        "agent" => culprit::<AgentSettings>(figment, "agent"),
        "agent.budget" => culprit::<BudgetSettings>(figment, "agent.budget"),
        _ => None,
    };
    if let Some(key) = located {
        error.metadata = figment.find_metadata(&key).cloned();
        error.path = key.split('.').map(str::to_owned).collect();
    }
    error
}

/// A figment error of the whole configuration as a [`ConfigError`] naming
/// the source and the key.
fn from_figment(error: &figment::Error) -> ConfigError {
    let origin = error.metadata.as_ref().map_or_else(
        || "configuration".to_owned(),
        |metadata| describe(metadata, None).replace("the built-in defaults", "configuration"),
    );
    config_error(&error.kind, &error.path, origin)
}

/// The field named by serde's "unknown field `x`" message.
fn flattened_unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

/// The error of `kind` at the key `path`, set in `origin`.
fn config_error(kind: &figment::error::Kind, path: &[String], origin: String) -> ConfigError {
    let key = path.join(".");
    let join = |field: &str| {
        if key.is_empty() {
            field.to_owned()
        } else if path.last().is_some_and(|last| last == field) {
            key.clone()
        } else {
            format!("{key}.{field}")
        }
    };
    // A table with flattened settings (e.g. a provider's HTTP options)
    // reports an unknown key as a message, without the valid ones.
    if let figment::error::Kind::Message(message) = kind
        && let Some(field) = flattened_unknown_field(message)
    {
        return ConfigError::UnknownKey {
            origin,
            key: join(field),
            expected: "those in the annotated agentry.toml of the README".to_owned(),
        };
    }
    match kind {
        figment::error::Kind::UnknownField(field, expected) => ConfigError::UnknownKey {
            origin,
            key: join(field),
            expected: expected.join(", "),
        },
        figment::error::Kind::MissingField(field) => ConfigError::MissingKey {
            hint: missing_hint(&join(field)),
            origin,
            key: join(field),
        },
        kind if key.is_empty() => ConfigError::Unreadable {
            origin,
            message: kind.to_string(),
        },
        kind => ConfigError::InvalidValue {
            origin,
            key,
            message: kind.to_string(),
        },
    }
}

fn missing_hint(key: &str) -> String {
    match key {
        "tools.sql.path" => {
            "; set it to an existing SQLite file, e.g. `[tools.sql] path = \"data/shop.sqlite\"`".to_owned()
        }
        key if key.starts_with("catalog.") => {
            "; a new catalog entry needs at least `input` and `output` prices per million tokens".to_owned()
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use agent_core::Usage;

    use super::*;

    fn load_in(
        dir: &Path,
        toml: Option<&str>,
        env: &[(&str, &str)],
        overrides: &Overrides,
    ) -> Result<Settings, ConfigError> {
        if let Some(toml) = toml {
            fs::write(dir.join(CONFIG_FILE_NAME), toml).unwrap_or_else(|e| panic!("{e}"));
        }
        Settings::read(overrides, &Env::from_pairs(env.iter().copied()), dir)
    }

    fn tempdir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn telemetry_is_off_by_default_and_read_from_its_table() {
        let dir = tempdir();
        let settings = load_in(dir.path(), None, &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.config.telemetry, TelemetrySettings::default());
        assert_eq!(settings.config.telemetry.otlp_endpoint, None);
        let toml = "[telemetry]\notlp_endpoint = \"http://localhost:4318\"\nservice_name = \"bot\"\n\
                    [telemetry.headers]\nauthorization = \"Bearer t0ken\"\n";
        let settings = load_in(dir.path(), Some(toml), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        let telemetry = &settings.config.telemetry;
        assert_eq!(telemetry.otlp_endpoint.as_deref(), Some("http://localhost:4318"));
        assert_eq!(telemetry.protocol, "http/protobuf");
        assert_eq!(telemetry.service_name, "bot");
        assert_eq!(telemetry.headers["authorization"], "Bearer t0ken");
        assert!(!format!("{telemetry:?}").contains("t0ken"), "Debug hides header values");
    }

    #[test]
    fn bad_telemetry_values_name_their_key() {
        for (toml, key) in [
            (
                "[telemetry]\notlp_endpoint = \"localhost:4318\"\n",
                "telemetry.otlp_endpoint",
            ),
            (
                "[telemetry]\notlp_endpoint = \"ftp://collector\"\n",
                "telemetry.otlp_endpoint",
            ),
            ("[telemetry]\nprotocol = \"grpc\"\n", "telemetry.protocol"),
            ("[telemetry]\nservice_name = \" \"\n", "telemetry.service_name"),
            ("[telemetry.headers]\n\"bad header\" = \"x\"\n", "telemetry.headers"),
            (
                "[telemetry]\nmetrics_interval_secs = 0\n",
                "telemetry.metrics_interval_secs",
            ),
            ("[telemetry]\nendpoint = \"http://localhost:4318\"\n", "endpoint"),
        ] {
            let dir = tempdir();
            let error = load_in(dir.path(), Some(toml), &[], &Overrides::default())
                .err()
                .unwrap_or_else(|| panic!("{toml} must be rejected"));
            assert!(error.to_string().contains(key), "{toml}: {error}");
        }
    }

    #[test]
    fn no_file_gives_the_offline_defaults() {
        let dir = tempdir();
        let settings = load_in(dir.path(), None, &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.file, None);
        assert_eq!(settings.config.agent.provider, "llama");
        assert_eq!(settings.config.agent.run.max_iterations, 10);
        #[cfg(feature = "travel")]
        assert_eq!(settings.config.tools.enabled, ["math", "travel"]);
        assert_eq!(settings.config.tools.enabled, default_domains());
        assert!(settings.config.catalog.contains_key("gpt-4o-mini"));
    }

    #[test]
    fn grounding_is_on_for_the_local_model_unless_the_file_says_otherwise() {
        let dir = tempdir();
        let load = |toml: Option<&str>| {
            load_in(dir.path(), toml, &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(load(None).grounding(), Grounding::On, "llama, the default");
        assert_eq!(load(None).agent_config().run.grounding, Grounding::On);
        assert!(load(None).agent_config().run.reask_repeated_calls, "on by default");
        let turn = |settings: &Settings| settings.agent_config().run.budget.deadline.map(|d| d.as_secs_f64());
        assert_eq!(
            turn(&load(None)),
            Some(LLAMA_MAX_TURN_SECS),
            "a turn on llama is bounded"
        );
        assert_eq!(turn(&load(Some("[agent]\nprovider = \"openai\"\n"))), None);
        assert_eq!(turn(&load(Some("[agent]\nmax_turn_secs = 0\n"))), None, "0: no limit");
        let both = load(Some(
            "[agent]\nmax_turn_secs = 30\n[agent.budget]\ndeadline_secs = 20\n",
        ));
        assert_eq!(turn(&both), Some(20.0), "the shorter applies");
        let hosted = load(Some("[agent]\nprovider = \"openai\"\n"));
        assert_eq!(hosted.grounding(), Grounding::Off);
        let hosted_on = load(Some("[agent]\nprovider = \"openai\"\ngrounding = true\n"));
        assert_eq!(hosted_on.agent_config().run.grounding, Grounding::On);
        let local_off = load(Some("[agent]\ngrounding = false\nreask_repeated_calls = false\n"));
        assert!(!local_off.agent_config().run.reask_repeated_calls);
        assert_eq!(local_off.grounding(), Grounding::Off);
    }

    #[test]
    fn flags_beat_environment_beats_file() {
        let dir = tempdir();
        let toml = "[agent]\nprovider = \"openai\"\nmodel = \"from-file\"\nmax_iterations = 4\n";
        let env = [("AGENTRY_MODEL", "from-env"), ("AGENTRY_AGENT__MAX_TOKENS", "512")];
        let settings = load_in(dir.path(), Some(toml), &env, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.config.agent.provider, "openai");
        assert_eq!(settings.config.agent.model.as_deref(), Some("from-env"));
        assert_eq!(settings.config.agent.run.max_iterations, 4);
        assert_eq!(settings.config.agent.request.max_tokens, Some(512));
        assert!(settings.origin("agent.model").contains("AGENTRY_MODEL"));

        let overrides = Overrides {
            model: Some("from-flag".into()),
            max_iterations: Some(2),
            tools: Some(vec!["math".into()]),
            ..Overrides::default()
        };
        let settings = load_in(dir.path(), None, &env, &overrides).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.config.agent.model.as_deref(), Some("from-flag"));
        assert_eq!(settings.config.agent.run.max_iterations, 2);
        assert_eq!(settings.config.tools.enabled, ["math"]);
        assert_eq!(settings.origin("agent.model"), "command-line flag --model");
    }

    #[test]
    fn the_config_file_comes_from_the_flag_then_the_variable() {
        let dir = tempdir();
        let other = dir.path().join("other.toml");
        fs::write(&other, "[agent]\nmax_iterations = 7\n").unwrap_or_else(|e| panic!("{e}"));
        let env = [("AGENTRY_CONFIG", other.to_str().unwrap_or_default())];
        let settings = load_in(dir.path(), None, &env, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.config.agent.run.max_iterations, 7);
        assert_eq!(settings.file.as_deref(), Some(other.as_path()));

        let missing = Overrides {
            config: Some("nope.toml".into()),
            ..Overrides::default()
        };
        let error = load_in(dir.path(), None, &env, &missing)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("nope.toml") && error.contains("--config"), "{error}");
    }

    #[test]
    fn a_malformed_value_names_the_file_and_the_key() {
        let dir = tempdir();
        let error = load_in(
            dir.path(),
            Some("[agent]\nmax_iterations = \"ten\"\n"),
            &[],
            &Overrides::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("agentry.toml"), "{error}");
        assert!(error.contains("`agent.max_iterations`"), "{error}");
    }

    #[test]
    fn a_typo_names_the_key_and_the_valid_ones() {
        let dir = tempdir();
        let error = load_in(
            dir.path(),
            Some("[agent]\nmax_iteration = 3\n"),
            &[],
            &Overrides::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("unknown key `agent.max_iteration`"), "{error}");
        assert!(error.contains("max_iterations"), "{error}");
    }

    #[test]
    fn broken_toml_names_the_file() {
        let dir = tempdir();
        let error = load_in(dir.path(), Some("[agent\nprovider = 1"), &[], &Overrides::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("agentry.toml"), "{error}");
    }

    #[test]
    fn an_unknown_provider_lists_the_valid_ones_and_the_source() {
        let dir = tempdir();
        let error = load_in(
            dir.path(),
            None,
            &[("AGENTRY_PROVIDER", "openia")],
            &Overrides::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("environment variable AGENTRY_PROVIDER"), "{error}");
        assert!(error.contains("unknown provider `openia`"), "{error}");
        assert!(
            error.contains("llama, openai, azure-openai, openai-compatible, anthropic, gemini, ollama"),
            "{error}"
        );
    }

    #[cfg(all(feature = "travel", feature = "sql", feature = "web"))]
    #[test]
    fn an_unknown_tool_domain_lists_the_available_ones() {
        let dir = tempdir();
        let error = load_in(
            dir.path(),
            Some("[tools]\nenabled = [\"math\", \"wether\"]\n"),
            &[],
            &Overrides::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("unknown tool domain `wether`"), "{error}");
        assert!(error.contains("math, travel, sql, web"), "{error}");
    }

    #[test]
    fn catalog_tables_merge_field_by_field_over_the_shipped_one() {
        let dir = tempdir();
        let toml = "[catalog.\"gpt-4o-mini\"]\ninput = 1.0\n\n[catalog.\"my-model\"]\nprovider = \"openai-compatible\"\ninput = 0.5\noutput = 1.5\n";
        let settings = load_in(dir.path(), Some(toml), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        let catalog = settings.catalog();
        let mini = catalog.get("gpt-4o-mini").map(|info| info.pricing);
        assert_eq!(mini.map(|p| p.input_per_million), Some(1.0));
        assert_eq!(mini.map(|p| p.output_per_million), Some(0.6));
        assert_eq!(
            catalog.get("my-model").map(|info| info.pricing.output_per_million),
            Some(1.5)
        );

        let error = load_in(
            dir.path(),
            Some("[catalog.\"x\"]\ninput = 1.0\n"),
            &[],
            &Overrides::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("missing key `catalog.x.output`"), "{error}");
    }

    #[test]
    fn provider_tables_are_checked_and_hidden_from_debug() {
        let dir = tempdir();
        let toml = "[providers.openai]\napi_key = \"sk-hidden-in-debug\"\nmax_retries = 1\n\n\
                    [tools.web.search]\nbackend = \"brave\"\napi_key = \"brave-hidden-in-debug\"\n";
        let settings = load_in(dir.path(), Some(toml), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        let debug = format!("{settings:?}");
        assert!(
            !debug.contains("sk-hidden-in-debug") && !debug.contains("brave-hidden-in-debug"),
            "{debug}"
        );
        assert!(debug.contains("api_key"), "the keys are listed: {debug}");

        let error = load_in(
            dir.path(),
            Some("[providers.openia]\nmax_retries = 1\n"),
            &[],
            &Overrides::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("unknown key `providers.openia`"), "{error}");
    }

    #[test]
    fn relative_paths_in_a_file_are_relative_to_it() {
        let dir = tempdir();
        let settings = load_in(
            dir.path(),
            Some("[tools.sql]\npath = \"shop.sqlite\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            settings.resolve_path("tools.sql.path", Path::new("shop.sqlite")),
            dir.path().join("shop.sqlite")
        );
    }

    #[test]
    fn numbers_out_of_range_are_refused_with_the_key() {
        let dir = tempdir();
        let mut cases = vec![
            ("[agent]\nmax_iterations = 0\n", "agent.max_iterations"),
            ("[agent]\ntemperature = 9.0\n", "agent.temperature"),
            ("[agent.budget]\ndeadline_secs = -1.0\n", "agent.budget.deadline_secs"),
            ("[agent]\nmax_turn_secs = -5.0\n", "agent.max_turn_secs"),
            ("[agent.budget]\ndeadline_secs = 1e300\n", "agent.budget.deadline_secs"),
            ("[agent]\ntemperature = nan\n", "agent.temperature"),
            ("[tools]\ntimeout_secs = inf\n", "tools.timeout_secs"),
        ];
        // `[serve]` is checked only by a build that has the server.
        if cfg!(feature = "serve") {
            cases.push(("[serve]\napi_keys = [\"sk-plain-key\"]\n", "serve.api_keys"));
        }
        for (toml, key) in cases {
            let error = load_in(dir.path(), Some(toml), &[], &Overrides::default())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(key), "{toml}: {error}");
        }
    }

    #[test]
    fn the_shipped_catalog_parses_and_prices_are_sane() {
        let entries = parse_catalog(SHIPPED_CATALOG).unwrap_or_else(|error| panic!("data/models.toml: {error}"));
        assert!(entries.len() >= 20, "{}", entries.len());
        for (name, entry) in &entries {
            assert!(entry.prices_are_valid(), "{name}");
            assert!(!entry.provider.is_empty(), "{name} has no provider");
            if let Some(cached) = entry.cached_input {
                assert!(cached <= entry.input, "{name}: cached input dearer than input");
            }
        }
        for provider in ["openai", "anthropic", "gemini", "llama"] {
            assert!(
                entries.values().any(|entry| entry.provider == provider),
                "no {provider} model"
            );
        }
    }

    #[test]
    fn local_models_are_free_and_remote_ones_are_not() {
        let catalog = to_catalog(&shipped_entries());
        let usage = Usage::new(1_000_000, 1_000_000);
        assert_eq!(catalog.cost("qwen2.5-coder-0.5b", &usage), Some(0.0));
        let cost = catalog.cost("gpt-4o-mini-2024-07-18", &usage).unwrap_or_default();
        assert!((cost - 0.75).abs() < 1e-9, "{cost}");
        assert!(catalog.cost("claude-sonnet-5-5", &usage).unwrap_or_default() > 0.0);
        assert!(catalog.cost("gemini-2.5-flash", &usage).unwrap_or_default() > 0.0);
    }

    #[test]
    fn blank_values_count_as_unset() {
        let env = Env::from_pairs([("A", "1"), ("B", "  ")]);
        assert_eq!(env.get("A").as_deref(), Some("1"));
        assert_eq!(env.get("B"), None);
        assert_eq!(env.get("C"), None);
    }

    #[test]
    fn debug_shows_names_not_values() {
        let env = Env::from_pairs([("OPENAI_API_KEY", "sk-secret-value")]);
        let debug = format!("{env:?}");
        assert!(debug.contains("OPENAI_API_KEY"));
        assert!(!debug.contains("sk-secret-value"));
    }

    #[test]
    fn home_comes_from_the_variable() {
        let env = Env::from_pairs([(HOME_VAR, "/data/agentry")]);
        assert_eq!(env.agentry_home(), PathBuf::from("/data/agentry"));
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn without_the_variable_home_is_in_the_users_data_directory() {
        let env = Env::from_pairs([("HOME", "/home/u")]);
        assert_eq!(env.agentry_home(), PathBuf::from("/home/u/.local/share/agentry"));
        let env = Env::from_pairs([("HOME", "/home/u"), ("XDG_DATA_HOME", "/data")]);
        assert_eq!(env.agentry_home(), PathBuf::from("/data/agentry"));
        let env = Env::from_pairs([("HOME", "/home/u"), ("XDG_DATA_HOME", "relative")]);
        assert_eq!(env.agentry_home(), PathBuf::from("/home/u/.local/share/agentry"));
    }
}
