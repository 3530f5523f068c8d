//! The HTTP client every remote provider sends its requests through.

use std::pin::Pin;

use agent_core::{CancellationToken, LlmError};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::body::{BodyError, ERROR_BODY_LIMIT, read_capped, read_prefix, with_deadline, with_size_cap};
use crate::error::{classify_response, classify_transport, is_retryable_status, should_retry_header};
use crate::ndjson::{NdjsonStream, ndjson_lines_with_limit};
use crate::retry::{Attempt, Retry, with_retries};
use crate::sse::{SseStream, sse_events_with_limit};
use crate::url::{RequestUrl, Url};
use crate::{HttpConfig, HttpError, SecretString, redirect};

/// A response body delivered in chunks as it arrives.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, LlmError>> + Send>>;

/// The credential header a provider sends (`Authorization: Bearer …`,
/// `x-api-key: …`, `api-key: …`). Marked sensitive, so it never appears in
/// logs or Debug output.
#[derive(Debug, Clone)]
pub struct AuthHeader {
    name: HeaderName,
    secret: SecretString,
    /// The header value, built once; `None` if the key cannot be sent in a header.
    value: Option<HeaderValue>,
}

impl AuthHeader {
    /// `Authorization: Bearer <secret>`.
    pub fn bearer(secret: SecretString) -> Self {
        Self::build(reqwest::header::AUTHORIZATION, Some("Bearer "), secret)
    }

    /// `<name>: <secret>`, e.g. `x-api-key`.
    pub fn header(name: &'static str, secret: SecretString) -> Self {
        Self::build(HeaderName::from_static(name), None, secret)
    }

    fn build(name: HeaderName, scheme: Option<&'static str>, secret: SecretString) -> Self {
        let text = format!("{}{}", scheme.unwrap_or_default(), secret.expose());
        let value = HeaderValue::from_str(&text).ok().map(|mut value| {
            value.set_sensitive(true);
            value
        });
        Self { name, secret, value }
    }

    fn value(&self) -> Result<HeaderValue, LlmError> {
        self.value
            .clone()
            .ok_or_else(|| LlmError::auth("the API key contains characters that cannot be sent in an HTTP header"))
    }
}

/// Sends JSON requests with retries, classifies failures, and hands back
/// whole bodies or byte streams. Cheap to clone.
///
/// Redirects are followed only within the origin of the URL asked for;
/// one to another host, port or scheme fails with
/// [`HttpError::CrossOriginRedirect`], so credentials in any header (and
/// the request body) never leave for another server.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    config: HttpConfig,
    provider: String,
    auth: Option<AuthHeader>,
    auth_hint: Option<String>,
}

