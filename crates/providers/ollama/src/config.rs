//! The provider's options, deserialisable from a `[providers.ollama]` table.

use std::collections::BTreeMap;

use agent_core::{Capabilities, LlmError, MediaLimits};
use agent_http::{ApiKeyConfig, HttpConfig, KeyRule, SecretString};
use serde::Deserialize;
use serde_json::Value;

use crate::mapper::{BodyOptions, DEFAULT_MEDIA_LIMITS, KeepAlive, Think};

/// Where Ollama listens unless `base_url` or `OLLAMA_HOST` says otherwise.
pub const DEFAULT_OLLAMA_URL: &str = "http://localhost:11434";
/// The port Ollama listens on when `OLLAMA_HOST` names only a host.
pub const DEFAULT_OLLAMA_PORT: u16 = 11434;
/// The default model (a small one with tool support).
pub const DEFAULT_MODEL: &str = "qwen2.5:0.5b";
/// The environment variable Ollama's own tools read the server address from.
pub const OLLAMA_HOST_ENV: &str = "OLLAMA_HOST";

/// Options of an [`OllamaClient`](crate::OllamaClient).
///
/// Every field has a default, so an empty table talks to a local Ollama.
/// Misspelt keys are an error rather than silently ignored.
///
/// ```
/// use agent_provider_ollama::OllamaConfig;
///
/// let config: OllamaConfig = serde_json::from_value(serde_json::json!({
///     "model": "llama3.2",
///     "num_ctx": 8192,
///     "keep_alive": "10m",
///     "think": "low",
///     "max_retries": 1
/// })).unwrap();
/// assert_eq!(config.http.max_retries, 1);
/// assert_eq!(config.chat_url(|_| None).unwrap(), "http://localhost:11434/api/chat");
/// assert_eq!(
///     config.chat_url(|name| (name == "OLLAMA_HOST").then(|| "gpu-box".to_owned())).unwrap(),
///     "http://gpu-box:11434/api/chat"
/// );
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OllamaConfig {
    /// The model requests go to (`ollama list` shows what is pulled).
    pub model: String,
    /// The server, e.g. `http://localhost:11434`; `/api/chat` is appended.
    /// When unset, `OLLAMA_HOST` is read (as the Ollama CLI does: `host`,
    /// `host:port` or a URL), else [`DEFAULT_OLLAMA_URL`].
    pub base_url: Option<String>,
    /// A key for servers behind an authenticating proxy or Ollama's hosted
    /// API, sent as `Authorization: Bearer`: `api_key`, or `api_key_env`
    /// naming the variable holding it, in the same table (none by default:
    /// a local Ollama needs no key).
    #[serde(flatten)]
    pub key: ApiKeyConfig,
    /// The context window Ollama allocates (`options.num_ctx`); Ollama's own
    /// default (often 2048 or 4096) cuts long tool conversations short.
    pub num_ctx: Option<u32>,
    /// How long the model stays loaded after a request (`"5m"`, `"1h"`,
    /// seconds as a number, `0` to unload, `-1` to keep it).
    pub keep_alive: Option<KeepAlive>,
    /// Thinking for models that support it: `true`/`false`, or a level
    /// (`"low"`, `"medium"`, `"high"`, `"max"`).
    pub think: Option<Think>,
    /// Further model options sent in `options` (`top_k`, `top_p`, `seed`,
    /// `repeat_penalty`, ...). The request's own values (token limit,
    /// temperature, stop sequences) take precedence.
    pub options: BTreeMap<String, Value>,
    /// Extra request headers. Not treated as secrets: put keys in
    /// `api_key`/`api_key_env`.
    pub headers: BTreeMap<String, String>,
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

impl Default for OllamaConfig {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.to_owned(),
            base_url: None,
            key: ApiKeyConfig::default(),
            num_ctx: None,
            keep_alive: None,
            think: None,
            options: BTreeMap::new(),
            headers: BTreeMap::new(),
            media: DEFAULT_MEDIA_LIMITS,
            http: HttpConfig::default(),
        }
    }
}

impl OllamaConfig {
    /// A local Ollama with `model`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Sets the server URL (e.g. `http://gpu-box:11434`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The server's base URL: `base_url`, else `OLLAMA_HOST` (looked up with
    /// `env`), else [`DEFAULT_OLLAMA_URL`]. A value without a scheme gets
    /// `http://`, one without a port gets 11434.
    pub fn server_url(&self, env: impl Fn(&str) -> Option<String>) -> Result<String, LlmError> {
        if let Some(base) = self.base_url.as_deref().map(str::trim).filter(|base| !base.is_empty()) {
            return Ok(base.trim_end_matches('/').to_owned());
        }
        match env(OLLAMA_HOST_ENV).map(|host| host.trim().to_owned()) {
            Some(host) if !host.is_empty() => host_to_url(&host),
            _ => Ok(DEFAULT_OLLAMA_URL.to_owned()),
        }
    }

    /// The `/api/chat` URL requests go to.
    pub fn chat_url(&self, env: impl Fn(&str) -> Option<String>) -> Result<String, LlmError> {
        Ok(format!("{}/api/chat", self.server_url(env)?))
    }

    /// How the key is looked up: only when `api_key` or `api_key_env` is set.
    pub const KEY_RULE: KeyRule<'static> = KeyRule::optional("providers.ollama", "ollama");

    /// The key, if one is configured: `api_key`, else the variable named by
    /// `api_key_env`. A named variable that is unset is an authentication
    /// error naming it.
    pub fn resolve_api_key(&self, env: impl Fn(&str) -> Option<String>) -> Result<Option<SecretString>, LlmError> {
        self.key.resolve(&Self::KEY_RULE, env)
    }

