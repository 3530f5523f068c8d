//! The parts the settings describe, made by the factory: the chosen
//! provider's [`ProviderConfig`] ([`Settings::provider_config`]) and the
//! enabled tool domains in a [`ToolBox`] ([`Settings::tool_box`]), each
//! from its table with its paths made relative to the file that set them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use figment::value::{Dict, Value};

use agent_tools::ApprovalCondition;

use super::{ConfigError, Env, HOME_VAR, Settings};
use crate::core::ToolProvider;
use crate::{DomainError, ProviderConfig, ProviderKind, TableError, ToolBox, ToolDomain};

/// The keys of `[tools.NAME]` tables that are paths, relative to the file
/// that sets them.
const PATH_KEYS: &[(&str, &str)] = &[("sql", "path")];

/// Why the enabled tool domains could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A table is wrong or names a part this build lacks (exit status 2 in
    /// the CLI).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An MCP server could not be started or reached.
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] crate::mcp::McpError),
}

impl Settings {
    /// The configuration of the chosen provider: its `[providers.NAME]`
    /// table with `agent.model` as its `model` and `--base-url` as its
    /// `base_url`. For the local model, `--model` naming a `.gguf` file is
    /// its `model_path`, its paths are relative to the file that set them,
    /// and the model store and prompt cache default to `$AGENTRY_HOME`'s.
    ///
    /// # Errors
    ///
    /// The table is wrong (the error names the key), the provider is not in
    /// this build, or a flag does not apply to it.
    pub fn provider_config(&self, env: &Env) -> Result<ProviderConfig, ConfigError> {
        self.config_of(self.provider()?, true, env)
    }

    /// The providers of `[agent] fallback`, in the order they are tried
    /// after `[agent] provider`.
    ///
    /// # Errors
    ///
    /// A name no provider has, a provider listed twice (or the primary
    /// listed again), or a fallback in a build without the `resilience`
    /// feature.
    pub fn fallback_providers(&self) -> Result<Vec<ProviderKind>, ConfigError> {
        let names = &self.config.agent.fallback;
        if names.is_empty() {
            return Ok(Vec::new());
        }
        if cfg!(not(feature = "resilience")) {
            return Err(ConfigError::FeatureNotCompiled {
                what: "`[agent] fallback`".to_owned(),
                feature: "resilience",
            });
        }
        let primary = self.provider()?;
        let mut kinds = Vec::with_capacity(names.len());
        for name in names {
            let kind = ProviderKind::parse(name).ok_or_else(|| ConfigError::UnknownProvider {
                origin: self.origin("agent.fallback"),
                key: "agent.fallback",
                name: name.clone(),
                valid: ProviderKind::all_names(),
            })?;
            if kind == primary || kinds.contains(&kind) {
                return Err(ConfigError::InvalidValue {
                    origin: self.origin("agent.fallback"),
                    key: "agent.fallback".to_owned(),
                    message: format!(
                        "`{name}` is tried already (`agent.provider` goes first, then each fallback once); \
                         list each provider once"
                    ),
                });
            }
            kinds.push(kind);
        }
        Ok(kinds)
    }

    /// The configuration of the fallback provider `kind`: its
    /// `[providers.NAME]` table as written (`agent.model` and `--base-url`
    /// are the primary provider's).
    ///
    /// # Errors
    ///
    /// As [`Self::provider_config`].
    pub fn fallback_provider_config(&self, kind: ProviderKind, env: &Env) -> Result<ProviderConfig, ConfigError> {
        self.config_of(kind, false, env)
    }

