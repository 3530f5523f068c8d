//! [`Settings`]: the merged configuration, where each value came from, and
//! the checks serde cannot make.

use std::fmt;
use std::path::{Path, PathBuf};

use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider, Source};
use serde::de::DeserializeOwned;

use super::error::{config_error, describe, from_figment, locate_flattened, struct_fields};
use super::tables::{AGENT_KEYS, TOOLS_KEYS};
use super::{
    CONFIG_FILE_NAME, CONFIG_VAR, Config, ConfigError, Env, LLAMA_MAX_TURN_SECS, MODEL_VAR, OVERRIDE_PREFIX, Overrides,
    PROVIDER_VAR, SceneEntry, SceneSpec, SceneSpecs, shipped_entries, to_catalog,
};
use crate::core::ModelCatalog;
use crate::prompts::PromptTemplate;
use crate::runner::{AgentConfig, Budget, Grounding, Guardrails, ModelSettings, RunConfig};
use crate::{ProviderKind, ToolDomain};

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
    /// `[agent.guardrails]`, built when read.
    pub(super) guardrails: Guardrails,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The figment holds raw values, keys included: never shown.
        f.debug_struct("Settings")
            .field("config", &self.config)
            .field("file", &self.file)
            .field("base_url", &self.base_url)
            .field("home", &self.home)
            .field("guardrails", &self.guardrails)
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
    /// `Settings::load` (see [`trust`](super::trust)): for `agentry trust`, which
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
        let mut settings = Self {
            config,
            file,
            base_url: overrides.base_url.clone().filter(|url| !url.trim().is_empty()),
            home: env.agentry_home(),
            file_is_local,
            figment,
            guardrails: Guardrails::new(),
        };
        settings.validate()?;
        settings.guardrails = settings.build_guardrails()?;
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
        for name in self.config.providers.0.keys() {
            if ProviderKind::parse(name).is_none() {
                return Err(self.unknown_key(&format!("providers.{name}"), ProviderKind::all_names()));
            }
        }
        // Every number against its range (`super::ranges`), then what the
        // runner checks of its own configuration.
        self.check_ranges()?;
        if let Err(error) = self.agent_config().validate() {
            // `run.max_iterations` is `agent.max_iterations` in the file.
            let field = error.field.split_once('.').map_or(error.field, |(_, rest)| rest);
            return Err(self.invalid(&format!("agent.{field}"), error.requirement));
        }
        self.validate_tools()?;
        self.scene_specs()?;
        self.validate_telemetry()?;
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
            crate::check_mcp_name(name).map_err(|message| self.invalid(&key, &message))?;
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

    /// A [`ConfigError::InvalidValue`] of `key`, naming where it was set.
    pub fn invalid(&self, key: &str, message: &str) -> ConfigError {
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
            key: "agent.provider",
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

    /// The value at `path` (one key per part, so a part may hold a dot, as
    /// a catalog's model names do); `None` when nothing is there.
    pub(super) fn value_at(&self, path: &[String]) -> Option<Value> {
        let (first, rest) = path.split_first()?;
        let mut value = self.figment.find_value(first).ok()?;
        for part in rest {
            value = match value {
                Value::Dict(_, mut dict) => dict.remove(part)?,
                _ => return None,
            };
        }
        Some(value)
    }

    /// Where `value` (found in these settings) came from, as
    /// [`origin`](Self::origin) says it.
    pub(super) fn origin_of(&self, value: &Value) -> String {
        self.figment.get_metadata(value.tag()).map_or_else(
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
    pub fn mcp_server(&self, name: &str) -> Result<crate::mcp::McpServerConfig, ConfigError> {
        let key = format!("mcp.servers.{name}");
        let mut config: crate::mcp::McpServerConfig = self.table(&key)?.unwrap_or_default();
        if let Some(cwd) = &config.cwd {
            config.cwd = Some(self.resolve_path(&format!("{key}.cwd"), cwd));
        }
        Ok(config)
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
            let guardrails = match &entry.guardrails {
                Some(tables) => Some(self.guardrails_of(tables, &format!("{key}.guardrails"))?),
                None => None,
            };
            scenes.push(SceneSpec {
                name: name.clone(),
                entry,
                template,
                guardrails,
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
