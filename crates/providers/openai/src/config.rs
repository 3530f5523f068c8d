//! The provider's options, deserialisable from a `[providers.openai]`,
//! `[providers.azure-openai]` or `[providers.openai-compatible]` table.

use std::collections::BTreeMap;

use agent_core::{Capabilities, LlmError, MediaLimits};
use agent_http::{ApiKeyConfig, HttpConfig, KeyRule, SecretString};
use serde::Deserialize;

use crate::mapper::{BodyOptions, DEFAULT_MEDIA_LIMITS, MaxTokensField, SystemRole};

/// The default OpenAI base URL (`/chat/completions` is appended).
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The default model.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The default Azure OpenAI `api-version` query parameter.
pub const DEFAULT_AZURE_API_VERSION: &str = "2024-10-21";

/// Which service speaks the Chat Completions protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
pub enum Variant {
    /// OpenAI itself: `Authorization: Bearer`, key from `OPENAI_API_KEY`.
    #[default]
    #[serde(rename = "openai")]
    OpenAi,
    /// Azure OpenAI: `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`,
    /// `api-key` header, key from `AZURE_OPENAI_API_KEY`.
    #[serde(rename = "azure-openai", alias = "azure")]
    Azure,
    /// Any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, Ollama's
    /// `/v1`, OpenRouter, …) at `base_url`; a key is optional.
    #[serde(rename = "openai-compatible", alias = "compatible")]
    Compatible,
}

impl Variant {
    /// The environment variable the key is read from unless `api_key_env` says otherwise.
    pub fn default_api_key_env(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("OPENAI_API_KEY"),
            Self::Azure => Some("AZURE_OPENAI_API_KEY"),
            Self::Compatible => None,
        }
    }

    /// The default key variables of this variant, as a slice.
    fn default_api_key_envs(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &["OPENAI_API_KEY"],
            Self::Azure => &["AZURE_OPENAI_API_KEY"],
            Self::Compatible => &[],
        }
    }

    /// The config table of this variant as errors name it: `providers.openai`.
    pub fn table_path(self) -> &'static str {
        match self {
            Self::OpenAi => "providers.openai",
            Self::Azure => "providers.azure-openai",
            Self::Compatible => "providers.openai-compatible",
        }
    }

    /// The config table name (`[providers.NAME]`) of this variant.
    pub fn table_name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Azure => "azure-openai",
            Self::Compatible => "openai-compatible",
        }
    }

    /// The name reported by [`LlmClient::provider`](agent_core::LlmClient::provider),
    /// following the OpenTelemetry GenAI `gen_ai.provider.name` values.
    pub fn provider_name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Azure => "azure.ai.openai",
            Self::Compatible => "openai-compatible",
        }
    }
}

