//! The provider's options, deserialisable from a `[providers.gemini]` table.

use std::collections::BTreeMap;

use agent_core::{Capabilities, LlmError, MediaLimits};
use agent_http::{ApiKeyConfig, HttpConfig, KeyRule, SecretString};
use serde::Deserialize;

use crate::mapper::{BodyOptions, DEFAULT_MEDIA_LIMITS, endpoint_path};

/// The default base URL (`/{api_version}/models/{model}:generateContent` is appended).
pub const DEFAULT_GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// The default model.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";
/// The default API version path segment.
pub const DEFAULT_API_VERSION: &str = "v1beta";
/// The environment variable the key is read from by default.
pub const GEMINI_API_KEY_ENV: &str = "GEMINI_API_KEY";
/// The variable read when [`GEMINI_API_KEY_ENV`] is unset, as Google's SDKs do.
pub const GOOGLE_API_KEY_ENV: &str = "GOOGLE_API_KEY";
/// The name reported by [`LlmClient::provider`](agent_core::LlmClient::provider):
/// the OpenTelemetry GenAI `gen_ai.provider.name` value for the Gemini API.
pub const PROVIDER_NAME: &str = "gcp.gemini";

/// Options of a [`GeminiClient`](crate::GeminiClient).
///
/// Every field has a default, so an empty table is a working configuration
/// (given `GEMINI_API_KEY` or `GOOGLE_API_KEY`). The key itself is never
/// printed: `api_key` is a [`SecretString`]. Unknown keys are an error.
///
/// ```
/// use agent_provider_gemini::GeminiConfig;
///
/// let config: GeminiConfig = serde_json::from_value(serde_json::json!({
///     "model": "gemini-2.5-pro",
///     "base_url": "https://generativelanguage.googleapis.com/",
///     "thinking_budget": 1024,
///     "include_thoughts": true,
///     "max_retries": 5,
///     "max_document_bytes": 20_000_000
/// })).unwrap();
/// assert_eq!(config.http.max_retries, 5);
/// assert_eq!(config.media_limits().max_document_bytes, 20_000_000);
/// assert_eq!(config.media_limits().max_image_bytes, 75_000_000, "Gemini's limit by default");
/// assert_eq!(
///     config.url("gemini-2.5-pro", false).unwrap(),
///     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
/// );
/// assert!(serde_json::from_value::<GeminiConfig>(serde_json::json!({"modle": "x"})).is_err());
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GeminiConfig {
    /// The model requests go to (part of the URL), e.g. `gemini-2.5-flash`.
    pub model: String,
    /// The server, without version: `https://generativelanguage.googleapis.com`
    /// (default); `/{api_version}/models/{model}:generateContent` is
    /// appended. A trailing slash is fine.
    pub base_url: Option<String>,
    /// The API version path segment (`v1beta`, the default, has every
    /// feature used here; `v1` lacks some).
    pub api_version: String,
    /// `api_key`, or `api_key_env` naming the variable holding it (default
    /// `GEMINI_API_KEY`, then `GOOGLE_API_KEY`), in the same table.
    #[serde(flatten)]
    pub key: ApiKeyConfig,
    /// `thinkingConfig.thinkingBudget` (tokens; 0 turns thinking off where
    /// the model allows it, -1 lets the model decide).
    pub thinking_budget: Option<i32>,
    /// `thinkingConfig.thinkingLevel` for Gemini 3 models (`low`, `high`).
    pub thinking_level: Option<String>,
    /// `thinkingConfig.includeThoughts`: return thought summaries (kept as
    /// reasoning blocks, never as visible text).
    pub include_thoughts: Option<bool>,
    /// Extra request headers. Not treated as secrets: put keys in
    /// `api_key`/`api_key_env`.
    pub headers: BTreeMap<String, String>,
    /// The largest image sent, in bytes (default 75 MB: Gemini takes
    /// 100 MB of base64 inline data per request). A larger one is refused
    /// before sending.
    pub max_image_bytes: u64,
    /// The largest document (PDF or text file) sent, in bytes (default
    /// 50 MB, Gemini's PDF limit).
    pub max_document_bytes: u64,
    /// The largest recording sent, in bytes (default 75 MB, as images).
    pub max_audio_bytes: u64,
    /// Timeouts and retries (`timeout_secs`, `max_retries`, … in the same table).
    #[serde(flatten)]
    pub http: HttpConfig,
}