    /// The configuration of `kind` from its table; the `primary` provider
    /// takes `agent.model` and `--base-url` too.
    fn config_of(&self, kind: ProviderKind, primary: bool, env: &Env) -> Result<ProviderConfig, ConfigError> {
        let key = format!("providers.{}", kind.name());
        let mut table = self.table_value(&key);
        // The breaker's and the limiter's tables are read by `model_client`.
        let guards: Vec<&str> = super::RESILIENCE_TABLES
            .into_iter()
            .filter(|name| table.remove(*name).is_some())
            .collect();
        if let (Some(name), false) = (guards.first(), cfg!(feature = "resilience")) {
            return Err(ConfigError::FeatureNotCompiled {
                what: format!("`[{key}.{name}]`"),
                feature: "resilience",
            });
        }
        if let (true, Some(model)) = (primary, &self.config.agent.model) {
            table.insert("model".to_owned(), Value::from(model.clone()));
        }
        if kind == ProviderKind::Llama {
            self.prepare_llama(&mut table, env, primary)?;
        } else if let (true, Some(url)) = (primary, &self.base_url) {
            table.insert("base_url".to_owned(), Value::from(url.clone()));
        }
        ProviderConfig::from_table(kind, &Value::from(table)).map_err(|error| match error {
            TableError::NotCompiled(_) => ConfigError::provider_not_compiled(kind),
            TableError::Invalid(error) => self.key_error(&error, &key),
        })
    }

    /// The `[providers.llama]` table as it runs (see [`Self::provider_config`]).
    fn prepare_llama(&self, table: &mut Dict, env: &Env, primary: bool) -> Result<(), ConfigError> {
        if primary && self.base_url.is_some() {
            return Err(ConfigError::Unsupported(
                "--base-url does not apply to the llama provider, which runs the model in-process; \
                 use --provider openai-compatible --base-url URL for a llama.cpp server"
                    .to_owned(),
            ));
        }
        if let (true, Some(model)) = (primary, &self.config.agent.model) {
            let path = std::path::Path::new(model);
            let is_file = path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"))
                || model.contains(std::path::MAIN_SEPARATOR);
            if is_file {
                table.remove("model");
                table.insert("model_path".to_owned(), Value::from(model.clone()));
            } else {
                table.remove("model_path");
            }
        }
        for name in ["model_path", "models_dir", "prompt_cache_dir"] {
            self.resolve_path_in(table, "providers.llama", name);
        }
        let home = env.get(HOME_VAR).map(PathBuf::from);
        for (name, dir) in [("models_dir", "models"), ("prompt_cache_dir", "cache/llama")] {
            if let (false, Some(home)) = (table.contains_key(name), &home) {
                table.insert(name.to_owned(), Value::from(home.join(dir).display().to_string()));
            }
        }
        Ok(())
    }

    /// The domains of `[tools] enabled`, each built from its table (MCP
    /// servers started or connected to, on the current runtime), in a box
    /// whose registry has `[tools]`'s timeout and approvals. Keys the
    /// domains need are looked up in `env`.
    ///
    /// # Errors
    ///
    /// A table is wrong or names a part this build lacks, a domain cannot
    /// start, or an MCP server cannot be reached.
    pub async fn tool_box(&self, env: &Env) -> Result<ToolBox, SetupError> {
        let tools = &self.config.tools;
        let mut providers: Vec<Arc<dyn ToolProvider>> = Vec::new();
        for domain in &tools.enabled {
            if !providers.iter().any(|provider| provider.name() == domain) {
                providers.push(self.domain(domain, env).await?);
            }
        }
        let mut builder = ToolBox::builder().require_approval(tools.require_approval.iter().cloned());
        for (tool, conditions) in &tools.require_approval_when {
            for text in conditions.texts() {
                let condition = text.parse::<ApprovalCondition>().map_err(|error| {
                    self.invalid(&format!("tools.require_approval_when.{tool}"), &error.to_string())
                })?;
                builder = builder.require_approval_when(tool.clone(), condition);
            }
        }
        if let Some(timeout) = tools
            .timeout_secs
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        {
            builder = builder.timeout(timeout);
        }
        for provider in providers {
            builder = builder.provider(provider);
        }
        let tool_box = builder.build().map_err(|error| ConfigError::Tool {
            domain: tools.enabled.join(", "),
            message: error.to_string(),
        })?;
        if let Some(name) = tool_box.unknown_approvals().into_iter().next() {
            let enabled: Vec<String> = tool_box
                .shared_definitions()
                .iter()
                .map(|tool| tool.name.clone())
                .collect();
            return Err(ConfigError::Tool {
                domain: "require_approval".to_owned(),
                message: format!(
                    "`{name}` in [tools] require_approval(_when) is not an enabled tool; enabled tools: {}",
                    enabled.join(", ")
                ),
            }
            .into());
        }
        Ok(tool_box)
    }

