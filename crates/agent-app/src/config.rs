//! Configuration: `agentry.toml`, environment overrides and command-line
//! flags, merged with figment (defaults < file < environment < flags).
//!
//! The file comes from `--config`, else `$AGENTRY_CONFIG`, else
//! `agentry.toml` in the working directory; without one the defaults apply
//! (the embedded local model with the math and travel tools). Every layer
//! is named after its source (the file's path, `environment variable
//! AGENTRY_MODEL`, `command-line flag --provider`), so an error names where
//! the bad value came from and the key it was under.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use agent_core::ModelCatalog;
use agent_runner::{AgentConfig, Budget, Grounding, RequestOptions, RunConfig, ToolProtocol};
use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider, Source};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::catalog::{self, CatalogEntry};
use crate::env::{CONFIG_VAR, Env, MODEL_VAR, OVERRIDE_PREFIX, PROVIDER_VAR};
use crate::error::ConfigError;
use crate::providers::ProviderKind;
use crate::tools::{tool_domain, tool_domain_names};

/// The file looked for in the working directory.
pub const CONFIG_FILE_NAME: &str = "agentry.toml";

/// The default provider: the embedded local model.
pub const DEFAULT_PROVIDER: &str = "llama";

/// The time a turn on the embedded local model may take by default, in
/// seconds (`[agent] max_turn_secs`).
pub const LLAMA_MAX_TURN_SECS: f64 = 120.0;

/// Values from command-line flags; each beats the file and the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--config FILE`.
    pub config: Option<PathBuf>,
    /// `--provider NAME`.
    pub provider: Option<String>,
    /// `--model NAME`.
    pub model: Option<String>,
    /// `--base-url URL`: replaces the chosen provider's base URL.
    pub base_url: Option<String>,
    /// `--tools a,b`: replaces `tools.enabled`.
    pub tools: Option<Vec<String>>,
    /// `--max-iterations N`.
    pub max_iterations: Option<u32>,
}

/// The `[agent]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// `llama | openai | azure-openai | openai-compatible | anthropic | gemini | ollama`.
    pub provider: String,
    /// The model; unset: the provider table's `model`, else the provider's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model calls that may request tools before the answer is forced.
    pub max_iterations: u32,
    /// Upper bound on generated tokens per model call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Ask the provider to cache the stable prompt prefix.
    pub prompt_caching: bool,
    /// `auto | native | text` (and `react`).
    pub tool_protocol: ToolProtocol,
    /// Replaces the built-in system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Budgets that end a run early.
    pub budget: BudgetSettings,
    /// Check every final answer's figures against the user's words and the
    /// tool results, re-ask the model and never pass on an invented figure
    /// (`agent_runner::Grounding`). Unset: on for `llama`, off for the
    /// others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grounding: Option<bool>,
    /// A reply that only repeats calls already answered in the turn is not
    /// run: the model is asked once more with the calls and the question
    /// restated, then the answer is forced (`RunConfig::reask_repeated_calls`).
    pub reask_repeated_calls: bool,
    /// The time one turn may take, in seconds: past it the turn ends with
    /// what was found so far (`budget_exceeded`). Unset: 120 for `llama`
    /// (a small local model can otherwise write for many minutes), none for
    /// the others; 0: no limit. With `[agent.budget] deadline_secs` too, the
    /// shorter applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turn_secs: Option<f64>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            provider: DEFAULT_PROVIDER.to_owned(),
            model: None,
            max_iterations: 10,
            max_tokens: None,
            temperature: None,
            prompt_caching: true,
            tool_protocol: ToolProtocol::Auto,
            system_prompt: None,
            budget: BudgetSettings::default(),
            grounding: None,
            reask_repeated_calls: true,
            max_turn_secs: None,
        }
    }
}

/// The `[agent.budget]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetSettings {
    /// Maximum input + output tokens of one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// Maximum estimated cost of one run, in USD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Maximum tool executions of one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// Wall-clock limit of one run, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_secs: Option<f64>,
}

impl BudgetSettings {
    /// The runner's budget.
    pub fn to_budget(self) -> Budget {
        Budget {
            max_total_tokens: self.max_total_tokens,
            max_cost_usd: self.max_cost_usd,
            max_tool_calls: self.max_tool_calls,
            deadline: self
                .deadline_secs
                .and_then(|secs| std::time::Duration::try_from_secs_f64(secs).ok())
                .filter(|deadline| !deadline.is_zero()),
        }
    }
}

