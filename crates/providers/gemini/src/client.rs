//! The thin [`LlmClient`]: builds the body with the mapper, sends it through
//! `agent-http`, feeds the bytes back to the mapper.

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError, LlmErrorKind,
};
use agent_http::{AuthHeader, HttpClient, map_events};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use crate::config::{GeminiConfig, PROVIDER_NAME};
use crate::mapper::{BodyOptions, StreamMapper, build_request_body, parse_response};

/// A client for the Gemini API (`generateContent`, `streamGenerateContent`).
/// The key goes in the `x-goog-api-key` header, never in the URL. Cheap to
/// clone; its `Debug` output never shows the key.
#[derive(Debug, Clone)]
pub struct GeminiClient {
    http: HttpClient,
    config: GeminiConfig,
    url: String,
    stream_url: String,
    headers: Vec<(String, String)>,
    options: BodyOptions,
    auth_hint: String,
}

impl GeminiClient {
    /// A client for `config`, reading the key from the process environment
    /// (`GEMINI_API_KEY`, else `GOOGLE_API_KEY`, or the variable named by
    /// `api_key_env`) unless `api_key` is set.
    pub fn new(config: GeminiConfig) -> Result<Self, LlmError> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// A client for `config`, looking environment variables up with `env`
    /// (so tests and embedders need not touch the process environment).
    ///
    /// Fails when there is no key (naming the variable to set), when the
    /// model name cannot go in a URL, or when the HTTP client cannot start.
    pub fn with_env(config: GeminiConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let url = config.url(&config.model, false)?;
        let stream_url = config.url(&config.model, true)?;
        let key = config.resolve_api_key(env)?;
        let auth_hint = config.auth_hint();
        let http = HttpClient::new(PROVIDER_NAME, config.http.clone())?
            .with_auth_hint(auth_hint.clone())
            .with_auth(AuthHeader::header("x-goog-api-key", key));
        Ok(Self {
            http,
            headers: config.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            options: config.request_options(),
            url,
            stream_url,
            auth_hint,
            config,
        })
    }

    /// The `generateContent` URL of the configured model.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model and URL a request goes to ([`ChatRequest::model`] overrides the configured model).
    fn target(&self, request: &ChatRequest, stream: bool) -> Result<(String, String), LlmError> {
        if let Some(model) = request.model.as_deref().filter(|model| *model != self.options.model) {
            return Ok((model.to_owned(), self.config.url(model, stream)?));
        }
        let url = if stream { &self.stream_url } else { &self.url };
        Ok((self.options.model.clone(), url.clone()))
    }

    /// Names the provider and adds what to do about Gemini's own failures:
    /// a rejected key comes back as HTTP 400 `API_KEY_INVALID` (an auth
    /// error here), an unknown model as 404.
    fn own(&self, error: LlmError, model: &str) -> LlmError {
        let mut error = error.or_provider(PROVIDER_NAME);
        let bad_key = error.message.contains("API_KEY_INVALID") || error.message.contains("API key not valid");
        if error.kind == LlmErrorKind::InvalidRequest && bad_key {
            error.kind = LlmErrorKind::Auth;
            error.message = format!("{} ({})", error.message, self.auth_hint);
        } else if error.status == Some(404) {
            error.message = format!(
                "{} (check the model name `{model}` and api_version `{}` in [providers.gemini])",
                error.message, self.config.api_version
            );
        }
        error
    }
}

#[async_trait]
impl LlmClient for GeminiClient {
    fn provider(&self) -> &str {
        PROVIDER_NAME
    }

    fn model(&self) -> &str {
        &self.options.model
    }

    fn capabilities(&self) -> Capabilities {
        self.config.capabilities()
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let (model, url) = self.target(request, false)?;
        let body = build_request_body(request, &self.options).map_err(|error| self.own(error, &model))?;
        let bytes = self
            .http
            .post_json(&url, &self.headers, Bytes::from(body), cancel)
            .await
            .map_err(|error| self.own(error, &model))?;
        let mut response = parse_response(&bytes).map_err(|error| self.own(error, &model))?;
        if response.model.is_empty() {
            response.model = model;
        }
        Ok(response)
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let (model, url) = self.target(request, true)?;
        let body = build_request_body(request, &self.options).map_err(|error| self.own(error, &model))?;
        let events = self
            .http
            .post_sse(&url, &self.headers, Bytes::from(body), cancel)
            .await
            .map_err(|error| self.own(error, &model))?;
        let data = events.map(|event| event.map(|event| event.data));
        let mapper = StreamMapper::new().with_fallback_model(model);
        Ok(map_events(data, mapper, cancel, PROVIDER_NAME))
    }
}