    /// The enabled domain `name`: a built-in one, or an MCP server (the
    /// only one that awaits: without the `mcp` feature nothing does).
    #[cfg_attr(not(feature = "mcp"), allow(clippy::unused_async))]
    async fn domain(&self, name: &str, env: &Env) -> Result<Arc<dyn ToolProvider>, SetupError> {
        let lookup = |var: &str| env.get(var);
        if let Some(domain) = ToolDomain::parse(name) {
            let key = format!("tools.{name}");
            let mut table = self.table_value(&key);
            for (_, path) in PATH_KEYS.iter().filter(|(domain, _)| *domain == name) {
                self.resolve_path_in(&mut table, &key, path);
            }
            return domain
                .build(&Value::from(table), lookup)
                .map_err(|error| self.domain_error(&key, error));
        }
        if !self.config.mcp.has(name) {
            return Err(ConfigError::UnknownToolDomain {
                origin: self.origin("tools.enabled"),
                name: name.to_owned(),
                available: ToolDomain::compiled_names(),
            }
            .into());
        }
        #[cfg(feature = "mcp")]
        {
            let key = format!("mcp.servers.{name}");
            let mut table = self.table_value(&key);
            self.resolve_path_in(&mut table, &key, "cwd");
            crate::mcp_domain(name, &Value::from(table), lookup)
                .await
                .map_err(|error| self.domain_error(&key, error))
        }
        #[cfg(not(feature = "mcp"))]
        Err(ConfigError::not_compiled(format!("the MCP server `[mcp.servers.{name}]`"), "mcp").into())
    }