/// The `[tools]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSettings {
    /// Tool domains the agent may use.
    pub enabled: Vec<String>,
    /// How long one tool call may run, in seconds (no limit when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<f64>,
    /// The longest tool result kept in the conversation, in bytes; longer
    /// ones are cut with a marker saying so. 0: no cap.
    pub max_result_bytes: usize,
    /// Tools whose calls wait for the user's approval before they run:
    /// `chat` asks y/N, `run` pauses (stop reason `awaiting_approval`) and
    /// `agentry resume NAME --approve ID|--deny ID` continues.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub require_approval: Vec<String>,
    /// `[tools.sql]`, passed to `agent_tools_sql::SqlConfig`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<RawTable>,
    /// `[tools.web]`, passed to `agent_tools_web::WebConfig`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web: Option<RawTable>,
}

/// A table kept raw until its crate deserialises it. `Debug` shows its keys
/// only: it may hold a secret (`api_key`).
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
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

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            enabled: crate::tools::default_domains(),
            timeout_secs: None,
            max_result_bytes: agent_runner::DEFAULT_MAX_TOOL_RESULT_BYTES,
            require_approval: Vec::new(),
            sql: None,
            web: None,
        }
    }
}

/// The `[providers.NAME]` tables, kept raw until the chosen provider's
/// crate deserialises its own. `Debug` shows table names only: a table may
/// hold an `api_key`.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProviderTables(pub BTreeMap<String, RawTable>);

impl fmt::Debug for ProviderTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter()).finish()
    }
}

/// The `[telemetry]` table: OpenTelemetry (OTLP) export of the GenAI spans
/// and metrics. Nothing is exported, and no exporter thread started, unless
/// `otlp_endpoint` is set. `Debug` shows header names only: a header may
/// hold a token.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The collector's base URL, e.g. `http://localhost:4318`; spans go to
    /// `{otlp_endpoint}/v1/traces`, metrics to `{otlp_endpoint}/v1/metrics`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// The OTLP transport: `http/protobuf` (the only one supported).
    pub protocol: String,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// Extra HTTP headers sent with every export (e.g. an API key).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How often metrics are exported, in seconds (and once at exit).
    pub metrics_interval_secs: f64,
}

/// The OTLP protocols `telemetry.protocol` accepts.
pub const TELEMETRY_PROTOCOLS: &[&str] = &["http/protobuf"];

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            protocol: "http/protobuf".to_owned(),
            service_name: "agentry".to_owned(),
            headers: BTreeMap::new(),
            metrics_interval_secs: 60.0,
        }
    }
}