impl HttpClient {
    /// A client for `provider` (its name appears in errors and logs).
    /// Fails when a number of `config` is out of range
    /// ([`HttpConfig::validate`]).
    pub fn new(provider: impl Into<String>, config: HttpConfig) -> Result<Self, LlmError> {
        let provider = provider.into();
        config
            .validate()
            .map_err(|error| error.with_provider(provider.clone()))?;
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout())
            .read_timeout(config.read_timeout())
            .user_agent(config.user_agent.clone())
            .redirect(redirect::same_origin_only())
            .build()
            .map_err(|error| classify_transport(&provider, &error))?;
        Ok(Self {
            client,
            config,
            provider,
            auth: None,
            auth_hint: None,
        })
    }

    /// Sends this credential with every request.
    pub fn with_auth(mut self, auth: AuthHeader) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Adds this hint to authentication errors, e.g. "set OPENAI_API_KEY".
    pub fn with_auth_hint(mut self, hint: impl Into<String>) -> Self {
        self.auth_hint = Some(hint.into());
        self
    }

    /// The provider name used in errors.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The configuration this client was built with.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// POSTs `body` (JSON) and returns the whole response body, retrying
    /// failures that are safe to retry as configured. A body larger than
    /// `max_response_bytes` fails with [`HttpError::BodyTooLarge`].
    pub async fn post_json(
        &self,
        url: &(impl RequestUrl + ?Sized),
        headers: &[(String, String)],
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<Bytes, LlmError> {
        let url = self.target(url)?;
        let due = self.config.timeout();
        with_retries(&self.config, &self.provider, cancel, || async {
            // The whole exchange, headers and body, within `timeout_secs`
            // (tokio's timer: nothing allocated per request).
            let exchange = async {
                let response = match self.attempt(&url, headers, body.clone()).await {
                    Attempt::Done(response) => response,
                    Attempt::Failed { error, retry } => return Attempt::Failed { error, retry },
                };
                match read_capped(response, self.config.max_response_bytes).await {
                    Ok(bytes) => Attempt::Done(bytes),
                    Err(BodyError::TooLarge(error)) => Attempt::Failed {
                        error: LlmError::from(error).with_provider(self.provider.clone()),
                        retry: Retry::No,
                    },
                    // The model has answered: asking again would run it again.
                    Err(BodyError::Transport(error)) => Attempt::Failed {
                        error: self.transport_error(&error),
                        retry: Retry::Delivered,
                    },
                }
            };
            match tokio::time::timeout(due, exchange).await {
                Ok(attempt) => attempt,
                Err(_) => Attempt::Failed {
                    error: LlmError::timeout(format!("no complete response within {} s", due.as_secs_f64()))
                        .with_provider(self.provider.clone()),
                    retry: Retry::Delivered,
                },
            }
        })
        .await
    }

    /// POSTs `body` (JSON) and returns the response body as a stream once
    /// the response headers say success. Failures before that are retried
    /// when safe; a stream that breaks afterwards is never retried (part of
    /// it may already have reached the caller) and yields an error instead.
    /// The stream ends with [`HttpError::StreamTimeout`] once
    /// `stream_timeout_secs` have passed since the headers, and with
    /// [`HttpError::StreamTooLarge`] once it has brought more than
    /// `max_stream_bytes`.
    pub async fn post_stream(
        &self,
        url: &(impl RequestUrl + ?Sized),
        headers: &[(String, String)],
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<ByteStream, LlmError> {
        let url = self.target(url)?;
        let response = with_retries(&self.config, &self.provider, cancel, || async {
            let headers_due = self.config.timeout();
            match tokio::time::timeout(headers_due, self.attempt(&url, headers, body.clone())).await {
                Ok(attempt) => attempt,
                Err(_) => Attempt::Failed {
                    error: LlmError::timeout(format!("no response within {} s", headers_due.as_secs_f64()))
                        .with_provider(self.provider.clone()),
                    retry: Retry::Delivered,
                },
            }
        })
        .await?;
        let provider = self.provider.clone();
        let cancel = cancel.clone();
        let mut received = 0usize;
        let body = response.bytes_stream().map(move |chunk| match chunk {
            Ok(bytes) => {
                received += bytes.len();
                Ok(bytes)
            }
            Err(error) => {
                let mut error = classify_transport(&provider, &error);
                error.message = format!("the stream broke after {received} bytes: {}", error.message);
                Err(error)
            }
        });
        let body = Box::pin(with_size_cap(body, self.config.max_stream_bytes, self.provider.clone()));
        let body = with_deadline(body, self.config.stream_timeout(), self.provider.clone());
        let cancelled = async move { cancel.cancelled_owned().await };
        Ok(Box::pin(body.take_until(Box::pin(cancelled))))
    }

    /// [`post_stream`](Self::post_stream), decoded as Server-Sent Events
    /// with the configured `max_event_bytes`.
    pub async fn post_sse(
        &self,
        url: &(impl RequestUrl + ?Sized),
        headers: &[(String, String)],
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<SseStream<ByteStream>, LlmError> {
        let bytes = self.post_stream(url, headers, body, cancel).await?;
        Ok(sse_events_with_limit(bytes, self.config.max_event_bytes))
    }

    /// [`post_stream`](Self::post_stream), decoded as NDJSON lines with the
    /// configured `max_event_bytes`.
    pub async fn post_ndjson(
        &self,
        url: &(impl RequestUrl + ?Sized),
        headers: &[(String, String)],
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<NdjsonStream<ByteStream>, LlmError> {
        let bytes = self.post_stream(url, headers, body, cancel).await?;
        Ok(ndjson_lines_with_limit(bytes, self.config.max_event_bytes))
    }

    /// The URL of a request, its parse error named for this provider.
    fn target(&self, url: &(impl RequestUrl + ?Sized)) -> Result<Url, LlmError> {
        url.request_url()
            .map_err(|error| error.with_provider(self.provider.clone()))
    }

    async fn attempt(&self, url: &Url, headers: &[(String, String)], body: Bytes) -> Attempt<reqwest::Response> {
        let mut request = self
            .client
            .post(url.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(body);
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(auth) = &self.auth {
            match auth.value() {
                Ok(value) => request = request.header(auth.name.clone(), value),
                Err(error) => {
                    return Attempt::Failed {
                        error: error.with_provider(self.provider.clone()),
                        retry: Retry::No,
                    };
                }
            }
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                return Attempt::Failed {
                    error: self.transport_error(&error),
                    retry: send_retry(&error),
                };
            }
        };
        let status = response.status();
        if status.is_success() {
            return Attempt::Done(response);
        }
        let headers: HeaderMap = response.headers().clone();
        let body = read_prefix(response, ERROR_BODY_LIMIT.min(self.config.max_response_bytes)).await;
        let error = classify_response(&self.provider, status, &headers, &body, self.auth_hint.as_deref());
        let retryable = should_retry_header(&headers).unwrap_or_else(|| is_retryable_status(status));
        Attempt::Failed {
            error: self.redact(error),
            retry: if retryable { Retry::Yes } else { Retry::No },
        }
    }

    /// A failure without a response: agent-http's own (a refused
    /// redirect) as it is, others classified and redacted.
    fn transport_error(&self, error: &reqwest::Error) -> LlmError {
        match HttpError::find_cause(error) {
            Some(typed) => LlmError::from(typed.clone()).with_provider(self.provider.clone()),
            None => self.redact(classify_transport(&self.provider, error)),
        }
    }

    fn redact(&self, mut error: LlmError) -> LlmError {
        if let Some(auth) = &self.auth {
            error.message = auth.secret.redact(&error.message);
        }
        error
    }
}

/// Whether a request that failed without a response may be sent again:
/// only when it cannot have been delivered, i.e. connecting failed.
fn send_retry(error: &reqwest::Error) -> Retry {
    if error.is_builder() || HttpError::find_cause(error).is_some() {
        Retry::No
    } else if error.is_connect() {
        Retry::Yes
    } else {
        Retry::Delivered
    }
}
