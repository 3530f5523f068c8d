//! Wire types shared by whole responses and stream chunks: usage, finish
//! reasons, tool-call arguments, error objects.

use std::borrow::Cow;
use std::fmt;

use agent_core::{LlmError, LlmErrorKind, StopReason, Usage};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// `usage` of a response or of the final stream chunk.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek reports cache hits here instead of `prompt_tokens_details`.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Normalised usage: `prompt_tokens` already counts cached tokens, so it
    /// is the input total; cached and reasoning tokens are reported apart.
    pub(crate) fn to_usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0);
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|details| details.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// `finish_reason`, read without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    FunctionCall,
    ContentFilter,
    /// Anything else a compatible server invents (`eos`, `end_turn`, …).
    #[serde(other)]
    Other,
}

/// Maps a finish reason (or its absence) to a [`StopReason`], given what
/// else the reply held. Tool calls under a plain `stop` (some compatible
/// servers say so) still mean the model wants tools; a refusal is a
/// content-filter stop.
pub(crate) fn stop_reason(finish: Option<FinishReason>, has_tool_calls: bool, refused: bool) -> StopReason {
    match finish {
        Some(FinishReason::Length) => StopReason::MaxTokens,
        Some(FinishReason::ContentFilter) => StopReason::ContentFilter,
        _ if refused => StopReason::ContentFilter,
        Some(FinishReason::ToolCalls | FinishReason::FunctionCall) => StopReason::ToolUse,
        _ if has_tool_calls => StopReason::ToolUse,
        Some(FinishReason::Stop | FinishReason::Other) | None => StopReason::EndTurn,
    }
}

/// Tool-call arguments: a JSON string per the spec, or (from a few
/// compatible servers) the object itself.
#[derive(Debug)]
pub(crate) enum WireArguments<'a> {
    Text(Cow<'a, str>),
    /// Rare, so boxed to keep the common variant small.
    Json(Box<Value>),
}

impl WireArguments<'_> {
    pub(crate) fn as_text(&self) -> Cow<'_, str> {
        match self {
            Self::Text(text) => Cow::Borrowed(text),
            Self::Json(value) => Cow::Owned(value.to_string()),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for WireArguments<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArgumentsVisitor;

        impl<'de> Visitor<'de> for ArgumentsVisitor {
            type Value = WireArguments<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("tool-call arguments as a JSON string or object")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(WireArguments::Text(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(WireArguments::Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(WireArguments::Text(Cow::Owned(text)))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(WireArguments::Text(Cow::Borrowed("")))
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                self.visit_unit()
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|value| WireArguments::Json(Box::new(value)))
            }
        }

        deserializer.deserialize_any(ArgumentsVisitor)
    }
}

pub(crate) use agent_http::LenientStr;

/// Message text: a string, `null`, or (from a few compatible servers) an
/// array of content parts whose `text` parts are joined.
#[derive(Debug, Default)]
pub(crate) struct WireText<'a>(pub(crate) Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for WireText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = WireText<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("message content as a string, null or an array of parts")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(WireText(Some(Cow::Borrowed(text))))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(WireText(Some(Cow::Owned(text.to_owned()))))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(WireText(Some(Cow::Owned(text))))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(WireText(None))
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(WireText(None))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut joined: Option<String> = None;
                while let Some(part) = seq.next_element::<ContentPart<'de>>()? {
                    let is_text = part.kind.as_deref().is_none_or(|kind| kind == "text");
                    if let (true, Some(text)) = (is_text, part.text.0) {
                        joined.get_or_insert_with(String::new).push_str(&text);
                    }
                }
                Ok(WireText(joined.map(Cow::Owned)))
            }
        }

        deserializer.deserialize_any(TextVisitor)
    }
}

impl WireText<'_> {
    /// The text, when there is some.
    pub(crate) fn text(&self) -> Option<&str> {
        self.0.as_deref().filter(|text| !text.is_empty())
    }
}

#[derive(Deserialize)]
struct ContentPart<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: LenientStr<'a>,
}

/// A choice of a response or chunk, which says its `index`.
pub(crate) trait Indexed {
    /// Whether the first choice stands in when none has index 0 (true for
    /// whole responses; false for stream chunks, where a chunk may carry
    /// only another choice's delta).
    const FALLBACK: bool;

    /// The choice's index (0 when the server leaves it out).
    fn index(&self) -> u32;
}

/// The choice with index 0 out of a `choices` array, read without
/// collecting the array (with `n > 1` the others are alternatives we do not use).
pub(crate) struct First<T>(pub(crate) Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de> + Indexed> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChoicesVisitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de> + Indexed> Visitor<'de> for ChoicesVisitor<T> {
            type Value = First<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(First(None))
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(First(None))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut first: Option<T> = None;
                let mut fallback: Option<T> = None;
                while let Some(choice) = seq.next_element::<T>()? {
                    if first.is_none() && choice.index() == 0 {
                        first = Some(choice);
                    } else if T::FALLBACK && fallback.is_none() {
                        fallback = Some(choice);
                    }
                }
                Ok(First(first.or(fallback)))
            }
        }

        deserializer.deserialize_any(ChoicesVisitor(std::marker::PhantomData))
    }
}

