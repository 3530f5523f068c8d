//! Turning HTTP failures into [`LlmError`]s a person can act on.

use std::time::{Duration, SystemTime};

use agent_core::{LlmError, LlmErrorKind};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// Response headers that carry a request id, in order of preference.
const REQUEST_ID_HEADERS: [&str; 4] = ["x-request-id", "request-id", "x-goog-request-id", "apim-request-id"];

/// Classifies a non-success response: the kind from the status (and the
/// body, for context-length errors), the provider's own message from the body,
/// the request id and the delay asked for from the headers.
///
/// `auth_hint` is appended to authentication failures, e.g. "set OPENAI_API_KEY".
pub fn classify_response(
    provider: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    auth_hint: Option<&str>,
) -> LlmError {
    let provider_message = provider_message(body);
    let mut kind = kind_for_status(status);
    if kind == LlmErrorKind::InvalidRequest && is_context_length(&provider_message) {
        kind = LlmErrorKind::ContextLength;
    }
    let mut message = if provider_message.is_empty() {
        status.canonical_reason().unwrap_or("no details").to_owned()
    } else {
        provider_message
    };
    if kind == LlmErrorKind::Auth
        && let Some(hint) = auth_hint
    {
        message = format!("{message} ({hint})");
    }
    let body_json = serde_json::from_slice::<Value>(body).ok();
    let delay = retry_after(headers, SystemTime::now()).or_else(|| body_json.as_ref().and_then(body_retry_delay));
    let mut error = LlmError::new(kind, message)
        .with_provider(provider)
        .with_status(status.as_u16())
        .with_retry_after(delay);
    if let Some(id) = request_id(headers).or_else(|| body_json.as_ref().and_then(body_request_id)) {
        error = error.with_request_id(id);
    }
    error
}

/// The retry decision a server states in `x-should-retry` (`true` or
/// `false`, sent by Anthropic and OpenAI), which overrides the status code's.
pub fn should_retry_header(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The delay a Google error body asks for: `RetryInfo.retryDelay` in
/// `error.details` (`"13s"`, `"1.5s"`), for 429s that carry no `Retry-After`.
fn body_retry_delay(body: &Value) -> Option<Duration> {
    let body = match body {
        Value::Array(items) => items.first()?,
        other => other,
    };
    body.get("error")?
        .get("details")?
        .as_array()?
        .iter()
        .filter(|detail| {
            detail
                .get("@type")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind.ends_with("RetryInfo"))
        })
        .find_map(|detail| {
            detail
                .get("retryDelay")?
                .as_str()?
                .strip_suffix('s')?
                .parse::<f64>()
                .ok()
        })
        .and_then(seconds)
}

/// A request id carried in the body (Anthropic's `request_id`), for
/// responses whose headers have none.
fn body_request_id(body: &Value) -> Option<String> {
    body.get("request_id")
        .or_else(|| body.get("error")?.get("request_id"))
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// The kind of failure an HTTP status means.
pub fn kind_for_status(status: StatusCode) -> LlmErrorKind {
    match status.as_u16() {
        401 | 403 => LlmErrorKind::Auth,
        408 => LlmErrorKind::Timeout,
        413 => LlmErrorKind::ContextLength,
        429 => LlmErrorKind::RateLimited,
        503 | 529 => LlmErrorKind::Overloaded,
        409 | 500..=599 => LlmErrorKind::Server,
        _ => LlmErrorKind::InvalidRequest,
    }
}

/// Whether a status is worth retrying: 408, 409, 429, 5xx and 529; never
/// 400, 401, 403, 404 or other client errors.
pub fn is_retryable_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429 | 500..=599)
}

/// Maps a reqwest failure (no response) to an [`LlmError`].
pub fn classify_transport(provider: &str, error: &reqwest::Error) -> LlmError {
    let kind = if error.is_timeout() {
        LlmErrorKind::Timeout
    } else if error.is_decode() {
        LlmErrorKind::Decode
    } else {
        LlmErrorKind::Transport
    };
    // reqwest's Display includes the URL but never headers, so no key leaks.
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    LlmError::new(kind, message).with_provider(provider)
}