impl fmt::Debug for TelemetrySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetrySettings")
            .field("otlp_endpoint", &self.otlp_endpoint)
            .field("protocol", &self.protocol)
            .field("service_name", &self.service_name)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("metrics_interval_secs", &self.metrics_interval_secs)
            .finish()
    }
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[agent]`.
    pub agent: AgentSettings,
    /// `[providers.NAME]`.
    #[serde(skip_serializing_if = "is_empty_tables")]
    pub providers: ProviderTables,
    /// `[tools]`.
    pub tools: ToolSettings,
    /// `[catalog."model-name"]`, merged over the shipped catalog.
    pub catalog: BTreeMap<String, CatalogEntry>,
    /// `[telemetry]`.
    pub telemetry: TelemetrySettings,
    /// `[mcp]`: MCP servers, each a tool domain (see [`crate::mcp`]).
    #[serde(skip_serializing_if = "crate::mcp::McpSettings::is_empty")]
    pub mcp: crate::mcp::McpSettings,
    /// `[scenes]`: named sub-agents (see [`crate::scenes`]).
    #[serde(skip_serializing_if = "crate::scenes::SceneTables::is_empty")]
    pub scenes: crate::scenes::SceneTables,
    /// `[serve]`: API keys and limits of `agentry serve` (see [`crate::serve`]).
    #[cfg(feature = "serve")]
    #[serde(skip_serializing_if = "crate::serve::ServeSettings::is_default")]
    pub serve: crate::serve::ServeSettings,
    /// `[serve]`, unchecked: this build has no `agentry serve`.
    #[cfg(not(feature = "serve"))]
    #[serde(skip_serializing_if = "RawTable::is_empty")]
    pub serve: RawTable,
    /// `[store]`: where `agentry serve` keeps sessions (see [`crate::serve`]).
    #[serde(skip_serializing_if = "crate::serve::StoreSettings::is_default")]
    pub store: crate::serve::StoreSettings,
}

fn is_empty_tables(tables: &ProviderTables) -> bool {
    tables.0.is_empty()
}

impl Default for Config {
    fn default() -> Self {
        Self {
            agent: AgentSettings::default(),
            providers: ProviderTables::default(),
            tools: ToolSettings::default(),
            catalog: catalog::shipped_entries(),
            telemetry: TelemetrySettings::default(),
            mcp: crate::mcp::McpSettings::default(),
            scenes: crate::scenes::SceneTables::default(),
            #[cfg(feature = "serve")]
            serve: crate::serve::ServeSettings::default(),
            #[cfg(not(feature = "serve"))]
            serve: RawTable::default(),
            store: crate::serve::StoreSettings::default(),
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
    /// `--base-url`.
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
    /// Loads the configuration for these flags, environment and working
    /// directory, validates it, and refuses a working-directory
    /// `agentry.toml` that sets keys which run programs or send secrets
    /// until the user trusts it (see [`crate::trust`]).
    pub fn load(overrides: &Overrides, env: &Env, cwd: &Path) -> Result<Self, ConfigError> {
        let settings = Self::read(overrides, env, cwd)?;
        crate::trust::check(&settings, env)?;
        Ok(settings)
    }

    /// [`load`](Self::load) without the trust check: for `agentry trust`,
    /// which shows what a file would do before the user trusts it. Nothing
    /// read this way may start a process or send a request.
    pub fn read(overrides: &Overrides, env: &Env, cwd: &Path) -> Result<Self, ConfigError> {
        let file = config_file(overrides, env, cwd)?;
        let file_is_local = file.as_ref().is_some_and(|path| *path == cwd.join(CONFIG_FILE_NAME))
            && overrides.config.is_none()
            && env.get(CONFIG_VAR).is_none();
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = &file {
            figment = figment.merge(Toml::file_exact(path));
        }
        for (name, value) in env.iter() {
            if let Some(key) = env_key(name) {
                let value: Value = value.parse().unwrap_or_else(|_| Value::from(value.to_owned()));
                figment = figment.merge(layer(format!("environment variable {name}"), &key, value));
            }
        }
        if let Some(provider) = env.get(PROVIDER_VAR) {
            figment = figment.merge(layer(
                format!("environment variable {PROVIDER_VAR}"),
                "agent.provider",
                Value::from(provider),
            ));
        }
        if let Some(model) = env.get(MODEL_VAR) {
            figment = figment.merge(layer(
                format!("environment variable {MODEL_VAR}"),
                "agent.model",
                Value::from(model),
            ));
        }
        if let Some(provider) = &overrides.provider {
            figment = figment.merge(layer(
                "command-line flag --provider",
                "agent.provider",
                Value::from(provider.clone()),
            ));
        }
        if let Some(model) = &overrides.model {
            figment = figment.merge(layer(
                "command-line flag --model",
                "agent.model",
                Value::from(model.clone()),
            ));
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
        let config: Config = figment.extract().map_err(from_figment)?;
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
        if let Err(error) = self.agent_config().validate() {
            // `run.max_iterations` is `agent.max_iterations` in the file.
            let field = error.field.split_once('.').map_or(error.field, |(_, rest)| rest);
            return Err(self.invalid(&format!("agent.{field}"), error.requirement));
        }
        if let Some(secs) = agent.budget.deadline_secs
            && !(secs > 0.0 && std::time::Duration::try_from_secs_f64(secs).is_ok())
        {
            return Err(self.invalid("agent.budget.deadline_secs", "must be a positive number of seconds"));
        }
        if let Some(secs) = agent.max_turn_secs
            && !(secs >= 0.0 && std::time::Duration::try_from_secs_f64(secs).is_ok())
        {
            return Err(self.invalid(
                "agent.max_turn_secs",
                "must be 0 (no limit) or a positive number of seconds",
            ));
        }
        if let Some(secs) = self.config.tools.timeout_secs
            && !(secs > 0.0 && std::time::Duration::try_from_secs_f64(secs).is_ok())
        {
            return Err(self.invalid("tools.timeout_secs", "must be a positive number of seconds"));
        }
        crate::mcp::validate(self)?;
        crate::scenes::validate(self)?;
        #[cfg(feature = "serve")]
        crate::serve::api_keys(self)?;
        for name in &self.config.tools.enabled {
            if let Some(domain) = tool_domain(name) {
                domain.check_compiled()?;
            } else if !self.config.mcp.has(name) {
                let mut available = tool_domain_names();
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
        for name in self.config.providers.0.keys() {
            if ProviderKind::parse(name).is_none() {
                return Err(ConfigError::UnknownKey {
                    origin: self.origin(&format!("providers.{name}")),
                    key: format!("providers.{name}"),
                    expected: ProviderKind::all_names(),
                });
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

    /// Checks the `[telemetry]` table.
    fn validate_telemetry(&self) -> Result<(), ConfigError> {
        let telemetry = &self.config.telemetry;
        if let Some(endpoint) = &telemetry.otlp_endpoint {
            let parsed = url::Url::parse(endpoint.trim());
            if !parsed.is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.has_host()) {
                return Err(self.invalid(
                    "telemetry.otlp_endpoint",
                    "must be an http:// or https:// URL, e.g. \"http://localhost:4318\"",
                ));
            }
        }
        if !TELEMETRY_PROTOCOLS.contains(&telemetry.protocol.as_str()) {
            return Err(self.invalid(
                "telemetry.protocol",
                &format!(
                    "unsupported OTLP protocol \"{}\"; supported: {}",
                    telemetry.protocol,
                    TELEMETRY_PROTOCOLS.join(", ")
                ),
            ));
        }
        if telemetry.service_name.trim().is_empty() {
            return Err(self.invalid("telemetry.service_name", "must not be empty"));
        }
        for (name, value) in &telemetry.headers {
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name {
                return Err(self.invalid("telemetry.headers", &format!("\"{name}\" is not a valid header name")));
            }
            if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
                return Err(self.invalid(
                    &format!("telemetry.headers.{name}"),
                    "must not contain control characters",
                ));
            }
        }
        let interval = telemetry.metrics_interval_secs;
        if !(interval > 0.0 && std::time::Duration::try_from_secs_f64(interval).is_ok()) {
            return Err(self.invalid(
                "telemetry.metrics_interval_secs",
                "must be a positive number of seconds",
            ));
        }
        Ok(())
    }

    /// The runner's configuration of every agent built from these settings:
    /// `[agent]`'s loop policies, budgets and request options, and
    /// `[tools] max_result_bytes`. The one place the file's keys meet
    /// [`AgentConfig`], which checks the ranges.
    pub fn agent_config(&self) -> AgentConfig {
        let agent = &self.config.agent;
        let mut budget = agent.budget.to_budget();
        // The turn's time limit and the budget's deadline: the shorter.
        budget.deadline = match (budget.deadline, self.max_turn()) {
            (Some(deadline), Some(turn)) => Some(deadline.min(turn)),
            (deadline, turn) => deadline.or(turn),
        };
        AgentConfig {
            run: RunConfig {
                max_iterations: agent.max_iterations,
                tool_protocol: agent.tool_protocol,
                budget,
                max_tool_result_bytes: self.config.tools.max_result_bytes,
                grounding: self.grounding(),
                reask_repeated_calls: agent.reask_repeated_calls,
                ..RunConfig::default()
            },
            request: RequestOptions {
                max_tokens: agent.max_tokens,
                temperature: agent.temperature,
                stop: Vec::new(),
                prompt_caching: agent.prompt_caching,
            },
        }
    }

    /// The time one turn may take: `agent.max_turn_secs` (0: none), else
    /// [`LLAMA_MAX_TURN_SECS`] for the embedded local model and none for
    /// the hosted providers.
    pub fn max_turn(&self) -> Option<std::time::Duration> {
        let secs = self.config.agent.max_turn_secs.or_else(|| {
            matches!(self.provider(), Ok(crate::providers::ProviderKind::Llama)).then_some(LLAMA_MAX_TURN_SECS)
        })?;
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
            .unwrap_or_else(|| matches!(self.provider(), Ok(crate::providers::ProviderKind::Llama)));
        if on { Grounding::On } else { Grounding::Off }
    }

    fn invalid(&self, key: &str, message: &str) -> ConfigError {
        ConfigError::InvalidValue {
            origin: self.origin(key),
            key: key.to_owned(),
            message: message.to_owned(),
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
    /// variable X`, `command-line flag --y`, or `the defaults`.
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

    /// The `[providers.NAME]` table as the provider crate's config type; the
    /// type's default when there is no table.
    pub fn provider_table<T: DeserializeOwned + Default>(&self, name: &str) -> Result<T, ConfigError> {
        let key = format!("providers.{name}");
        if !self.figment.contains(&key) {
            return Ok(T::default());
        }
        self.figment
            .extract_inner(&key)
            .map_err(|error| from_figment_at(error, &key))
    }

    /// A `[tools.NAME]` table as the tool crate's config type; `None` when
    /// there is no table.
    pub fn tool_table<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, ConfigError> {
        let key = format!("tools.{name}");
        if !self.figment.contains(&key) {
            return Ok(None);
        }
        self.figment
            .extract_inner(&key)
            .map(Some)
            .map_err(|error| from_figment_at(error, &key))
    }

    /// The table at the dotted `key` (e.g. `mcp.servers.time`) as `T`;
    /// `None` when there is no such table.
    pub fn table<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ConfigError> {
        if !self.figment.contains(key) {
            return Ok(None);
        }
        self.figment
            .extract_inner(key)
            .map(Some)
            .map_err(|error| from_figment_at(error, key))
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

    /// The shipped catalog with the `[catalog]` overrides applied.
    pub fn catalog(&self) -> ModelCatalog {
        catalog::to_catalog(&self.config.catalog)
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

/// A figment error as a [`ConfigError`] naming the source and the key.
fn from_figment(error: figment::Error) -> ConfigError {
    from_figment_at(error, "")
}

/// [`from_figment`] for an error of `extract_inner(prefix)`, whose path
/// figment gives as the inner path followed by the prefix's parts.
/// The field named by serde's "unknown field `x`" message.
fn flattened_unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

fn from_figment_at(error: figment::Error, prefix: &str) -> ConfigError {
    let error = error
        .into_iter()
        .next()
        .unwrap_or_else(|| figment::Error::from("unknown error"));
    let origin = error.metadata.as_ref().map_or_else(
        || "configuration".to_owned(),
        |metadata| describe(metadata, None).replace("the built-in defaults", "configuration"),
    );
    let mut path = error.path.clone();
    let prefix: Vec<&str> = prefix.split('.').filter(|part| !part.is_empty()).collect();
    if !prefix.is_empty() && path.ends_with(&prefix.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()) {
        path.truncate(path.len() - prefix.len());
        let mut full: Vec<String> = prefix.iter().map(|p| (*p).to_owned()).collect();
        full.extend(path);
        path = full;
    }
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
    if let figment::error::Kind::Message(message) = &error.kind
        && let Some(field) = flattened_unknown_field(message)
    {
        return ConfigError::UnknownKey {
            origin,
            key: join(field),
            expected: "those in the annotated agentry.toml of the README".to_owned(),
        };
    }
    match &error.kind {
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
        assert_eq!(settings.config.agent.max_iterations, 10);
        #[cfg(feature = "demo")]
        assert_eq!(settings.config.tools.enabled, ["math", "travel"]);
        assert_eq!(settings.config.tools.enabled, crate::tools::default_domains());
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
        assert_eq!(settings.config.agent.max_iterations, 4);
        assert_eq!(settings.config.agent.max_tokens, Some(512));
        assert!(settings.origin("agent.model").contains("AGENTRY_MODEL"));

        let overrides = Overrides {
            model: Some("from-flag".into()),
            max_iterations: Some(2),
            tools: Some(vec!["math".into()]),
            ..Overrides::default()
        };
        let settings = load_in(dir.path(), None, &env, &overrides).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.config.agent.model.as_deref(), Some("from-flag"));
        assert_eq!(settings.config.agent.max_iterations, 2);
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
        assert_eq!(settings.config.agent.max_iterations, 7);
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

    #[cfg(all(feature = "demo", feature = "sql", feature = "web"))]
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

    #[cfg(feature = "openai")]
    #[test]
    fn a_misspelt_key_in_a_provider_table_is_an_error_naming_it() {
        let dir = tempdir();
        let good = "[providers.openai]\nmodel = \"m\"\nmax_retries = 2\n";
        let settings = load_in(dir.path(), Some(good), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        let config: agent_provider_openai::OpenAiConfig =
            settings.provider_table("openai").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((config.model.as_str(), config.http.max_retries), ("m", 2));

        let misspelt = "[providers.openai]\nmodel = \"m\"\nmax_retrys = 2\n";
        let settings =
            load_in(dir.path(), Some(misspelt), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        let error = settings
            .provider_table::<agent_provider_openai::OpenAiConfig>("openai")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("unknown key `providers.openai.max_retrys`") && error.contains("annotated agentry.toml"),
            "{error}"
        );
    }

    #[cfg(feature = "sql")]
    #[test]
    fn a_misspelt_key_in_a_tool_table_is_an_error_naming_it() {
        let dir = tempdir();
        let settings = load_in(
            dir.path(),
            Some("[tools.sql]\npth = \"x.db\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let error = settings
            .tool_table::<agent_tools_sql::SqlConfig>("sql")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("unknown key `tools.sql.pth`"), "{error}");
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
}