/// Options of an [`OpenAiClient`](crate::OpenAiClient).
///
/// Every field has a default, so an empty table is a working OpenAI
/// configuration (given `OPENAI_API_KEY`). The key itself is never printed:
/// `api_key` is a [`SecretString`].
///
/// ```
/// use agent_provider_openai::{OpenAiConfig, Variant};
///
/// let config: OpenAiConfig = serde_json::from_value(serde_json::json!({
///     "variant": "azure-openai",
///     "endpoint": "https://my-resource.openai.azure.com",
///     "deployment": "gpt-4o",
///     "max_retries": 5
/// })).unwrap();
/// assert_eq!(config.variant, Variant::Azure);
/// assert_eq!(config.http.max_retries, 5);
/// assert_eq!(
///     config.chat_completions_url().unwrap(),
///     "https://my-resource.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
/// );
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiConfig {
    /// OpenAI, Azure OpenAI, or another OpenAI-compatible server.
    #[serde(alias = "kind")]
    pub variant: Variant,
    /// The model requests go to (the body's `model`; Azure routes by `deployment`).
    pub model: String,
    /// Base URL including the API version path, e.g. `https://api.openai.com/v1`;
    /// `/chat/completions` is appended. Defaults to OpenAI's for
    /// [`Variant::OpenAi`]; required for [`Variant::Compatible`]; for
    /// [`Variant::Azure`] it replaces `endpoint` when set (so a CLI
    /// `--base-url` works for every variant).
    pub base_url: Option<String>,
    /// `api_key`, or `api_key_env` naming the variable holding it (default
    /// `OPENAI_API_KEY`, `AZURE_OPENAI_API_KEY` for Azure, none for
    /// compatible servers), in the same table.
    #[serde(flatten)]
    pub key: ApiKeyConfig,
    /// Azure: the resource endpoint, e.g. `https://my-resource.openai.azure.com`.
    pub endpoint: Option<String>,
    /// Azure: the deployment name (defaults to `model`).
    pub deployment: Option<String>,
    /// Azure: the `api-version` query parameter.
    pub api_version: String,
    /// The role of the system prompt: `system` (default) or `developer`
    /// (OpenAI's name for it with o-series reasoning models).
    pub system_role: SystemRole,
    /// Which field carries the token limit: `max_completion_tokens` (default
    /// for OpenAI and Azure) or `max_tokens` (default for compatible servers,
    /// many of which predate the new name).
    pub max_tokens_field: Option<MaxTokensField>,
    /// Ask for a final usage chunk in streams (`stream_options.include_usage`).
    /// On by default; turn off for servers that reject `stream_options`.
    pub stream_usage: bool,
    /// Send reasoning text back as `reasoning_content` on assistant messages
    /// (some DeepSeek-style servers want it during tool-calling turns; OpenAI
    /// does not know the field). Off by default.
    pub send_reasoning_content: bool,
    /// Overrides the name reported as the provider (telemetry, model catalog).
    pub provider_name: Option<String>,
    /// Extra request headers (e.g. `OpenAI-Organization`, `HTTP-Referer`).
    /// Not treated as secrets: put keys in `api_key`/`api_key_env`.
    pub headers: BTreeMap<String, String>,
    /// Overrides the advertised native tool calling (compatible servers differ).
    pub native_tools: Option<bool>,
    /// Overrides the advertised parallel tool calls.
    pub parallel_tool_calls: Option<bool>,
    /// Overrides the advertised JSON-schema structured output.
    pub json_schema: Option<bool>,
    /// The largest image, document and recording sent, in bytes
    /// (`max_image_bytes`, `max_document_bytes`, `max_audio_bytes` in the
    /// same table; each defaults to [`DEFAULT_MEDIA_LIMITS`]). A larger
    /// attachment is refused before the request is sent.
    #[serde(flatten, deserialize_with = "crate::mapper::deserialize_media_limits")]
    pub media: MediaLimits,
    /// Timeouts and retries (`timeout_secs`, `max_retries`, … in the same table).
    #[serde(flatten)]
    pub http: HttpConfig,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            variant: Variant::OpenAi,
            model: DEFAULT_MODEL.to_owned(),
            base_url: None,
            key: ApiKeyConfig::default(),
            endpoint: None,
            deployment: None,
            api_version: DEFAULT_AZURE_API_VERSION.to_owned(),
            system_role: SystemRole::System,
            max_tokens_field: None,
            stream_usage: true,
            send_reasoning_content: false,
            provider_name: None,
            headers: BTreeMap::new(),
            native_tools: None,
            parallel_tool_calls: None,
            json_schema: None,
            media: DEFAULT_MEDIA_LIMITS,
            http: HttpConfig::default(),
        }
    }
}

