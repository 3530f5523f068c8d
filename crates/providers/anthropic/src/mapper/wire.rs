//! Wire types shared by whole responses and stream events: usage, stop
//! reasons, error objects, lenient strings.

use agent_core::{LlmError, LlmErrorKind, StopReason, Usage};
use serde::Deserialize;
use serde_json::Value;

/// `usage` of a message, of `message_start` or of `message_delta`. Every
/// field is optional: a `message_delta` carries only the keys it updates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    thinking_tokens: Option<u64>,
}

impl WireUsage {
    /// Applies a `message_delta` usage: every key it carries replaces the
    /// value so far, keys it leaves out keep theirs.
    pub(crate) fn merge(&mut self, update: &WireUsage) {
        let take = |ours: &mut Option<u64>, theirs: Option<u64>| {
            if theirs.is_some() {
                *ours = theirs;
            }
        };
        take(&mut self.input_tokens, update.input_tokens);
        take(&mut self.output_tokens, update.output_tokens);
        take(
            &mut self.cache_creation_input_tokens,
            update.cache_creation_input_tokens,
        );
        take(&mut self.cache_read_input_tokens, update.cache_read_input_tokens);
        if let Some(details) = update.output_tokens_details {
            let ours = self.output_tokens_details.get_or_insert_with(OutputDetails::default);
            take(&mut ours.thinking_tokens, details.thinking_tokens);
        }
    }

    /// Normalised usage. Anthropic's `input_tokens` counts only the tokens
    /// after the last cache breakpoint, so the input total is the sum of
    /// `input_tokens`, `cache_creation_input_tokens` and
    /// `cache_read_input_tokens`; the last two are also reported apart.
    pub(crate) fn to_usage(self) -> Usage {
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        let read = self.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + written + read,
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: written,
            reasoning_tokens: self
                .output_tokens_details
                .and_then(|details| details.thinking_tokens)
                .unwrap_or(0),
        }
    }
}

