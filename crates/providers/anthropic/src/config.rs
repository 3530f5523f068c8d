//! The provider's options, deserialisable from a `[providers.anthropic]` table.

use std::collections::BTreeMap;

use agent_core::{Capabilities, LlmError, MediaLimits};
use agent_http::{ApiKeyConfig, HttpConfig, KeyRule, SecretString};
use serde::Deserialize;

use crate::mapper::{BodyOptions, DEFAULT_MAX_TOKENS, DEFAULT_MEDIA_LIMITS};

/// The default base URL (`/v1/messages` is appended).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The default model.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The default `anthropic-version` header.
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";
/// The environment variable the key is read from by default.
pub const DEFAULT_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The name reported as the provider (`gen_ai.provider.name`, model catalog).
pub const PROVIDER_NAME: &str = "anthropic";

/// Options of an [`AnthropicClient`](crate::AnthropicClient).
///
/// Every field has a default, so an empty table is a working configuration
/// (given `ANTHROPIC_API_KEY`). The key itself is never printed: `api_key`
/// is a [`SecretString`]. A misspelt key is an error naming it.
///
/// ```
/// use agent_provider_anthropic::AnthropicConfig;
///
/// let config: AnthropicConfig = serde_json::from_value(serde_json::json!({
///     "model": "claude-opus-4-5",
///     "base_url": "https://proxy.example/",
///     "beta": ["context-management-2025-06-27"],
///     "thinking": {"budget_tokens": 2048},
///     "max_retries": 5,
///     "max_image_bytes": 1_000_000
/// })).unwrap();
/// assert_eq!(config.messages_url(), "https://proxy.example/v1/messages");
/// assert_eq!(config.http.max_retries, 5);
/// assert_eq!(config.request_options().thinking_budget, Some(2048));
/// assert_eq!(config.media_limits().max_image_bytes, 1_000_000);
/// assert_eq!(config.media_limits().max_document_bytes, 25_165_824, "Anthropic's limit by default");
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnthropicConfig {
    /// The model requests go to, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// Base URL without the version, as in Anthropic's SDKs
    /// (`https://api.anthropic.com`); `/v1/messages` is appended. A trailing
    /// slash, or a trailing `/v1`, is tolerated.
    pub base_url: String,
    /// `api_key`, or `api_key_env` naming the variable holding it (default
    /// `ANTHROPIC_API_KEY`), in the same table.
    #[serde(flatten)]
    pub key: ApiKeyConfig,
    /// The `anthropic-version` header.
    pub anthropic_version: String,
    /// Beta features to enable, sent joined in one `anthropic-beta` header.
    #[serde(alias = "betas", alias = "anthropic_beta")]
    pub beta: Vec<String>,
    /// Extra request headers. Not treated as secrets: put keys in
    /// `api_key`/`api_key_env`.
    pub headers: BTreeMap<String, String>,
    /// `max_tokens` for requests that set none (Anthropic requires it).
    pub default_max_tokens: u32,
    /// Extended thinking; off unless set.
    pub thinking: Option<ThinkingConfig>,
    /// The largest image sent, in bytes (default 3.75 MiB: Anthropic takes
    /// 5 MB of base64 per image). A larger one is refused before sending.
    pub max_image_bytes: u64,
    /// The largest document (PDF or text file) sent, in bytes (default
    /// 24 MiB: a whole request is at most 32 MB, base64 included).
    pub max_document_bytes: u64,
    /// The largest recording sent, in bytes. Anthropic reads no audio, so
    /// an audio attachment is refused whatever this says (default 0).
    pub max_audio_bytes: u64,
    /// Timeouts and retries (`timeout_secs`, `max_retries`, … in the same table).
    #[serde(flatten)]
    pub http: HttpConfig,
}

/// Extended thinking: `[providers.anthropic.thinking]` or
/// `thinking = { budget_tokens = 2048 }`.
///
/// While it is on, requests carry no temperature (thinking requires the
/// default), `max_tokens` must exceed the budget, and a forced tool choice
/// is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkingConfig {
    /// Tokens the model may spend thinking (Anthropic's minimum is 1024).
    pub budget_tokens: u32,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.to_owned(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            key: ApiKeyConfig::default(),
            anthropic_version: DEFAULT_ANTHROPIC_VERSION.to_owned(),
            beta: Vec::new(),
            headers: BTreeMap::new(),
            default_max_tokens: DEFAULT_MAX_TOKENS,
            thinking: None,
            max_image_bytes: DEFAULT_MEDIA_LIMITS.max_image_bytes,
            max_document_bytes: DEFAULT_MEDIA_LIMITS.max_document_bytes,
            max_audio_bytes: DEFAULT_MEDIA_LIMITS.max_audio_bytes,
            http: HttpConfig::default(),
        }
    }
}

