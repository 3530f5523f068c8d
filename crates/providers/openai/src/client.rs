//! The thin [`LlmClient`]: builds the body with the mapper, sends it through
//! `agent-http`, feeds the bytes back to the mapper.

use agent_core::{CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError};
use agent_http::{AuthHeader, HttpClient, map_events};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use crate::config::{OpenAiConfig, Variant};
use crate::mapper::{BodyOptions, StreamMapper, build_request_body, parse_response};

/// A Chat Completions client for OpenAI, Azure OpenAI or an OpenAI-compatible
/// server. Cheap to clone; its `Debug` output never shows the key.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: HttpClient,
    /// Parsed once: no request parses it again.
    url: agent_http::Url,
    headers: Vec<(String, String)>,
    options: BodyOptions,
    stream_options: BodyOptions,
    provider: String,
    capabilities: Capabilities,
}

impl OpenAiClient {
    /// A client for `config`, reading the key from the process environment
    /// (the variable named by `api_key_env`) unless `api_key` is set.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// A client for `config`, looking environment variables up with `env`
    /// (so tests and embedders need not touch the process environment).
    ///
    /// Fails when OpenAI or Azure has no key (naming the variable to set),
    /// when the URL cannot be built (Azure without an endpoint, a compatible
    /// server without `base_url`) or when the HTTP client cannot start.
    pub fn with_env(config: OpenAiConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let url = agent_http::parse_url(&config.chat_completions_url()?)
            .map_err(|error| error.with_provider(config.provider_name()))?;
        let key = config.resolve_api_key(env)?;
        let provider = config.provider_name().to_owned();
        let mut http = HttpClient::new(provider.clone(), config.http.clone())?.with_auth_hint(config.auth_hint());
        if let Some(key) = key {
            http = http.with_auth(match config.variant {
                Variant::Azure => AuthHeader::header("api-key", key),
                Variant::OpenAi | Variant::Compatible => AuthHeader::bearer(key),
            });
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
            provider,
            capabilities,
        })
    }

    /// The Chat Completions URL requests go to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }
}

#[async_trait]
impl LlmClient for OpenAiClient {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model(&self) -> &str {
        &self.options.model
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let body = build_request_body(request, &self.options).map_err(|error| error.or_provider(&self.provider))?;
        let bytes = self
            .http
            .post_json(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        parse_response(&bytes).map_err(|error| error.or_provider(&self.provider))
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let body =
            build_request_body(request, &self.stream_options).map_err(|error| error.or_provider(&self.provider))?;
        let events = self
            .http
            .post_sse(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        let data = events.map(|event| event.map(|event| event.data));
        Ok(map_events(data, StreamMapper::new(), cancel, &self.provider))
    }
}
