//! Errors as HTTP responses, in OpenAI's error shape so that its clients
//! show them: `{"error": {"message", "type", "code"}}`.

use axum::Json;
use axum::http::StatusCode;
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
    /// The key already has as many runs in flight as it may (429).
    #[error("too many runs in flight for this API key (at most {limit}); retry when one has finished")]
    TooManyRuns {
        /// The per-key limit.
        limit: usize,
    },
    /// The agent's run failed (502: the model behind it did).
    #[error("the run failed: {0}")]
    RunFailed(String),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TooManyRuns { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::RunFailed(_) => StatusCode::BAD_GATEWAY,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Unauthorized => "authentication_error",
            Self::InvalidRequest(_) | Self::TooLarge { .. } => "invalid_request_error",
            Self::TooManyRuns { .. } => "rate_limit_error",
            Self::RunFailed(_) => "api_error",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"message": self.to_string(), "type": self.kind(), "code": null}});
        let mut response = (self.status(), Json(body)).into_response();
        if self == Self::Unauthorized {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}