impl OpenAiConfig {
    /// OpenAI with `model`.
    pub fn openai(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Azure OpenAI: `endpoint` (e.g. `https://my-resource.openai.azure.com`) and `deployment`.
    pub fn azure(endpoint: impl Into<String>, deployment: impl Into<String>) -> Self {
        let deployment = deployment.into();
        Self {
            variant: Variant::Azure,
            model: deployment.clone(),
            endpoint: Some(endpoint.into()),
            deployment: Some(deployment),
            ..Self::default()
        }
    }

    /// An OpenAI-compatible server at `base_url` (e.g. `http://localhost:8000/v1`).
    ///
    /// This is [`Variant::Compatible`]: no key by default, `max_tokens`
    /// rather than `max_completion_tokens`, reported as
    /// `openai-compatible`. To send OpenAI (or Azure) requests to another
    /// address, a proxy or a mock server, keep the variant and use
    /// [`with_base_url`](Self::with_base_url).
    pub fn compatible(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            variant: Variant::Compatible,
            model: model.into(),
            base_url: Some(base_url.into()),
            ..Self::default()
        }
    }

    /// Sends requests to `base_url` (including the version path, e.g.
    /// `http://localhost:8080/v1`; `/chat/completions` is appended) without
    /// changing anything else: OpenAI stays OpenAI (its key variable,
    /// request fields and provider name), Azure uses it in place of
    /// `endpoint`. The same as `base_url` in the config table or `--base-url`.
    ///
    /// ```
    /// use agent_provider_openai::{OpenAiConfig, Variant};
    ///
    /// let config = OpenAiConfig::openai("gpt-4o-mini").with_base_url("http://localhost:8080/v1");
    /// assert_eq!(config.variant, Variant::OpenAi);
    /// assert_eq!(config.chat_completions_url()?, "http://localhost:8080/v1/chat/completions");
    /// # Ok::<(), agent_core::LlmError>(())
    /// ```
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// Sets the key directly.
    pub fn with_api_key(mut self, key: impl Into<SecretString>) -> Self {
        self.key.api_key = Some(key.into());
        self
    }