impl Default for GeminiConfig {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.to_owned(),
            base_url: None,
            api_version: DEFAULT_API_VERSION.to_owned(),
            key: ApiKeyConfig::default(),
            thinking_budget: None,
            thinking_level: None,
            include_thoughts: None,
            headers: BTreeMap::new(),
            max_image_bytes: DEFAULT_MEDIA_LIMITS.max_image_bytes,
            max_document_bytes: DEFAULT_MEDIA_LIMITS.max_document_bytes,
            max_audio_bytes: DEFAULT_MEDIA_LIMITS.max_audio_bytes,
            http: HttpConfig::default(),
        }
    }
}

impl GeminiConfig {
    /// Gemini with `model`.
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

    /// Sets the base URL (e.g. a proxy, or a local mock server).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// How the key is looked up: `GEMINI_API_KEY`, then `GOOGLE_API_KEY` (as
    /// Google's SDKs do), unless `api_key_env` names another variable.
    pub const KEY_RULE: KeyRule<'static> = KeyRule::required(
        "providers.gemini",
        PROVIDER_NAME,
        &[GEMINI_API_KEY_ENV, GOOGLE_API_KEY_ENV],
    );

    /// The environment variables the key is looked up in, in order:
    /// `api_key_env` alone when set, else `GEMINI_API_KEY` then `GOOGLE_API_KEY`.
    pub fn api_key_env_names(&self) -> Vec<&str> {
        self.key.env_names(&Self::KEY_RULE)
    }

    /// The key: `api_key` if set, otherwise the first of
    /// [`api_key_env_names`](Self::api_key_env_names) that `env` finds
    /// (pass `|name| std::env::var(name).ok()`). A missing key is an
    /// authentication error naming the variables to set.
    pub fn resolve_api_key(&self, env: impl Fn(&str) -> Option<String>) -> Result<SecretString, LlmError> {
        self.key.require(&Self::KEY_RULE, env)
    }

    /// The hint added to authentication failures: what to set.
    pub fn auth_hint(&self) -> String {
        self.key.auth_hint(&Self::KEY_RULE)
    }

    /// The base URL without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .map(str::trim)
            .filter(|base| !base.is_empty())
            .unwrap_or(DEFAULT_GEMINI_BASE_URL)
            .trim_end_matches('/')
    }

    /// The full URL for `model`: `generateContent`, or
    /// `streamGenerateContent?alt=sse` when `stream` is set.
    pub fn url(&self, model: &str, stream: bool) -> Result<String, LlmError> {
        let path =
            endpoint_path(&self.api_version, model, stream).map_err(|error| error.with_provider(PROVIDER_NAME))?;
        Ok(format!("{}{path}", self.base_url()))
    }

    /// What the client can do: native and parallel tool calls, streaming,
    /// JSON-schema output. No explicit prompt caching: Gemini caches long
    /// prefixes implicitly (reported as cached tokens in the usage).
    pub fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_tools: true,
            parallel_tool_calls: true,
            streaming: true,
            prompt_caching: false,
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

    /// The mapper options this configuration implies.
    pub fn request_options(&self) -> BodyOptions {
        BodyOptions {
            model: self.model.clone(),
            thinking_budget: self.thinking_budget,
            thinking_level: self.thinking_level.clone(),
            include_thoughts: self.include_thoughts,
            media_limits: self.media_limits(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::LlmErrorKind;

    use super::*;

    #[test]
    fn an_empty_table_is_gemini_with_defaults() {
        let config: GeminiConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config.model, DEFAULT_MODEL);
        assert_eq!(config.api_version, "v1beta");
        assert_eq!(config.http, HttpConfig::default());
        assert_eq!(
            config.url(&config.model, true).unwrap(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(config.api_key_env_names(), ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
        assert_eq!(config.request_options().media_limits, DEFAULT_MEDIA_LIMITS);
    }

    #[test]
    fn media_limits_are_read_from_the_table() {
        let config: GeminiConfig = serde_json::from_value(serde_json::json!({
            "max_image_bytes": 1, "max_document_bytes": 2, "max_audio_bytes": 3
        }))
        .unwrap();
        assert_eq!(
            config.request_options().media_limits,
            MediaLimits {
                max_image_bytes: 1,
                max_document_bytes: 2,
                max_audio_bytes: 3
            }
        );
        let error = serde_json::from_value::<GeminiConfig>(serde_json::json!({"max_video_bytes": 1})).unwrap_err();
        assert!(error.to_string().contains("max_video_bytes"), "{error}");
    }

    #[test]
    fn unknown_keys_are_errors_despite_the_flattened_http_options() {
        let error = serde_json::from_value::<GeminiConfig>(serde_json::json!({"thinking_budjet": 10})).unwrap_err();
        assert!(error.to_string().contains("thinking_budjet"), "{error}");
        let config: GeminiConfig =
            serde_json::from_value(serde_json::json!({"timeout_secs": 30, "api_version": "v1"})).unwrap();
        assert!((config.http.timeout_secs - 30.0).abs() < f64::EPSILON);
        assert!(
            config
                .url("m", false)
                .unwrap()
                .ends_with("/v1/models/m:generateContent")
        );
    }

    #[test]
    fn base_urls_tolerate_a_trailing_slash_and_bad_models_are_refused() {
        let config = GeminiConfig::new("gemini-2.0-flash").with_base_url("http://127.0.0.1:9/ ");
        assert_eq!(
            config.url("models/gemini-2.0-flash", false).unwrap(),
            "http://127.0.0.1:9/v1beta/models/gemini-2.0-flash:generateContent"
        );
        let error = config.url("a/b", false).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
        assert!(error.message.contains("\"a/b\""), "{}", error.message);
    }

    #[test]
    fn keys_come_from_config_then_gemini_then_google_variables() {
        let config = GeminiConfig::default();
        let both = |name: &str| match name {
            "GEMINI_API_KEY" => Some("gemini-key".to_owned()),
            "GOOGLE_API_KEY" => Some("google-key".to_owned()),
            _ => None,
        };
        assert_eq!(config.resolve_api_key(both).unwrap().expose(), "gemini-key");
        let google = |name: &str| (name == "GOOGLE_API_KEY").then(|| "google-key".to_owned());
        assert_eq!(config.resolve_api_key(google).unwrap().expose(), "google-key");
        let configured = GeminiConfig::default().with_api_key("config-key");
        assert_eq!(configured.resolve_api_key(both).unwrap().expose(), "config-key");

        let error = config.resolve_api_key(|_| Some("  ".into())).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Auth);
        assert!(
            error
                .message
                .contains("set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable"),
            "{}",
            error.message
        );
        let custom = GeminiConfig {
            key: ApiKeyConfig {
                api_key: None,
                api_key_env: Some("MY_KEY".into()),
            },
            ..GeminiConfig::default()
        };
        assert_eq!(custom.api_key_env_names(), ["MY_KEY"]);
        let error = custom.resolve_api_key(both).unwrap_err();
        assert!(
            error.message.contains("set the MY_KEY environment variable"),
            "{}",
            error.message
        );
    }

    #[test]
    fn auth_hints_name_what_to_set_and_debug_hides_the_key() {
        assert!(
            GeminiConfig::default()
                .auth_hint()
                .starts_with("set the GEMINI_API_KEY environment variable")
        );
        let configured = GeminiConfig::default().with_api_key("AIza-very-secret");
        assert!(configured.auth_hint().contains("`api_key` in [providers.gemini]"));
        let debug = format!("{configured:?}");
        assert!(!debug.contains("AIza-very-secret"), "{debug}");
        assert!(debug.contains("[redacted]"));
    }

    #[test]
    fn capabilities_and_request_options() {
        let caps = GeminiConfig::default().capabilities();
        assert!(caps.native_tools && caps.parallel_tool_calls && caps.streaming && caps.json_schema);
        assert!(!caps.prompt_caching);
        let config = GeminiConfig {
            thinking_budget: Some(0),
            include_thoughts: Some(true),
            thinking_level: Some("low".into()),
            ..GeminiConfig::new("gemini-3-pro-preview")
        };
        let options = config.request_options();
        assert_eq!(options.model, "gemini-3-pro-preview");
        assert_eq!(options.thinking_budget, Some(0));
        assert_eq!(options.include_thoughts, Some(true));
        assert_eq!(options.thinking_level.as_deref(), Some("low"));
    }
}
