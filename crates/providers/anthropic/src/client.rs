//! The thin [`LlmClient`]: builds the body with the mapper, sends it through
//! `agent-http`, feeds the bytes back to the mapper.

use std::collections::VecDeque;

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError, LlmErrorKind,
    StreamEvent,
};
use agent_http::sse::{SseStream, sse_events};
use agent_http::{AuthHeader, ByteStream, HttpClient};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use crate::config::{AnthropicConfig, PROVIDER_NAME};
use crate::mapper::{RequestOptions, StreamMapper, build_request_body, parse_response};

/// A Messages API client. Cheap to clone; its `Debug` output never shows the key.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: HttpClient,
    url: String,
    headers: Vec<(String, String)>,
    options: RequestOptions,
    stream_options: RequestOptions,
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
        let url = config.messages_url();
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
        &self.url
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
        let body = build_request_body(request, &self.options).map_err(own)?;
        let bytes = self
            .http
            .post_json(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        parse_response(&bytes).map_err(own)
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let body = build_request_body(request, &self.stream_options).map_err(own)?;
        let bytes = self
            .http
            .post_stream(&self.url, &self.headers, Bytes::from(body), cancel)
            .await?;
        let state = StreamState {
            sse: sse_events(bytes),
            mapper: StreamMapper::new(),
            ready: VecDeque::new(),
            scratch: Vec::new(),
            done: false,
            cancel: cancel.clone(),
        };
        Ok(Box::pin(futures::stream::unfold(state, StreamState::next)))
    }
}

/// Names the provider on an error that does not say yet.
fn own(error: LlmError) -> LlmError {
    if error.provider.is_some() {
        error
    } else {
        error.with_provider(PROVIDER_NAME)
    }
}

/// What the event stream keeps between polls.
struct StreamState {
    sse: SseStream<ByteStream>,
    mapper: StreamMapper,
    ready: VecDeque<StreamEvent>,
    scratch: Vec<StreamEvent>,
    done: bool,
    cancel: CancellationToken,
}

impl StreamState {
    async fn next(mut self) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some((Ok(event), self));
            }
            if self.done {
                return None;
            }
            let outcome = match self.sse.next().await {
                Some(Ok(event)) => self.mapper.push(&event.data, &mut self.scratch),
                Some(Err(mut error)) if !self.mapper.saw_stop_reason() => {
                    if error.kind != LlmErrorKind::Cancelled {
                        error.message = format!("{}; {}", error.message, self.mapper.truncation_message());
                    }
                    Err(error)
                }
                // The reply was complete before the connection broke.
                Some(Err(_)) | None if !self.cancel.is_cancelled() => self.mapper.finish(&mut self.scratch),
                Some(Err(_)) | None => Err(LlmError::cancelled()),
            };
            self.ready.extend(self.scratch.drain(..));
            if let Err(mut error) = outcome {
                // Nothing after an error: events already mapped from the same
                // chunk are dropped too, so a half call never gets through.
                self.ready.clear();
                self.done = true;
                if self.cancel.is_cancelled() && error.kind != LlmErrorKind::Cancelled {
                    error = LlmError::cancelled();
                }
                return Some((Err(own(error)), self));
            }
            if self.mapper.is_finished() {
                self.done = true;
            }
        }
    }
}
