//! The tables of `agentry.toml`, as serde types: `[agent]`, `[tools]`,
//! `[providers.NAME]`, `[mcp]`, `[scenes]`, `[store]`, and the whole file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use figment::value::Dict;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::{CatalogEntry, DEFAULT_PROVIDER, TelemetrySettings, shipped_entries};
use crate::ToolDomain;
use crate::runner::{Budget, ModelSettings, RunConfig};

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
    /// Providers a model call falls back to, in order, when `provider`
    /// fails with a retryable error or its circuit breaker is open (before
    /// any of a reply has streamed). Each is configured by its own
    /// `[providers.NAME]` table; `model` and `--base-url` are `provider`'s
    /// only. Needs the `resilience` feature.
    pub fallback: Vec<String>,
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
    /// `[agent.guardrails]`: checks of the input, the output, tool calls
    /// and tool results ([`Settings::guardrails`](super::Settings::guardrails)).
    pub guardrails: super::GuardrailTables,
    /// The loop's policies (its `budget` and `grounding` are the keys above).
    #[serde(flatten)]
    pub run: RunConfig,
    /// What every request carries (`prompt_caching` on by default).
    #[serde(flatten)]
    pub request: ModelSettings,
    /// Keys of none of the above: typos, reported by [`Settings::read`](super::Settings::read).
    #[serde(flatten)]
    #[allow(
        clippy::zero_sized_map_values,
        reason = "only the keys are wanted; a set cannot be flattened"
    )]
    pub(super) unknown: BTreeMap<String, IgnoredAny>,
}

/// The keys of `[agent]` that are not the runner's.
pub(super) const AGENT_KEYS: [&str; 8] = [
    "provider",
    "fallback",
    "model",
    "system_prompt",
    "grounding",
    "max_turn_secs",
    "budget",
    "guardrails",
];

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            provider: DEFAULT_PROVIDER.to_owned(),
            fallback: Vec::new(),
            model: None,
            system_prompt: None,
            grounding: None,
            max_turn_secs: None,
            budget: BudgetSettings::default(),
            guardrails: super::GuardrailTables::default(),
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
    /// Keys of none of the above, reported by [`Settings::read`](super::Settings::read).
    #[serde(flatten)]
    #[allow(
        clippy::zero_sized_map_values,
        reason = "only the keys are wanted; a set cannot be flattened"
    )]
    pub(super) unknown: BTreeMap<String, IgnoredAny>,
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
    /// Tools whose calls wait for the user's approval when a condition on
    /// their arguments holds: `transfer = "amount > 100"`, or a list of
    /// conditions (any one asks). A condition is `FIELD OP VALUE`
    /// ([`ApprovalCondition`](agent_tools::ApprovalCondition)); one that
    /// cannot be read on a call asks.
    pub require_approval_when: BTreeMap<String, Conditions>,
    /// The names of the `[tools.NAME]` tables (checked by [`Settings::read`](super::Settings::read)).
    #[serde(flatten)]
    #[allow(
        clippy::zero_sized_map_values,
        reason = "only the keys are wanted; a set cannot be flattened"
    )]
    pub(super) tables: BTreeMap<String, IgnoredAny>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            enabled: default_domains(),
            timeout_secs: None,
            max_result_bytes: None,
            require_approval: Vec::new(),
            require_approval_when: BTreeMap::new(),
            tables: BTreeMap::new(),
        }
    }
}

/// The keys of `[tools]` besides the domains' tables.
pub(super) const TOOLS_KEYS: [&str; 5] = [
    "enabled",
    "timeout_secs",
    "max_result_bytes",
    "require_approval",
    "require_approval_when",
];

/// One condition or several.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Conditions {
    /// `"amount > 100"`.
    One(String),
    /// `["amount > 100", "currency != \"EUR\""]`: any one asks.
    Any(Vec<String>),
}

impl Conditions {
    /// The conditions as written.
    pub fn texts(&self) -> &[String] {
        match self {
            Self::One(text) => std::slice::from_ref(text),
            Self::Any(texts) => texts,
        }
    }
}

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
/// chosen provider's ([`ProviderConfig::from_table`](crate::ProviderConfig::from_table)). `Debug`
/// shows table names and keys only: a table may hold an `api_key`.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct ProviderTables(pub BTreeMap<String, RawTable>);

impl fmt::Debug for ProviderTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter()).finish()
    }
}

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
/// checked by [`Settings::scene_specs`](super::Settings::scene_specs).
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
pub use crate::SceneConfig as SceneEntry;

/// A configured scene, its template file read and its guardrails built.
#[derive(Debug, Clone)]
pub struct SceneSpec {
    /// The scene's name (its table's key).
    pub name: String,
    /// The table.
    pub entry: SceneEntry,
    /// The template's text, when `prompt_template` is set.
    pub template: Option<String>,
    /// Its `[scenes.NAME.guardrails]`, when set.
    pub guardrails: Option<crate::runner::Guardrails>,
}

impl SceneSpec {
    /// The runner's scene: its prompt is its own, else its template, else
    /// `base_prompt` and a line naming it; its guardrails replace the
    /// agent's when it has them.
    ///
    /// # Errors
    ///
    /// The template does not parse (the error names `scenes.NAME.prompt_template`).
    pub fn scene(&self, base_prompt: &str) -> Result<crate::runner::Scene, super::ConfigError> {
        let scene = self
            .entry
            .scene(&self.name, self.template.as_deref(), base_prompt)
            .map_err(|error| super::ConfigError::InvalidValue {
                origin: format!("scene `{}`", self.name),
                key: format!("scenes.{}.prompt_template", self.name),
                message: error.to_string(),
            })?;
        Ok(match &self.guardrails {
            Some(guardrails) => scene.guardrails(guardrails.clone()),
            None => scene,
        })
    }
}

/// Every configured scene, in the order of their names, and the default.
#[derive(Debug, Clone)]
pub struct SceneSpecs {
    /// The scenes.
    pub scenes: Vec<SceneSpec>,
    /// `[scenes] default`.
    pub default: Option<String>,
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
    /// `[serve]`: API keys and limits of `agentry serve`, read by the
    /// server (`agent_server::ServeSettings`).
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
            serve: RawTable::default(),
            store: StoreSettings::default(),
        }
    }
}
