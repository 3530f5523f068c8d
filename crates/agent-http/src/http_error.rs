//! [`HttpError`]: the failures agent-http detects itself (as opposed to
//! errors a server reports), each naming the limit or setting involved.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use agent_core::{LlmError, LlmErrorKind};

/// A failure detected by agent-http itself: a redirect it refused, a limit
/// a response went past, a wait it would not make. Converts into an
/// [`LlmError`] of the [`kind`](Self::kind) it implies, with this message.
/// Messages name hosts and limits, never credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The server redirected to another origin (host, port or scheme),
    /// which would have received the credentials and the request body.
    #[error(
        "refused to follow a redirect from {from} to {to}: requests with credentials only go to the \
         configured origin; if {to} is the right endpoint, configure it directly"
    )]
    CrossOriginRedirect {
        /// The origin asked for, e.g. `https://api.example.com`.
        from: String,
        /// The origin redirected to (scheme, host and port; no path).
        to: String,
    },
    /// Redirects within the origin went on too long.
    #[error("more than {limit} redirects; not following further")]
    TooManyRedirects {
        /// The most redirects followed.
        limit: usize,
    },
    /// A non-streamed response body is larger than `max_response_bytes`.
    #[error("the response body is larger than the {limit}-byte limit (max_response_bytes){}", declared(*length))]
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
        /// The size the server declared in `Content-Length`, if any.
        length: Option<u64>,
    },
    /// One line of an SSE stream is longer than `max_event_bytes`.
    #[error("an SSE line is longer than the {limit}-byte limit (max_event_bytes)")]
    SseLineTooLong {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The data of one SSE event is larger than `max_event_bytes`.
    #[error("an SSE event is larger than the {limit}-byte limit (max_event_bytes)")]
    SseEventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A streamed item (an SSE field, an NDJSON line) is not valid UTF-8,
    /// which JSON text must be: the stream stops rather than pass on text
    /// with replacement characters in it.
    #[error("an {format} of the stream is not valid UTF-8")]
    InvalidUtf8 {
        /// What was not: `SSE field` or `NDJSON line`.
        format: &'static str,
    },
    /// One line of an NDJSON stream is longer than `max_event_bytes`.
    #[error("an NDJSON line is longer than the {limit}-byte limit (max_event_bytes)")]
    NdjsonLineTooLong {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A streamed response is larger than `max_stream_bytes`, all events
    /// together.
    #[error("the streamed response is larger than the {limit}-byte limit (max_stream_bytes)")]
    StreamTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A streamed response went on longer than `stream_timeout_secs`.
    #[error("the stream did not end within {} (stream_timeout_secs)", Wait(*limit))]
    StreamTimeout {
        /// The time limit.
        limit: Duration,
    },
    /// The server asked for a wait the retry budget cannot cover.
    #[error(
        "the server asked to wait {} before retrying, more than max_total_wait_secs ({}) allows{}; giving up",
        Wait(*wait),
        Wait(*budget),
        already(*waited)
    )]
    RetryAfterTooLong {
        /// The wait asked for (`Retry-After`, `retry-after-ms` or the body).
        wait: Duration,
        /// Time already spent waiting between earlier attempts.
        waited: Duration,
        /// `max_total_wait_secs`.
        budget: Duration,
    },
}

impl HttpError {
    /// The kind of [`LlmError`] this is.
    pub fn kind(&self) -> LlmErrorKind {
        match self {
            Self::CrossOriginRedirect { .. } | Self::TooManyRedirects { .. } => LlmErrorKind::InvalidRequest,
            Self::BodyTooLarge { .. }
            | Self::SseLineTooLong { .. }
            | Self::SseEventTooLarge { .. }
            | Self::NdjsonLineTooLong { .. }
            | Self::InvalidUtf8 { .. }
            | Self::StreamTooLarge { .. } => LlmErrorKind::Decode,
            Self::StreamTimeout { .. } => LlmErrorKind::Timeout,
            Self::RetryAfterTooLong { .. } => LlmErrorKind::RateLimited,
        }
    }

    /// The first `HttpError` among the causes of `error`.
    pub(crate) fn find_cause<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a Self> {
        let mut cause = error.source();
        while let Some(current) = cause {
            if let Some(found) = current.downcast_ref::<Self>() {
                return Some(found);
            }
            cause = current.source();
        }
        None
    }
}

impl From<HttpError> for LlmError {
    fn from(error: HttpError) -> Self {
        LlmError::new(error.kind(), error.to_string())
    }
}

/// A duration as people read it: `850 ms`, `42 s`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wait(pub(crate) Duration);

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < Duration::from_secs(1) {
            write!(f, "{} ms", self.0.as_millis())
        } else {
            write!(f, "{} s", self.0.as_secs())
        }
    }
}

fn declared(length: Option<u64>) -> String {
    length
        .map(|length| format!("; it declared {length} bytes"))
        .unwrap_or_default()
}

fn already(waited: Duration) -> String {
    if waited.is_zero() {
        String::new()
    } else {
        format!(" after {} of waiting", Wait(waited))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_limit_and_the_setting() {
        let error = LlmError::from(HttpError::BodyTooLarge {
            limit: 1024,
            length: Some(4096),
        });
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert_eq!(
            error.message,
            "the response body is larger than the 1024-byte limit (max_response_bytes); it declared 4096 bytes"
        );
        let error = HttpError::RetryAfterTooLong {
            wait: Duration::from_secs(3600),
            waited: Duration::from_millis(250),
            budget: Duration::from_secs(120),
        };
        assert_eq!(
            error.to_string(),
            "the server asked to wait 3600 s before retrying, more than max_total_wait_secs (120 s) allows \
             after 250 ms of waiting; giving up"
        );
        assert_eq!(
            HttpError::StreamTimeout {
                limit: Duration::from_millis(300)
            }
            .to_string(),
            "the stream did not end within 300 ms (stream_timeout_secs)"
        );
    }
}