    /// How the key is looked up for this variant and provider name.
    pub fn key_rule(&self) -> KeyRule<'_> {
        let table = self.variant.table_path();
        match self.variant.default_api_key_env() {
            Some(_) => KeyRule::required(table, self.provider_name(), self.variant.default_api_key_envs()),
            None => KeyRule::optional(table, self.provider_name()),
        }
    }

    /// The environment variable the key is read from, if any.
    pub fn api_key_env_name(&self) -> Option<&str> {
        self.key.env_names(&self.key_rule()).first().copied()
    }

    /// The key: `api_key` if set, otherwise the variable named by
    /// `api_key_env` looked up with `env` (pass `|name| std::env::var(name).ok()`).
    ///
    /// `Ok(None)` means no key is needed (a compatible server without one).
    /// A missing key for OpenAI or Azure, or for a compatible server whose
    /// `api_key_env` is set explicitly, is an authentication error that
    /// names the variable to set.
    pub fn resolve_api_key(&self, env: impl Fn(&str) -> Option<String>) -> Result<Option<SecretString>, LlmError> {
        self.key.resolve(&self.key_rule(), env)
    }

    /// The hint added to authentication failures: which environment
    /// variable (or config key) to set.
    pub fn auth_hint(&self) -> String {
        self.key.auth_hint(&self.key_rule())
    }

    /// The name reported as the provider.
    pub fn provider_name(&self) -> &str {
        self.provider_name
            .as_deref()
            .filter(|name| !name.is_empty())
            .unwrap_or(self.variant.provider_name())
    }

    /// The full Chat Completions URL.
    pub fn chat_completions_url(&self) -> Result<String, LlmError> {
        let invalid = |message: String| LlmError::invalid_request(message).with_provider(self.provider_name());
        match self.variant {
            Variant::OpenAi | Variant::Compatible => {
                let base = match (&self.base_url, self.variant) {
                    (Some(base), _) if !base.trim().is_empty() => base.trim(),
                    (_, Variant::OpenAi) => DEFAULT_OPENAI_BASE_URL,
                    _ => {
                        return Err(invalid(
                            "an OpenAI-compatible server needs `base_url` in [providers.openai-compatible] \
                             (e.g. \"http://localhost:8000/v1\")"
                                .to_owned(),
                        ));
                    }
                };
                Ok(format!("{}/chat/completions", base.trim_end_matches('/')))
            }
            Variant::Azure => {
                let endpoint = self
                    .base_url
                    .as_deref()
                    .or(self.endpoint.as_deref())
                    .map(str::trim)
                    .filter(|endpoint| !endpoint.is_empty())
                    .ok_or_else(|| {
                        invalid(
                            "Azure OpenAI needs `endpoint` in [providers.azure-openai] \
                             (e.g. \"https://my-resource.openai.azure.com\")"
                                .to_owned(),
                        )
                    })?;
                let deployment = self
                    .deployment
                    .as_deref()
                    .filter(|deployment| !deployment.is_empty())
                    .unwrap_or(&self.model);
                if deployment.is_empty() || !deployment.chars().all(is_path_safe) {
                    return Err(invalid(format!(
                        "Azure deployment name {deployment:?} must be non-empty and use only letters, digits, '-', '_' and '.'"
                    )));
                }
                if !self.api_version.chars().all(is_path_safe) {
                    return Err(invalid(format!("invalid api_version {:?}", self.api_version)));
                }
                Ok(format!(
                    "{}/openai/deployments/{deployment}/chat/completions?api-version={}",
                    endpoint.trim_end_matches('/'),
                    self.api_version
                ))
            }
        }
    }

    /// What the client can do: OpenAI and Azure support native and parallel
    /// tool calls, streaming and JSON-schema output (no explicit prompt
    /// caching: OpenAI caches long prefixes automatically). Compatible servers
    /// default to native and parallel tools and streaming but no JSON schema.
    /// `native_tools`, `parallel_tool_calls` and `json_schema` override.
    pub fn capabilities(&self) -> Capabilities {
        let hosted = self.variant != Variant::Compatible;
        Capabilities {
            native_tools: self.native_tools.unwrap_or(true),
            parallel_tool_calls: self.parallel_tool_calls.unwrap_or(true),
            streaming: true,
            prompt_caching: false,
            json_schema: self.json_schema.unwrap_or(hosted),
            format_with_tools: false,
        }
    }

    /// The mapper options this configuration implies (for non-streamed requests).
    pub fn request_options(&self) -> BodyOptions {
        BodyOptions {
            model: self.model.clone(),
            system_role: self.system_role,
            max_tokens_field: self.max_tokens_field.unwrap_or(match self.variant {
                Variant::OpenAi | Variant::Azure => MaxTokensField::MaxCompletionTokens,
                Variant::Compatible => MaxTokensField::MaxTokens,
            }),
            stream: false,
            stream_usage: self.stream_usage,
            send_reasoning_content: self.send_reasoning_content,
            media_limits: self.media,
            provider: self.provider_name().to_owned(),
        }
    }
}