/// The provider's own explanation from an error body, whatever its shape:
/// `{"error": {"message", "type"}}` (OpenAI, Anthropic), `{"error": {"message",
/// "status"}}` (Gemini), `{"error": "..."}` (Ollama), `{"message": ...}`, or
/// the text itself.
pub fn provider_message(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        let text = String::from_utf8_lossy(body);
        return truncate(text.trim(), 500);
    };
    // Gemini wraps errors in a one-element array.
    let value = match value {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    };
    let error = value.get("error").unwrap_or(&value);
    if let Some(text) = error.as_str() {
        return truncate(text, 500);
    }
    let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
    let label = ["type", "status", "code"]
        .iter()
        .find_map(|key| error.get(*key).and_then(|v| v.as_str().map(str::to_owned)));
    match (label, message.is_empty()) {
        (Some(label), false) => truncate(&format!("{label}: {message}"), 500),
        (Some(label), true) => label,
        (None, false) => truncate(message, 500),
        (None, true) => truncate(&value.to_string(), 500),
    }
}

fn is_context_length(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "prompt is too long",
        "too many tokens",
        "input is too long",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The delay asked for by `retry-after-ms`, or `Retry-After` in seconds or as
/// an HTTP date (relative to `now`; a past date is no delay).
///
/// A number too large to represent is [`Duration::MAX`] (a wait that long
/// ends the retries; it must not read as "no delay given"); negative, NaN
/// and unreadable values are ignored. An unusable `retry-after-ms` falls
/// back to `Retry-After`.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let ms = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok());
    if let Some(delay) = ms.and_then(|ms| seconds(ms / 1000.0)) {
        return Some(delay);
    }
    let value = header("retry-after")?;
    if let Ok(number) = value.parse::<f64>() {
        return seconds(number);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A delay of `value` seconds: `None` when negative or NaN, saturating at
/// [`Duration::MAX`] when too large (infinity included).
fn seconds(value: f64) -> Option<Duration> {
    if value.is_nan() || value < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(value).unwrap_or(Duration::MAX))
}

/// The start of a body (at most 120 bytes, cut on a character boundary),
/// for error messages about a reply that could not be read.
pub fn snippet(body: &[u8]) -> String {
    let mut end = body.len().min(120);
    while end > 0 && end < body.len() && (body[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    String::from_utf8_lossy(&body[..end]).into_owned()
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    REQUEST_ID_HEADERS
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()).map(str::to_owned))
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.insert(*name, value);
            }
        }
        map
    }

    #[test]
    fn provider_messages_of_every_shape_are_kept() {
        let openai = br#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(
            provider_message(openai),
            "invalid_request_error: Incorrect API key provided"
        );
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#;
        assert_eq!(provider_message(anthropic), "overloaded_error: Overloaded");
        let gemini = br#"[{"error":{"code":404,"message":"model not found","status":"NOT_FOUND"}}]"#;
        assert_eq!(provider_message(gemini), "NOT_FOUND: model not found");
        assert_eq!(
            provider_message(br#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(provider_message(b"Bad Gateway"), "Bad Gateway");
    }

    #[test]
    fn statuses_map_to_kinds_and_retryability() {
        assert_eq!(kind_for_status(StatusCode::UNAUTHORIZED), LlmErrorKind::Auth);
        assert_eq!(
            kind_for_status(StatusCode::TOO_MANY_REQUESTS),
            LlmErrorKind::RateLimited
        );
        assert_eq!(
            kind_for_status(StatusCode::from_u16(529).unwrap_or_default()),
            LlmErrorKind::Overloaded
        );
        assert_eq!(kind_for_status(StatusCode::NOT_FOUND), LlmErrorKind::InvalidRequest);
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(
                is_retryable_status(StatusCode::from_u16(status).unwrap_or_default()),
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(
                !is_retryable_status(StatusCode::from_u16(status).unwrap_or_default()),
                "{status}"
            );
        }
    }

    #[test]
    fn context_length_errors_are_recognised() {
        let body = br#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error"}}"#;
        let error = classify_response("openai", StatusCode::BAD_REQUEST, &HeaderMap::new(), body, None);
        assert_eq!(error.kind, LlmErrorKind::ContextLength);
    }

    #[test]
    fn auth_errors_carry_the_hint_and_the_request_id() {
        let error = classify_response(
            "openai",
            StatusCode::UNAUTHORIZED,
            &headers(&[("x-request-id", "req_123")]),
            br#"{"error":{"message":"bad key"}}"#,
            Some("set OPENAI_API_KEY"),
        );
        assert_eq!(error.kind, LlmErrorKind::Auth);
        assert_eq!(error.request_id.as_deref(), Some("req_123"));
        assert_eq!(
            error.to_string(),
            "openai: authentication failed (HTTP 401): bad key (set OPENAI_API_KEY) [request id req_123]"
        );
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]), now),
            Some(Duration::from_millis(1500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &later)]), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)]), now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn huge_retry_after_values_saturate_and_nonsense_is_ignored() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for huge in ["99999999999999999999999", "1e300", "inf"] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", huge)]), now),
                Some(Duration::MAX),
                "{huge}"
            );
            assert_eq!(
                retry_after(&headers(&[("retry-after-ms", huge)]), now),
                Some(Duration::MAX),
                "{huge} ms"
            );
        }
        for nonsense in ["-5", "NaN", "-inf"] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", nonsense)]), now),
                None,
                "{nonsense}"
            );
        }
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "-1"), ("retry-after", "3")]), now),
            Some(Duration::from_secs(3)),
            "an unusable retry-after-ms falls back to Retry-After"
        );
        let far = httpdate::fmt_http_date(now + Duration::from_secs(86_400 * 365));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &far)]), now),
            Some(Duration::from_secs(86_400 * 365))
        );
        let body =
            br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1e400s"}]}}"#;
        let error = classify_response("g", StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), body, None);
        assert!(
            error
                .retry_after()
                .is_some_and(|wait| wait > Duration::from_secs(1 << 40))
        );
    }

    #[test]
    fn a_google_retry_info_gives_the_delay_when_no_header_does() {
        let body = br#"{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED",
            "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},
                       {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
        let error = classify_response(
            "gcp.gemini",
            StatusCode::TOO_MANY_REQUESTS,
            &HeaderMap::new(),
            body,
            None,
        );
        assert_eq!(error.retry_after(), Some(Duration::from_millis(1500)));
        let header_wins = classify_response(
            "gcp.gemini",
            StatusCode::TOO_MANY_REQUESTS,
            &headers(&[("retry-after", "4")]),
            body,
            None,
        );
        assert_eq!(header_wins.retry_after(), Some(Duration::from_secs(4)));
    }

    #[test]
    fn a_request_id_in_the_body_is_kept_when_no_header_has_one() {
        let body =
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"},"request_id":"req_011CX"}"#;
        let error = classify_response("anthropic", StatusCode::BAD_REQUEST, &HeaderMap::new(), body, None);
        assert_eq!(error.request_id.as_deref(), Some("req_011CX"));
        let header_wins = classify_response(
            "anthropic",
            StatusCode::BAD_REQUEST,
            &headers(&[("request-id", "req_h")]),
            body,
            None,
        );
        assert_eq!(header_wins.request_id.as_deref(), Some("req_h"));
    }

    #[test]
    fn x_should_retry_is_read_as_a_yes_or_no() {
        assert_eq!(should_retry_header(&headers(&[("x-should-retry", "true")])), Some(true));
        assert_eq!(
            should_retry_header(&headers(&[("x-should-retry", "false")])),
            Some(false)
        );
        assert_eq!(should_retry_header(&headers(&[("x-should-retry", "maybe")])), None);
        assert_eq!(should_retry_header(&HeaderMap::new()), None);
    }

    #[test]
    fn snippets_cut_on_character_boundaries() {
        let text = "é".repeat(100);
        let cut = snippet(text.as_bytes());
        assert!(cut.len() <= 120 && !cut.contains('\u{FFFD}'), "{cut}");
        assert_eq!(snippet(b"short"), "short");
    }
}