impl AnthropicConfig {
    /// The defaults with `model`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Sets the key directly.
    pub fn with_api_key(mut self, key: impl Into<SecretString>) -> Self {
        self.key.api_key = Some(key.into());
        self
    }

    /// How the key is looked up: `ANTHROPIC_API_KEY` unless `api_key_env` names another.
    pub const KEY_RULE: KeyRule<'static> =
        KeyRule::required("providers.anthropic", PROVIDER_NAME, &[DEFAULT_API_KEY_ENV]);

    /// The environment variable the key is read from.
    pub fn api_key_env_name(&self) -> &str {
        self.key
            .env_names(&Self::KEY_RULE)
            .first()
            .copied()
            .unwrap_or(DEFAULT_API_KEY_ENV)
    }

    /// The key: `api_key` if set, otherwise the variable named by
    /// `api_key_env` looked up with `env` (pass `|name| std::env::var(name).ok()`).
    /// A missing key is an authentication error naming the variable to set.
    pub fn resolve_api_key(&self, env: impl Fn(&str) -> Option<String>) -> Result<SecretString, LlmError> {
        self.key.require(&Self::KEY_RULE, env)
    }

    /// The hint added to authentication failures: which environment
    /// variable (or config key) to set.
    pub fn auth_hint(&self) -> String {
        self.key.auth_hint(&Self::KEY_RULE)
    }

    /// The full Messages URL: `base_url` + `/v1/messages`.
    pub fn messages_url(&self) -> String {
        let base = self.base_url.trim();
        let base = if base.is_empty() { DEFAULT_BASE_URL } else { base };
        let base = base.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/messages")
    }