/// Maps a `stop_reason` to a [`StopReason`].
///
/// `refusal` is a content-filter stop; `model_context_window_exceeded` is a
/// token-limit stop like `max_tokens`; `pause_turn` (a long server-tool turn
/// the server paused, which this crate never asks for) and unknown values
/// end the turn. Whatever the reason says, a reply that holds tool calls
/// (other than one cut by a token limit) is a tool-use stop, so the calls
/// get run and every `tool_use` gets its `tool_result`.
pub(crate) fn stop_reason(wire: Option<&str>, has_tool_calls: bool) -> StopReason {
    match wire {
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("refusal") => StopReason::ContentFilter,
        Some("stop_sequence") if !has_tool_calls => StopReason::StopSequence,
        Some("tool_use") => StopReason::ToolUse,
        _ if has_tool_calls => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// Turns an error object (`{"type": "error", "error": {"type", "message"}}`,
/// in a 200 body or as a stream event) into an [`LlmError`] of the matching
/// kind, keeping the provider's own words and request id.
pub(crate) fn error_from_object(raw: &[u8], error: &Value, request_id: Option<&str>) -> LlmError {
    let message = agent_http::error::provider_message(raw);
    let kind_label = error.get("type").and_then(Value::as_str).unwrap_or_default();
    let lower = message.to_ascii_lowercase();
    let kind = if lower.contains("prompt is too long") || lower.contains("context window") {
        LlmErrorKind::ContextLength
    } else {
        match kind_label {
            "overloaded_error" => LlmErrorKind::Overloaded,
            "rate_limit_error" => LlmErrorKind::RateLimited,
            "authentication_error" | "permission_error" => LlmErrorKind::Auth,
            "request_too_large" => LlmErrorKind::ContextLength,
            "timeout_error" => LlmErrorKind::Timeout,
            "invalid_request_error" | "not_found_error" | "billing_error" => LlmErrorKind::InvalidRequest,
            _ => LlmErrorKind::Server,
        }
    };
    let mut llm_error = LlmError::new(kind, message);
    if let Some(id) = request_id.filter(|id| !id.is_empty()) {
        llm_error = llm_error.with_request_id(id);
    }
    llm_error
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn usage(text: &str) -> WireUsage {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn input_tokens_include_cache_reads_and_writes() {
        let wire = usage(
            r#"{"input_tokens":50,"cache_creation_input_tokens":2000,"cache_read_input_tokens":300,
                "cache_creation":{"ephemeral_5m_input_tokens":2000,"ephemeral_1h_input_tokens":0},
                "output_tokens":120,"service_tier":"standard","server_tool_use":{"web_search_requests":1}}"#,
        );
        assert_eq!(
            wire.to_usage(),
            Usage {
                input_tokens: 2350,
                output_tokens: 120,
                cache_read_tokens: 300,
                cache_write_tokens: 2000,
                reasoning_tokens: 0,
            }
        );
        assert_eq!(usage(r#"{"output_tokens":6}"#).to_usage(), Usage::new(0, 6));
        assert_eq!(
            usage(r#"{"input_tokens":null,"output_tokens":3}"#).to_usage(),
            Usage::new(0, 3)
        );
    }

    #[test]
    fn a_delta_replaces_the_keys_it_carries_and_keeps_the_others() {
        let mut start = usage(
            r#"{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":3}"#,
        );
        start.merge(&usage(r#"{"output_tokens":99,"cache_read_input_tokens":8}"#));
        assert_eq!(
            start.to_usage(),
            Usage {
                input_tokens: 20,
                output_tokens: 99,
                cache_read_tokens: 8,
                cache_write_tokens: 2,
                reasoning_tokens: 0
            }
        );
        start.merge(&usage(r#"{"output_tokens_details":{"thinking_tokens":30}}"#));
        assert_eq!(start.to_usage().reasoning_tokens, 30);
    }

    #[test]
    fn stop_reasons_map_and_unknown_ones_do_not_fail() {
        let cases = [
            (Some("end_turn"), false, StopReason::EndTurn),
            (Some("end_turn"), true, StopReason::ToolUse),
            (Some("tool_use"), true, StopReason::ToolUse),
            (Some("max_tokens"), false, StopReason::MaxTokens),
            (Some("max_tokens"), true, StopReason::MaxTokens),
            (Some("model_context_window_exceeded"), false, StopReason::MaxTokens),
            (Some("stop_sequence"), false, StopReason::StopSequence),
            (Some("refusal"), false, StopReason::ContentFilter),
            (Some("pause_turn"), false, StopReason::EndTurn),
            (Some("something_new"), false, StopReason::EndTurn),
            (Some("something_new"), true, StopReason::ToolUse),
            (None, false, StopReason::EndTurn),
        ];
        for (wire, calls, expected) in cases {
            assert_eq!(stop_reason(wire, calls), expected, "{wire:?} with calls: {calls}");
        }
    }

    #[test]
    fn error_objects_are_classified_by_type() {
        let classify = |raw: &str| {
            let value: Value = serde_json::from_str(raw).unwrap();
            error_from_object(raw.as_bytes(), &value["error"], value["request_id"].as_str())
        };
        let error = classify(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert_eq!(error.kind, LlmErrorKind::Overloaded);
        assert_eq!(error.message, "overloaded_error: Overloaded");
        let error = classify(
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":"req_1"}"#,
        );
        assert_eq!(error.kind, LlmErrorKind::RateLimited);
        assert_eq!(error.request_id.as_deref(), Some("req_1"));
        for (label, kind) in [
            ("authentication_error", LlmErrorKind::Auth),
            ("permission_error", LlmErrorKind::Auth),
            ("invalid_request_error", LlmErrorKind::InvalidRequest),
            ("not_found_error", LlmErrorKind::InvalidRequest),
            ("request_too_large", LlmErrorKind::ContextLength),
            ("api_error", LlmErrorKind::Server),
            ("brand_new_error", LlmErrorKind::Server),
        ] {
            let raw = format!(r#"{{"type":"error","error":{{"type":"{label}","message":"m"}}}}"#);
            assert_eq!(classify(&raw).kind, kind, "{label}");
        }
        let error = classify(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        );
        assert_eq!(error.kind, LlmErrorKind::ContextLength);
    }
}