    fn domain_error(&self, key: &str, error: DomainError<figment::Error>) -> SetupError {
        match error {
            DomainError::NotCompiled(error) => ConfigError::from(error).into(),
            DomainError::Invalid(error) => self.key_error(&error, key).into(),
            DomainError::Setup { domain, message } => ConfigError::Tool { domain, message }.into(),
            #[cfg(feature = "mcp")]
            DomainError::Mcp(error) => error.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{CONFIG_FILE_NAME, Overrides};

    fn settings(dir: &Path, toml: &str, overrides: &Overrides) -> Settings {
        std::fs::write(dir.join(CONFIG_FILE_NAME), toml).unwrap_or_else(|e| panic!("{e}"));
        Settings::read(overrides, &Env::default(), dir).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_local_models_paths_are_relative_to_the_file_and_default_to_the_home() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = dir.path().join("home");
        let env = Env::from_pairs([(HOME_VAR, home.display().to_string())]);
        let overrides = Overrides {
            model: Some("weights/tiny.gguf".to_owned()),
            ..Overrides::default()
        };
        let settings = settings(
            dir.path(),
            "[providers.llama]\nprompt_cache_dir = \"cache\"\n",
            &overrides,
        );
        let mut table = settings.table_value("providers.llama");
        settings
            .prepare_llama(&mut table, &env, true)
            .unwrap_or_else(|e| panic!("{e}"));
        let text = |key: &str| table.get(key).and_then(Value::as_str).map(str::to_owned);
        assert_eq!(
            text("model_path"),
            Some("weights/tiny.gguf".to_owned()),
            "a flag's path is as given"
        );
        assert_eq!(
            text("prompt_cache_dir"),
            Some(dir.path().join("cache").display().to_string())
        );
        assert_eq!(text("models_dir"), Some(home.join("models").display().to_string()));
    }

    #[test]
    fn a_base_url_does_not_apply_to_the_local_model() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let overrides = Overrides {
            base_url: Some("http://127.0.0.1:8080/v1".to_owned()),
            ..Overrides::default()
        };
        let error = settings(dir.path(), "", &overrides).provider_config(&Env::default());
        assert!(
            matches!(&error, Err(ConfigError::Unsupported(message)) if message.contains("openai-compatible")),
            "{error:?}"
        );
    }

    #[cfg(feature = "openai")]
    #[test]
    fn the_model_and_base_url_flags_are_keys_of_the_providers_table() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let overrides = Overrides {
            provider: Some("openai".to_owned()),
            model: Some("gpt-4o-mini".to_owned()),
            base_url: Some("http://127.0.0.1:9/v1".to_owned()),
            ..Overrides::default()
        };
        let config = settings(dir.path(), "[providers.openai]\nmodel = \"gpt-4o\"\n", &overrides)
            .provider_config(&Env::default())
            .unwrap_or_else(|e| panic!("{e}"));
        #[allow(irrefutable_let_patterns, reason = "OpenAI may be the only provider of the build")]
        let ProviderConfig::OpenAi(openai) = &config else {
            panic!("not openai: {config:?}")
        };
        assert_eq!(openai.model, "gpt-4o-mini");
        assert_eq!(openai.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    }

    #[cfg(feature = "math")]
    #[tokio::test]
    async fn the_tool_box_has_the_enabled_domains_and_refuses_an_approval_of_no_tool() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let tools = settings(
            dir.path(),
            "[tools]\nenabled = [\"math\", \"math\"]\n",
            &Overrides::default(),
        )
        .tool_box(&Env::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tools.domains(), ["math"]);
        let refused = settings(
            dir.path(),
            "[tools]\nenabled = [\"math\"]\nrequire_approval = [\"calculater\"]\n",
            &Overrides::default(),
        )
        .tool_box(&Env::default())
        .await;
        assert!(
            matches!(&refused, Err(SetupError::Config(ConfigError::Tool { domain, message }))
                if domain == "require_approval" && message.contains("`calculater`")),
            "{refused:?}"
        );
    }

    #[cfg(feature = "math")]
    #[tokio::test]
    async fn a_configured_condition_asks_for_approval_by_the_arguments() {
        use crate::core::ToolRegistry as _;

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = "[tools]\nenabled = [\"math\"]\n[tools.require_approval_when]\n\
                      calculator = [\"/expression == \\\"1+1\\\"\", \"precision > 4\"]\n";
        let tools = settings(dir.path(), config, &Overrides::default())
            .tool_box(&Env::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let registry = &tools;
        assert!(registry.requires_approval("calculator"));
        assert!(registry.approval_needed("calculator", &serde_json::json!({"expression": "1+1"})));
        assert!(registry.approval_needed("calculator", &serde_json::json!({"expression": "2", "precision": 9})));
        assert!(!registry.approval_needed("calculator", &serde_json::json!({"expression": "2", "precision": 2})));

        for (config, expected) in [
            (
                "[tools]\nenabled = [\"math\"]\n[tools.require_approval_when]\ncalculator = \"amount\"\n",
                "has no comparison",
            ),
            (
                "[tools]\nenabled = [\"math\"]\n[tools.require_approval_when]\ncalculater = \"a > 1\"\n",
                "`calculater`",
            ),
        ] {
            let refused = settings(dir.path(), config, &Overrides::default())
                .tool_box(&Env::default())
                .await
                .map(|_| ());
            let message = refused.map_err(|error| error.to_string()).expect_err(config);
            assert!(message.contains(expected), "{message}");
        }
    }
}
