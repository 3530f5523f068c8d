//! Errors as HTTP responses, in OpenAI's error shape so that its clients
//! show them: `{"error": {"message", "type", "code"}}`.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// What went wrong with a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// No bearer key, or one that is not configured (401).
    #[error("missing or unknown API key: send `Authorization: Bearer KEY`")]
    Unauthorized,
    /// The body could not be read as the endpoint's JSON (400).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The body is over the size limit (413).
    #[error("the request body is over the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The body did not arrive within the body timeout (408).
    #[error("the request body did not arrive within {} s; send it at once after the headers", seconds(*.millis))]
    BodyTimeout {
        /// The timeout in milliseconds.
        millis: u64,
    },
    /// The key already has as many runs in flight as it may (429).
    #[error("too many runs in flight for this API key (at most {limit}); retry when one has finished")]
    TooManyRuns {
        /// The per-key limit.
        limit: usize,
    },
    /// The key sent more requests than its rate allows (429, with
    /// `Retry-After`).
    #[error("too many requests for this API key (at most {per_minute} a minute); retry in {retry_after_secs} s")]
    RateLimited {
        /// The per-key rate.
        per_minute: u32,
        /// Seconds until a request is allowed again.
        retry_after_secs: u64,
    },
    /// No such run or session for this key (404). Another key's runs and
    /// sessions are not found either.
    #[error("{0}")]
    NotFound(String),
    /// The request contradicts what is stored (409).
    #[error("{0}")]
    Conflict(String),
    /// The key already has as many sessions as it may keep (409).
    #[error(
        "this API key has {limit} sessions, the most it may keep; delete one (DELETE /v1/sessions/{{id}}) to create \
         another"
    )]
    TooManySessions {
        /// The per-key limit.
        limit: usize,
    },
    /// The agent's run failed (502: the model behind it did).
    #[error("the run failed: {0}")]
    RunFailed(String),
    /// The conversation store failed (503).
    #[error("the session store failed: {0}")]
    Store(String),
    /// The server is shutting down and starts no new run (503).
    #[error("the server is shutting down; retry on another instance")]
    ShuttingDown,
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::TooManyRuns { .. } | Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) | Self::TooManySessions { .. } => StatusCode::CONFLICT,
            Self::RunFailed(_) => StatusCode::BAD_GATEWAY,
            Self::Store(_) | Self::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Unauthorized => "authentication_error",
            Self::InvalidRequest(_) | Self::TooLarge { .. } | Self::BodyTimeout { .. } => "invalid_request_error",
            Self::TooManyRuns { .. } | Self::RateLimited { .. } => "rate_limit_error",
            Self::NotFound(_) => "not_found_error",
            Self::Conflict(_) | Self::TooManySessions { .. } => "conflict_error",
            Self::RunFailed(_) | Self::Store(_) | Self::ShuttingDown => "api_error",
        }
    }
}

/// `millis` in seconds, as briefly as exact: `0.3`, `30`.
fn seconds(millis: u64) -> f64 {
    millis as f64 / 1000.0
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"message": self.to_string(), "type": self.kind(), "code": null}});
        let mut response = (self.status(), Json(body)).into_response();
        let headers = response.headers_mut();
        match self {
            Self::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::RateLimited { retry_after_secs, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            }
            _ => {}
        }
        response
    }
}