    /// The hint added to authentication failures.
    pub fn auth_hint(&self) -> String {
        self.key.auth_hint(&Self::KEY_RULE)
    }

    /// The mapper options these settings give.
    pub fn request_options(&self) -> BodyOptions {
        BodyOptions {
            model: self.model.clone(),
            stream: false,
            num_ctx: self.num_ctx,
            keep_alive: self.keep_alive.clone(),
            think: self.think.clone(),
            extra_options: self.options.clone(),
            media_limits: self.media,
        }
    }

    /// Native and parallel tool calls, streaming and JSON-schema output
    /// (`format`); no explicit prompt caching (Ollama keeps the prefix in
    /// its KV cache by itself).
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
}

/// `OLLAMA_HOST` as the Ollama CLI reads it: `host`, `host:port`, `:port`
/// (port 11434 when none is given), or a URL with a scheme (whose default
/// port is the scheme's own).
fn host_to_url(host: &str) -> Result<String, LlmError> {
    let (scheme, rest, explicit_scheme) = match host.split_once("://") {
        Some((scheme, rest)) => (scheme, rest, true),
        None => ("http", host, false),
    };
    if !matches!(scheme, "http" | "https") {
        return Err(LlmError::invalid_request(format!(
            "{OLLAMA_HOST_ENV}={host:?} has the scheme {scheme:?}; use http or https"
        ))
        .with_provider("ollama"));
    }
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], rest[at..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let has_port = match authority.rsplit_once(':') {
        // `[::1]` has colons but no port; `[::1]:8080` and `host:8080` have one.
        Some((head, port)) => !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !head.ends_with(':'),
        None => false,
    };
    let authority = match authority {
        "" => "localhost".to_owned(),
        a if a.starts_with(':') => format!("localhost{a}"),
        a if has_port || explicit_scheme => a.to_owned(),
        a => format!("{a}:{DEFAULT_OLLAMA_PORT}"),
    };
    Ok(format!("{scheme}://{authority}{path}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn url_for(host: &str) -> String {
        OllamaConfig::default()
            .server_url(|name| (name == OLLAMA_HOST_ENV).then(|| host.to_owned()))
            .unwrap()
    }

    #[test]
    fn ollama_host_is_read_like_the_ollama_cli_does() {
        assert_eq!(url_for("gpu-box"), "http://gpu-box:11434");
        assert_eq!(url_for("0.0.0.0:8080"), "http://0.0.0.0:8080");
        assert_eq!(url_for(":9999"), "http://localhost:9999");
        assert_eq!(url_for("https://ollama.example.com"), "https://ollama.example.com");
        assert_eq!(
            url_for("https://ollama.example.com:443/proxy/"),
            "https://ollama.example.com:443/proxy"
        );
        assert_eq!(url_for("[::1]:11500"), "http://[::1]:11500");
        assert_eq!(url_for("  "), DEFAULT_OLLAMA_URL);
        let error = OllamaConfig::default()
            .server_url(|_| Some("ftp://host".into()))
            .unwrap_err();
        assert!(error.message.contains("OLLAMA_HOST"), "{error}");
    }

    #[test]
    fn base_url_wins_over_ollama_host_and_loses_its_trailing_slash() {
        let config = OllamaConfig::default().with_base_url("http://127.0.0.1:5000/");
        assert_eq!(
            config.chat_url(|_| Some("elsewhere".into())).unwrap(),
            "http://127.0.0.1:5000/api/chat"
        );
    }

    #[test]
    fn media_limits_have_defaults_and_are_read_from_the_table() {
        assert_eq!(OllamaConfig::default().media, DEFAULT_MEDIA_LIMITS);
        let config: OllamaConfig =
            serde_json::from_value(serde_json::json!({"max_image_bytes": 2048, "max_audio_bytes": 1, "num_ctx": 8192}))
                .unwrap();
        assert_eq!(config.media.max_image_bytes, 2048);
        assert_eq!(config.media.max_audio_bytes, 1);
        assert_eq!(config.media.max_document_bytes, DEFAULT_MEDIA_LIMITS.max_document_bytes);
        assert_eq!(config.num_ctx, Some(8192));
        assert_eq!(config.request_options().media_limits, config.media);
        let error = serde_json::from_value::<OllamaConfig>(serde_json::json!({"max_images_bytes": 4})).unwrap_err();
        assert!(error.to_string().contains("max_images_bytes"), "{error}");
    }

    #[test]
    fn a_misspelt_key_is_an_error_naming_it() {
        let error = serde_json::from_value::<OllamaConfig>(serde_json::json!({"num_ctxx": 4096})).unwrap_err();
        assert!(error.to_string().contains("num_ctxx"), "{error}");
        let error = serde_json::from_value::<OllamaConfig>(serde_json::json!({"timeout_sec": 4})).unwrap_err();
        assert!(error.to_string().contains("timeout_sec"), "{error}");
    }

    #[test]
    fn a_named_key_variable_that_is_unset_is_an_auth_error_naming_it() {
        let config = OllamaConfig {
            key: ApiKeyConfig {
                api_key: None,
                api_key_env: Some("OLLAMA_API_KEY".into()),
            },
            ..OllamaConfig::default()
        };
        let error = config.resolve_api_key(|_| None).unwrap_err();
        assert_eq!(error.kind, agent_core::LlmErrorKind::Auth);
        assert!(error.message.contains("OLLAMA_API_KEY"), "{error}");
        assert!(OllamaConfig::default().resolve_api_key(|_| None).unwrap().is_none());
        let key = config.resolve_api_key(|_| Some("k-123".into())).unwrap().unwrap();
        assert_eq!(key.expose(), "k-123");
        assert!(!format!("{config:?}").contains("k-123"));
    }
}
