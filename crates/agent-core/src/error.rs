//! Errors of model calls.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What kind of failure an [`LlmError`] is; decides whether a retry can help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    /// Missing, wrong or expired credentials (HTTP 401/403).
    Auth,
    /// Too many requests (HTTP 429); retry after the given delay.
    RateLimited,
    /// The provider is overloaded (HTTP 529, 503).
    Overloaded,
    /// The request was rejected as malformed (HTTP 400, 404, 422).
    InvalidRequest,
    /// The conversation does not fit in the model's context window.
    ContextLength,
    /// No answer in time.
    Timeout,
    /// The connection failed or broke.
    Transport,
    /// The provider answered with something that could not be understood,
    /// including a stream that ended early.
    Decode,
    /// The model wrote a tool call that could not be used (the provider
    /// could not parse it, e.g. Gemini's `MALFORMED_FUNCTION_CALL`): a fault
    /// of the model's output, not of the request or the connection. Sending
    /// the same request again is no remedy; the agent loop instead asks the
    /// model once to write the call again, naming the problem (the error's
    /// message), and ends the run with this error if the next reply is
    /// malformed too.
    MalformedToolCall,
    /// Any other server-side failure (HTTP 5xx).
    Server,
    /// The caller cancelled the request.
    Cancelled,
    /// The request was not sent: the provider's circuit breaker is open
    /// after recent failures. Retryable once the breaker lets a probe
    /// through ([`LlmError::retry_after`]); a fallback chain moves on to
    /// its next provider at once.
    CircuitOpen,
    /// The request holds input the provider or the model cannot take (an
    /// attachment of a kind it does not read, or larger than it allows); it
    /// was not sent. The message names the part and the provider.
    UnsupportedInput,
}

impl LlmErrorKind {
    fn label(self) -> &'static str {
        match self {
            Self::Auth => "authentication failed",
            Self::RateLimited => "rate limited",
            Self::Overloaded => "provider overloaded",
            Self::InvalidRequest => "invalid request",
            Self::ContextLength => "context length exceeded",
            Self::Timeout => "timed out",
            Self::Transport => "connection failed",
            Self::Decode => "unreadable response",
            Self::MalformedToolCall => "malformed tool call",
            Self::Server => "server error",
            Self::Cancelled => "cancelled",
            Self::CircuitOpen => "circuit open",
            Self::UnsupportedInput => "unsupported input",
        }
    }
}

/// A failed model call: its kind, a message a person can act on, and what the
/// provider said about it. Never contains credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct LlmError {
    /// What kind of failure.
    pub kind: LlmErrorKind,
    /// Human-readable explanation, including the provider's own message.
    pub message: String,
    /// The provider that failed, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// HTTP status, when the failure came from an HTTP response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's request id, for support tickets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// How long the provider asked us to wait, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl LlmError {
    /// An error of `kind` with `message`.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            provider: None,
            status: None,
            request_id: None,
            retry_after_ms: None,
        }
    }

    /// Credentials were rejected or missing.
    pub fn auth(message: impl Into<String>) -> Self {
        Self::new(LlmErrorKind::Auth, message)
    }

    /// Rate limited, optionally with the delay the provider asked for.
    pub fn rate_limited(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self::new(LlmErrorKind::RateLimited, message).with_retry_after(retry_after)
    }

    /// The request was malformed.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(LlmErrorKind::InvalidRequest, message)
    }

    /// The response could not be understood.
    pub fn decode(message: impl Into<String>) -> Self {
        Self::new(LlmErrorKind::Decode, message)
    }

    /// The model wrote a tool call that could not be used; `message` names
    /// the problem in words the model can act on (see
    /// [`LlmErrorKind::MalformedToolCall`]).
    pub fn malformed_tool_call(message: impl Into<String>) -> Self {
        Self::new(LlmErrorKind::MalformedToolCall, message)
    }

    /// The connection failed.
    pub fn transport(message: impl Into<String>) -> Self {
        Self::new(LlmErrorKind::Transport, message)
    }

    /// No answer in time.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(LlmErrorKind::Timeout, message)
    }

    /// The request was cancelled by the caller.
    pub fn cancelled() -> Self {
        Self::new(LlmErrorKind::Cancelled, "the request was cancelled")
    }

    /// Names the provider.
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Names the provider unless the error already names one (an error
    /// passed up from a lower layer keeps its own).
    pub fn or_provider(mut self, provider: &str) -> Self {
        if self.provider.is_none() {
            self.provider = Some(provider.to_owned());
        }
        self
    }

    /// Records the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Records the provider's request id.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Records the delay the provider asked for.
    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after_ms = retry_after.map(|delay| u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            LlmErrorKind::RateLimited
                | LlmErrorKind::Overloaded
                | LlmErrorKind::Timeout
                | LlmErrorKind::Transport
                | LlmErrorKind::Server
                | LlmErrorKind::CircuitOpen
        )
    }

    /// The delay the provider asked for before a retry.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ms.map(Duration::from_millis)
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(provider) = &self.provider {
            write!(f, "{provider}: ")?;
        }
        f.write_str(self.kind.label())?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if let Some(request_id) = &self.request_id {
            write!(f, " [request id {request_id}]")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_provider_status_message_and_request_id() {
        let error = LlmError::auth("set OPENAI_API_KEY")
            .with_provider("openai")
            .with_status(401)
            .with_request_id("req_1");
        assert_eq!(
            error.to_string(),
            "openai: authentication failed (HTTP 401): set OPENAI_API_KEY [request id req_1]"
        );
    }

    #[test]
    fn retryability_follows_the_kind() {
        assert!(LlmError::rate_limited("slow down", Some(Duration::from_secs(2))).is_retryable());
        assert!(LlmError::new(LlmErrorKind::Server, "boom").is_retryable());
        assert!(!LlmError::auth("no").is_retryable());
        assert!(!LlmError::invalid_request("bad").is_retryable());
        assert!(!LlmError::cancelled().is_retryable());
        let malformed = LlmError::malformed_tool_call("bad call").with_provider("gcp.gemini");
        assert!(!malformed.is_retryable(), "the loop re-asks with a correction instead");
        assert_eq!(malformed.to_string(), "gcp.gemini: malformed tool call: bad call");
        assert_eq!(
            LlmError::rate_limited("", Some(Duration::from_millis(1500))).retry_after(),
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn or_provider_names_only_an_unnamed_error() {
        assert_eq!(
            LlmError::decode("x").or_provider("ollama").provider.as_deref(),
            Some("ollama")
        );
        let named = LlmError::decode("x").with_provider("agent-http").or_provider("ollama");
        assert_eq!(named.provider.as_deref(), Some("agent-http"));
    }
}
