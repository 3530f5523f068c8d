//! The HTTP client every remote provider sends its requests through.

use std::pin::Pin;
use std::time::Duration;

use agent_core::{CancellationToken, LlmError, LlmErrorKind};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::{classify_response, classify_transport, is_retryable_status, should_retry_header};
use crate::{HttpConfig, SecretString};

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
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    config: HttpConfig,
    provider: String,
    auth: Option<AuthHeader>,
    auth_hint: Option<String>,
}

/// What one attempt ended with.
enum Attempt<T> {
    Done(T),
    Failed { error: LlmError, retryable: bool },
}

impl HttpClient {
    /// A client for `provider` (its name appears in errors and logs).
    pub fn new(provider: impl Into<String>, config: HttpConfig) -> Result<Self, LlmError> {
        let provider = provider.into();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout())
            .read_timeout(config.read_timeout())
            .user_agent(config.user_agent.clone())
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

    /// POSTs `body` (JSON) and returns the whole response body, retrying
    /// retryable failures as configured.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<Bytes, LlmError> {
        self.with_retries(cancel, || async {
            let response = match self
                .attempt(url, headers, body.clone(), Some(self.config.timeout()))
                .await
            {
                Attempt::Done(response) => response,
                Attempt::Failed { error, retryable } => return Attempt::Failed { error, retryable },
            };
            match response.bytes().await {
                Ok(bytes) => Attempt::Done(bytes),
                Err(error) => Attempt::Failed {
                    error: self.redact(classify_transport(&self.provider, &error)),
                    retryable: true,
                },
            }
        })
        .await
    }

    /// POSTs `body` (JSON) and returns the response body as a stream once
    /// the response headers say success. Failures before that are retried;
    /// a stream that breaks afterwards is never retried (part of it may
    /// already have reached the caller) and yields an error instead.
    pub async fn post_stream(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<ByteStream, LlmError> {
        let response = self
            .with_retries(cancel, || async {
                let headers_due = self.config.timeout();
                match tokio::time::timeout(headers_due, self.attempt(url, headers, body.clone(), None)).await {
                    Ok(attempt) => attempt,
                    Err(_) => Attempt::Failed {
                        error: LlmError::timeout(format!("no response within {} s", headers_due.as_secs_f64()))
                            .with_provider(self.provider.clone()),
                        retryable: true,
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
        let cancelled = async move { cancel.cancelled_owned().await };
        Ok(Box::pin(body.take_until(Box::pin(cancelled))))
    }

    async fn with_retries<T, F, Fut>(&self, cancel: &CancellationToken, mut attempt: F) -> Result<T, LlmError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Attempt<T>>,
    {
        let mut waited = Duration::ZERO;
        let mut retry = 0;
        loop {
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::cancelled().with_provider(self.provider.clone())),
                outcome = attempt() => outcome,
            };
            let (error, retryable) = match outcome {
                Attempt::Done(value) => return Ok(value),
                Attempt::Failed { error, retryable } => (error, retryable),
            };
            if !retryable || retry >= self.config.max_retries {
                return Err(if retry > 0 {
                    annotate_attempts(error, retry + 1)
                } else {
                    error
                });
            }
            let delay = error.retry_after().unwrap_or_else(|| self.config.backoff(retry));
            if waited + delay > self.config.max_total_wait() {
                return Err(annotate_attempts(error, retry + 1));
            }
            tracing::warn!(
                provider = %self.provider,
                retry = retry + 1,
                delay_ms = delay.as_millis() as u64,
                error = %error,
                "retrying model request"
            );
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::cancelled().with_provider(self.provider.clone())),
                () = tokio::time::sleep(delay) => {}
            }
            waited += delay;
            retry += 1;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
        timeout: Option<Duration>,
    ) -> Attempt<reqwest::Response> {
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
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
                        retryable: false,
                    };
                }
            }
        }
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                return Attempt::Failed {
                    error: self.redact(classify_transport(&self.provider, &error)),
                    retryable: true,
                };
            }
        };
        let status = response.status();
        if status.is_success() {
            return Attempt::Done(response);
        }
        let headers: HeaderMap = response.headers().clone();
        let body = response.bytes().await.unwrap_or_default();
        let error = classify_response(&self.provider, status, &headers, &body, self.auth_hint.as_deref());
        Attempt::Failed {
            error: self.redact(error),
            retryable: should_retry_header(&headers).unwrap_or_else(|| is_retryable_status(status)),
        }
    }

    fn redact(&self, mut error: LlmError) -> LlmError {
        if let Some(auth) = &self.auth {
            error.message = auth.secret.redact(&error.message);
        }
        error
    }
}

fn annotate_attempts(mut error: LlmError, attempts: u32) -> LlmError {
    if error.kind != LlmErrorKind::Cancelled {
        error.message = format!("{} (after {attempts} attempts)", error.message);
    }
    error
}
