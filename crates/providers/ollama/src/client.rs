//! The thin [`LlmClient`]: builds the body with the mapper, sends it through
//! `agent-http`, feeds the bytes back to the mapper.

use agent_core::{CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError};
use agent_http::{AuthHeader, HttpClient, map_events};
use async_trait::async_trait;
use bytes::Bytes;

use crate::config::OllamaConfig;
use crate::mapper::{BodyOptions, StreamMapper, build_request_body, parse_response};

/// The name this client reports as its provider.
const PROVIDER: &str = "ollama";

/// A client for Ollama's native `/api/chat`. Cheap to clone; its `Debug`
/// output never shows a key.
#[derive(Debug, Clone)]
pub struct OllamaClient {
    http: HttpClient,
    /// Parsed once: no request parses it again.
    url: agent_http::Url,
    headers: Vec<(String, String)>,
    options: BodyOptions,
    stream_options: BodyOptions,
    capabilities: Capabilities,
}

impl OllamaClient {
    /// A client for `config`, reading `OLLAMA_HOST` (and a key variable, if
    /// configured) from the process environment.
    pub fn new(config: OllamaConfig) -> Result<Self, LlmError> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// A client for `config`, looking environment variables up with `env`
    /// (so tests and embedders need not touch the process environment).
    ///
    /// Fails when `OLLAMA_HOST` cannot be read as an address, when a
    /// configured key variable is unset, or when the HTTP client cannot start.
    pub fn with_env(config: OllamaConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let url = agent_http::parse_url(&config.chat_url(&env)?).map_err(|error| error.with_provider(PROVIDER))?;
        let key = config.resolve_api_key(&env)?;
        let mut http = HttpClient::new(PROVIDER, config.http.clone())?.with_auth_hint(config.auth_hint());
        if let Some(key) = key {
            http = http.with_auth(AuthHeader::bearer(key));
        }
        let options = config.request_options();
        let stream_options = options.clone().streaming();
        let capabilities = config.capabilities();
        Ok(Self {
            http,
            url,
            headers: config.headers.into_iter().collect(),
            options,
            stream_options,
            capabilities,
        })
    }

    /// The `/api/chat` URL requests go to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }
}

#[async_trait]
impl LlmClient for OllamaClient {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.options.model
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let body = build_request_body(request, &self.options).map_err(|error| error.or_provider(PROVIDER))?;
        let bytes = self
            .http
            .post_json(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        parse_response(&bytes).map_err(|error| error.or_provider(PROVIDER))
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let body = build_request_body(request, &self.stream_options).map_err(|error| error.or_provider(PROVIDER))?;
        let lines = self
            .http
            .post_ndjson(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        Ok(map_events(lines, StreamMapper::new(), cancel, PROVIDER))
    }
}