fn is_path_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::LlmErrorKind;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn an_empty_table_is_openai_with_defaults() {
        let config: OpenAiConfig = serde_json::from_str("{}").unwrap_or_default();
        assert_eq!(config.variant, Variant::OpenAi);
        assert_eq!(config.model, DEFAULT_MODEL);
        assert_eq!(
            config.chat_completions_url().ok().as_deref(),
            Some("https://api.openai.com/v1/chat/completions")
        );
        assert_eq!(config.api_key_env_name(), Some("OPENAI_API_KEY"));
        assert_eq!(
            config.request_options().max_tokens_field,
            MaxTokensField::MaxCompletionTokens
        );
        assert_eq!(config.http, HttpConfig::default());
    }

    #[test]
    fn a_table_like_the_architecture_example_parses() {
        let config: Result<OpenAiConfig, _> = serde_json::from_value(serde_json::json!({
            "api_key_env": "MY_KEY",
            "base_url": "https://proxy.example/v1/",
            "max_retries": 7,
            "timeout_secs": 30,
            "system_role": "developer",
            "max_tokens_field": "max_tokens",
        }));
        let config = config.unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(config.http.max_retries, 7);
        assert!((config.http.timeout_secs - 30.0).abs() < f64::EPSILON);
        assert_eq!(config.system_role, SystemRole::Developer);
        assert_eq!(config.request_options().max_tokens_field, MaxTokensField::MaxTokens);
        assert_eq!(
            config.chat_completions_url().ok().as_deref(),
            Some("https://proxy.example/v1/chat/completions")
        );
        let key = config.resolve_api_key(|name| (name == "MY_KEY").then(|| "sk-x".to_owned()));
        assert_eq!(
            key.ok().flatten().map(|k| k.expose().to_owned()),
            Some("sk-x".to_owned())
        );
    }

    #[test]
    fn media_limits_default_to_openais_and_are_read_from_the_table() {
        assert_eq!(OpenAiConfig::default().media, DEFAULT_MEDIA_LIMITS);
        let config: Result<OpenAiConfig, _> =
            serde_json::from_value(serde_json::json!({"max_image_bytes": 1024, "max_retries": 1}));
        let config = config.unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(config.media.max_image_bytes, 1024);
        assert_eq!(config.media.max_document_bytes, DEFAULT_MEDIA_LIMITS.max_document_bytes);
        assert_eq!(config.http.max_retries, 1);
        assert_eq!(config.request_options().media_limits, config.media);
        let azure = OpenAiConfig::azure("https://r", "d").request_options();
        assert_eq!(azure.provider, "azure.ai.openai");
        let misspelt = serde_json::from_value::<OpenAiConfig>(serde_json::json!({"max_image_byte": 5}));
        assert!(
            misspelt.is_err_and(|error| error.to_string().contains("max_image_byte")),
            "a misspelt key is refused"
        );
    }

    #[test]
    fn missing_keys_name_the_variable_to_set() {
        let error = OpenAiConfig::default().resolve_api_key(no_env).err();
        let error = error.unwrap_or_else(|| LlmError::decode(""));
        assert_eq!(error.kind, LlmErrorKind::Auth);
        assert!(
            error.message.contains("set the OPENAI_API_KEY environment variable"),
            "{error}"
        );

        let azure = OpenAiConfig::azure("https://r.openai.azure.com", "gpt-4o");
        let error = azure.resolve_api_key(|_| Some("  ".to_owned())).err();
        assert!(error.is_some_and(|e| e.message.contains("AZURE_OPENAI_API_KEY")));

        let local = OpenAiConfig::compatible("http://localhost:8000/v1", "qwen");
        assert!(matches!(local.resolve_api_key(no_env), Ok(None)));
        let mut keyed = local.clone();
        keyed.key.api_key_env = Some("GROQ_API_KEY".into());
        assert!(
            keyed
                .resolve_api_key(no_env)
                .is_err_and(|e| e.message.contains("GROQ_API_KEY"))
        );
    }

    #[test]
    fn auth_hints_name_what_to_set() {
        assert!(
            OpenAiConfig::default()
                .auth_hint()
                .starts_with("set the OPENAI_API_KEY environment variable")
        );
        let azure = OpenAiConfig::azure("https://r", "d");
        assert!(azure.auth_hint().contains("AZURE_OPENAI_API_KEY"));
        let configured = OpenAiConfig::default().with_api_key("sk-x");
        assert!(configured.auth_hint().contains("`api_key` in [providers.openai]"));
        let local = OpenAiConfig::compatible("http://localhost:8000/v1", "m");
        assert!(local.auth_hint().contains("api_key_env"));
    }

    #[test]
    fn with_base_url_keeps_the_variant() {
        let config = OpenAiConfig::openai("gpt-4o").with_base_url("http://127.0.0.1:9/v1/");
        assert_eq!(config.variant, Variant::OpenAi);
        assert_eq!(config.model, "gpt-4o");
        assert_eq!(
            config.chat_completions_url().ok().as_deref(),
            Some("http://127.0.0.1:9/v1/chat/completions")
        );
        assert_eq!(config.api_key_env_name(), Some("OPENAI_API_KEY"));
        assert_eq!(config.provider_name(), "openai");
        assert_eq!(
            config.request_options().max_tokens_field,
            MaxTokensField::MaxCompletionTokens
        );
        assert_eq!(config.capabilities(), OpenAiConfig::default().capabilities());

        let azure = OpenAiConfig::azure("https://r.openai.azure.com", "prod").with_base_url("http://127.0.0.1:9");
        assert_eq!(azure.variant, Variant::Azure);
        assert_eq!(
            azure.chat_completions_url().ok().as_deref(),
            Some("http://127.0.0.1:9/openai/deployments/prod/chat/completions?api-version=2024-10-21")
        );

        let compatible = OpenAiConfig::compatible("http://a/v1", "m").with_base_url("http://b/v1");
        assert_eq!(compatible.variant, Variant::Compatible);
        assert_eq!(
            compatible.chat_completions_url().ok().as_deref(),
            Some("http://b/v1/chat/completions")
        );
    }

    #[test]
    fn an_explicit_key_wins_over_the_environment() {
        let config = OpenAiConfig::default().with_api_key("sk-config");
        let key = config.resolve_api_key(|_| Some("sk-env".into())).ok().flatten();
        assert_eq!(key.map(|k| k.expose().to_owned()).as_deref(), Some("sk-config"));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let config = OpenAiConfig::default().with_api_key("sk-very-secret-key");
        let debug = format!("{config:?}");
        assert!(!debug.contains("sk-very-secret-key"), "{debug}");
        assert!(debug.contains("[redacted]"));
    }

    #[test]
    fn azure_urls_use_the_deployment_and_api_version() {
        let mut config = OpenAiConfig::azure("https://r.openai.azure.com/", "prod-4o");
        config.api_version = "2025-01-01-preview".into();
        assert_eq!(
            config.chat_completions_url().ok().as_deref(),
            Some(
                "https://r.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2025-01-01-preview"
            )
        );
        config.base_url = Some("http://127.0.0.1:9999".into());
        assert_eq!(
            config.chat_completions_url().ok().as_deref(),
            Some("http://127.0.0.1:9999/openai/deployments/prod-4o/chat/completions?api-version=2025-01-01-preview")
        );
        config.deployment = Some("a/b".into());
        assert!(config.chat_completions_url().is_err());
        let no_endpoint = OpenAiConfig {
            variant: Variant::Azure,
            ..OpenAiConfig::default()
        };
        assert!(
            no_endpoint
                .chat_completions_url()
                .is_err_and(|e| e.message.contains("endpoint"))
        );
    }

    #[test]
    fn a_compatible_server_needs_a_base_url() {
        let config: Result<OpenAiConfig, _> =
            serde_json::from_value(serde_json::json!({"variant": "openai-compatible"}));
        let config = config.unwrap_or_default();
        assert!(
            config
                .chat_completions_url()
                .is_err_and(|e| e.message.contains("base_url"))
        );
    }

    #[test]
    fn capabilities_are_truthful_per_variant_and_overridable() {
        let openai = OpenAiConfig::default().capabilities();
        assert!(openai.native_tools && openai.parallel_tool_calls && openai.streaming && openai.json_schema);
        assert!(!openai.prompt_caching);
        let azure = OpenAiConfig::azure("https://r", "d").capabilities();
        assert_eq!(azure, openai);
        let mut local = OpenAiConfig::compatible("http://localhost:1234/v1", "m");
        let caps = local.capabilities();
        assert!(caps.native_tools && caps.streaming && !caps.json_schema && !caps.prompt_caching);
        local.native_tools = Some(false);
        local.json_schema = Some(true);
        let caps = local.capabilities();
        assert!(!caps.native_tools && caps.json_schema);
    }
}