/// Turns an `{"error": {...}}` object (in a 200 body or inside a stream) into
/// an [`LlmError`], keeping the provider's own words.
pub(crate) fn error_from_object(raw: &[u8], error: &Value) -> LlmError {
    let message = agent_http::error::provider_message(raw);
    let label = |key: &str| {
        error
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    let (kind_label, code_label) = (label("type"), label("code"));
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .or_else(|| error.get("status").and_then(Value::as_u64));
    let has = |needle: &str| kind_label.contains(needle) || code_label.contains(needle);
    let kind = if has("context_length") || message.to_ascii_lowercase().contains("maximum context length") {
        LlmErrorKind::ContextLength
    } else if has("rate_limit") || has("quota") || status == Some(429) {
        LlmErrorKind::RateLimited
    } else if has("auth") || has("api_key") || has("permission") || matches!(status, Some(401 | 403)) {
        LlmErrorKind::Auth
    } else if has("overloaded") || has("unavailable") || matches!(status, Some(503 | 529)) {
        LlmErrorKind::Overloaded
    } else if has("timeout") {
        LlmErrorKind::Timeout
    } else if has("invalid_request") || matches!(status, Some(400..=499)) {
        LlmErrorKind::InvalidRequest
    } else {
        LlmErrorKind::Server
    };
    LlmError::new(kind, message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_cached_tokens_inside_the_input() {
        let usage: WireUsage = serde_json::from_str(
            r#"{"prompt_tokens":1200,"completion_tokens":300,"total_tokens":1500,
                "prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},
                "completion_tokens_details":{"reasoning_tokens":256}}"#,
        )
        .unwrap();
        assert_eq!(
            usage.to_usage(),
            Usage {
                input_tokens: 1200,
                output_tokens: 300,
                cache_read_tokens: 1024,
                cache_write_tokens: 0,
                reasoning_tokens: 256,
            }
        );
        let deepseek: WireUsage =
            serde_json::from_str(r#"{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":8}"#).unwrap();
        assert_eq!(deepseek.to_usage().cache_read_tokens, 8);
        let nulls: WireUsage = serde_json::from_str(
            r#"{"prompt_tokens":null,"completion_tokens":3,"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":null}}"#,
        )
        .unwrap();
        assert_eq!(nulls.to_usage(), Usage::new(0, 3));
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        let parse = |text: &str| serde_json::from_str::<FinishReason>(text).unwrap();
        assert_eq!(
            stop_reason(Some(parse(r#""tool_calls""#)), true, false),
            StopReason::ToolUse
        );
        assert_eq!(
            stop_reason(Some(parse(r#""function_call""#)), false, false),
            StopReason::ToolUse
        );
        assert_eq!(stop_reason(Some(parse(r#""stop""#)), false, false), StopReason::EndTurn);
        assert_eq!(stop_reason(Some(parse(r#""stop""#)), true, false), StopReason::ToolUse);
        assert_eq!(
            stop_reason(Some(parse(r#""length""#)), true, false),
            StopReason::MaxTokens
        );
        assert_eq!(
            stop_reason(Some(parse(r#""content_filter""#)), false, false),
            StopReason::ContentFilter
        );
        assert_eq!(
            stop_reason(Some(parse(r#""stop""#)), false, true),
            StopReason::ContentFilter
        );
        assert_eq!(stop_reason(Some(parse(r#""eos""#)), false, false), StopReason::EndTurn);
        assert_eq!(stop_reason(None, false, false), StopReason::EndTurn);
    }

    #[test]
    fn arguments_are_strings_or_objects() {
        let text: WireArguments<'_> = serde_json::from_str(r#""{\"a\":1}""#).unwrap();
        assert_eq!(text.as_text(), r#"{"a":1}"#);
        let object: WireArguments<'_> = serde_json::from_str(r#"{"a":1}"#).unwrap();
        assert_eq!(object.as_text(), r#"{"a":1}"#);
        let null: WireArguments<'_> = serde_json::from_str("null").unwrap();
        assert_eq!(null.as_text(), "");
    }

    #[test]
    fn content_is_a_string_null_or_text_parts() {
        let text: WireText<'_> = serde_json::from_str(r#""hi""#).unwrap();
        assert_eq!(text.text(), Some("hi"));
        let null: WireText<'_> = serde_json::from_str("null").unwrap();
        assert_eq!(null.text(), None);
        let parts: WireText<'_> = serde_json::from_str(
            r#"[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]},{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]"#,
        )
        .unwrap();
        assert_eq!(parts.text(), Some("Hello"));
    }

    #[test]
    fn lenient_strings_ignore_other_shapes() {
        let text: LenientStr<'_> = serde_json::from_str(r#""thinking""#).unwrap();
        assert_eq!(text.non_empty(), Some("thinking"));
        for other in ["null", "1", "true", "[1,2]", r#"{"effort":"high"}"#, r#""""#] {
            let value: LenientStr<'_> = serde_json::from_str(other).unwrap();
            assert_eq!(value.non_empty(), None, "{other}");
        }
    }

    #[test]
    fn error_objects_are_classified() {
        let classify = |raw: &str| {
            let value: Value = serde_json::from_str(raw).unwrap();
            error_from_object(raw.as_bytes(), &value["error"])
        };
        let error =
            classify(r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#);
        assert_eq!(error.kind, LlmErrorKind::RateLimited);
        assert!(error.message.contains("Rate limit reached"));
        let error = classify(r#"{"error":{"message":"The server had an error","type":"server_error"}}"#);
        assert_eq!(error.kind, LlmErrorKind::Server);
        let error = classify(r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#);
        assert_eq!(error.kind, LlmErrorKind::ContextLength);
        let error = classify(r#"{"error":{"message":"bad","type":"invalid_request_error"}}"#);
        assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
        let error = classify(r#"{"error":{"message":"Overloaded","code":503}}"#);
        assert_eq!(error.kind, LlmErrorKind::Overloaded);
    }
}
