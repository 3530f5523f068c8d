//! The thin [`LlmClient`]: builds the body with the mapper, sends it through
//! `agent-http`, feeds the bytes back to the mapper.

use agent_core::{CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError};
use agent_http::{AuthHeader, HttpClient, map_events};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use crate::config::{AnthropicConfig, PROVIDER_NAME};
use crate::mapper::{BodyOptions, StreamMapper, build_request_body, parse_response};

/// A Messages API client. Cheap to clone; its `Debug` output never shows the key.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: HttpClient,
    /// Parsed once: no request parses it again.
    url: agent_http::Url,
    headers: Vec<(String, String)>,
    options: BodyOptions,
    stream_options: BodyOptions,
    capabilities: Capabilities,
}

impl AnthropicClient {
    /// A client for `config`, reading the key from the process environment
    /// (the variable named by `api_key_env`, default `ANTHROPIC_API_KEY`)
    /// unless `api_key` is set.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// A client for `config`, looking environment variables up with `env`
    /// (so tests and embedders need not touch the process environment).
    ///
    /// Fails when there is no key (naming the variable to set) or when the
    /// HTTP client cannot start.
    pub fn with_env(config: AnthropicConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let key = config.resolve_api_key(env)?;
        let options = config.request_options();
        let stream_options = options.clone().streaming();
        let url = agent_http::parse_url(&config.messages_url()).map_err(|error| error.with_provider(PROVIDER_NAME))?;
        let headers = config.request_headers();
        let capabilities = config.capabilities();
        let auth_hint = config.auth_hint();
        let http = HttpClient::new(PROVIDER_NAME, config.http)?
            .with_auth_hint(auth_hint)
            .with_auth(AuthHeader::header("x-api-key", key));
        Ok(Self {
            http,
            url,
            headers,
            options,
            stream_options,
            capabilities,
        })
    }

    /// The Messages URL requests go to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }
}

#[async_trait]
impl LlmClient for AnthropicClient {
    fn provider(&self) -> &str {
        PROVIDER_NAME
    }

    fn model(&self) -> &str {
        &self.options.model
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let body = build_request_body(request, &self.options).map_err(|error| error.or_provider(PROVIDER_NAME))?;
        let bytes = self
            .http
            .post_json(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        parse_response(&bytes).map_err(|error| error.or_provider(PROVIDER_NAME))
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let body =
            build_request_body(request, &self.stream_options).map_err(|error| error.or_provider(PROVIDER_NAME))?;
        let events = self
            .http
            .post_sse(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        let data = events.map(|event| event.map(|event| event.data));
        Ok(map_events(data, StreamMapper::new(), cancel, PROVIDER_NAME))
    }
}