    /// The headers every request carries besides the key: `anthropic-version`,
    /// `anthropic-beta` (when betas are configured) and the extra headers.
    pub fn request_headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![("anthropic-version".to_owned(), self.anthropic_version.clone())];
        let betas: Vec<&str> = self
            .beta
            .iter()
            .map(|beta| beta.trim())
            .filter(|beta| !beta.is_empty())
            .collect();
        if !betas.is_empty() {
            headers.push(("anthropic-beta".to_owned(), betas.join(",")));
        }
        headers.extend(self.headers.iter().map(|(name, value)| (name.clone(), value.clone())));
        headers
    }

    /// What the client can do: native and parallel tool calls, streaming,
    /// explicit prompt caching and JSON-schema output (Anthropic's
    /// structured outputs, `output_config.format`).
    pub fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_tools: true,
            parallel_tool_calls: true,
            streaming: true,
            prompt_caching: true,
            json_schema: true,
            format_with_tools: false,
        }
    }

    /// The largest attachment of each kind this configuration sends
    /// (`max_image_bytes`, `max_document_bytes`, `max_audio_bytes`).
    pub fn media_limits(&self) -> MediaLimits {
        MediaLimits {
            max_image_bytes: self.max_image_bytes,
            max_document_bytes: self.max_document_bytes,
            max_audio_bytes: self.max_audio_bytes,
        }
    }

    /// The mapper options this configuration implies (for non-streamed requests).
    pub fn request_options(&self) -> BodyOptions {
        BodyOptions {
            model: self.model.clone(),
            default_max_tokens: if self.default_max_tokens == 0 {
                DEFAULT_MAX_TOKENS
            } else {
                self.default_max_tokens
            },
            thinking_budget: self.thinking.map(|thinking| thinking.budget_tokens),
            stream: false,
            media_limits: self.media_limits(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::LlmErrorKind;

    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn an_empty_table_has_working_defaults() {
        let config: AnthropicConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config.model, "claude-sonnet-4-5");
        assert_eq!(config.messages_url(), "https://api.anthropic.com/v1/messages");
        assert_eq!(config.api_key_env_name(), "ANTHROPIC_API_KEY");
        assert_eq!(
            config.request_headers(),
            [("anthropic-version".to_owned(), "2023-06-01".to_owned())]
        );
        let options = config.request_options();
        assert_eq!((options.default_max_tokens, options.thinking_budget), (4096, None));
        assert_eq!(options.media_limits, DEFAULT_MEDIA_LIMITS);
        assert_eq!(config.http, HttpConfig::default());
    }

    #[test]
    fn a_full_table_parses_and_misspelt_keys_are_errors() {
        let config: AnthropicConfig = serde_json::from_value(serde_json::json!({
            "model": "claude-haiku-4-5",
            "base_url": "http://localhost:8080",
            "api_key_env": "MY_KEY",
            "anthropic_version": "2024-01-01",
            "beta": ["a-2025", " ", "b-2026"],
            "headers": {"x-team": "agents"},
            "default_max_tokens": 8000,
            "thinking": {"budget_tokens": 2048},
            "timeout_secs": 30,
            "max_image_bytes": 1000,
            "max_document_bytes": 2000,
            "max_audio_bytes": 3000,
        }))
        .unwrap();
        assert_eq!(
            config.request_options().media_limits,
            MediaLimits {
                max_image_bytes: 1000,
                max_document_bytes: 2000,
                max_audio_bytes: 3000
            }
        );
        assert!((config.http.timeout_secs - 30.0).abs() < f64::EPSILON);
        assert_eq!(
            config.request_headers(),
            [
                ("anthropic-version".to_owned(), "2024-01-01".to_owned()),
                ("anthropic-beta".to_owned(), "a-2025,b-2026".to_owned()),
                ("x-team".to_owned(), "agents".to_owned()),
            ]
        );
        let options = config.request_options();
        assert_eq!(options.model, "claude-haiku-4-5");
        assert_eq!(
            (options.default_max_tokens, options.thinking_budget),
            (8000, Some(2048))
        );
        let key = config.resolve_api_key(|name| (name == "MY_KEY").then(|| " sk-ant-x ".to_owned()));
        assert_eq!(key.unwrap().expose(), "sk-ant-x");

        for bad in [
            serde_json::json!({"modle": "x"}),
            serde_json::json!({"max_retrys": 2}),
            serde_json::json!({"thinking": {"budget": 1}}),
            serde_json::json!({"max_image_byte": 1}),
        ] {
            let error = serde_json::from_value::<AnthropicConfig>(bad.clone()).unwrap_err();
            assert!(error.to_string().contains("unknown field"), "{bad}: {error}");
        }
    }

    #[test]
    fn base_urls_tolerate_a_trailing_slash_or_version() {
        for base in [
            "https://api.anthropic.com",
            "https://api.anthropic.com/",
            "https://api.anthropic.com/v1",
            "https://api.anthropic.com/v1/",
            "",
        ] {
            let config = AnthropicConfig {
                base_url: base.into(),
                ..AnthropicConfig::default()
            };
            assert_eq!(
                config.messages_url(),
                "https://api.anthropic.com/v1/messages",
                "{base:?}"
            );
        }
    }

    #[test]
    fn missing_keys_and_auth_hints_name_the_variable_to_set() {
        let error = AnthropicConfig::default().resolve_api_key(no_env).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Auth);
        assert!(
            error.message.contains("set the ANTHROPIC_API_KEY environment variable"),
            "{error}"
        );
        assert!(
            AnthropicConfig::default()
                .resolve_api_key(|_| Some("  ".into()))
                .is_err()
        );
        assert!(
            AnthropicConfig::default()
                .auth_hint()
                .starts_with("set the ANTHROPIC_API_KEY environment variable")
        );
        let configured = AnthropicConfig::default().with_api_key("sk-ant-config");
        assert!(configured.auth_hint().contains("`api_key` in [providers.anthropic]"));
        let key = configured.resolve_api_key(|_| Some("sk-ant-env".into())).unwrap();
        assert_eq!(key.expose(), "sk-ant-config", "an explicit key wins");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let config = AnthropicConfig::default().with_api_key("sk-ant-very-secret");
        let debug = format!("{config:?}");
        assert!(!debug.contains("sk-ant-very-secret"), "{debug}");
        assert!(debug.contains("[redacted]"));
    }

    #[test]
    fn capabilities_include_caching_and_json_schema() {
        let caps = AnthropicConfig::default().capabilities();
        assert!(caps.native_tools && caps.parallel_tool_calls && caps.streaming);
        assert!(caps.prompt_caching && caps.json_schema);
    }
}
