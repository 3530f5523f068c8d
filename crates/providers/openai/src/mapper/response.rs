//! Chat Completions response body -> `ChatResponse`.

use agent_core::{AssistantMessage, ChatResponse, LlmError, ReasoningBlock, ToolCall};
use agent_http::error::snippet;
use serde::Deserialize;
use serde_json::Value;

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};

use super::wire::{FinishReason, First, Indexed, LenientStr, WireText, WireUsage, error_from_object, stop_reason};

/// Reads a (non-streamed) Chat Completions response.
///
/// The first choice (index 0) is the answer; text, tool calls (arguments
/// parsed from their JSON string; malformed text kept raw in
/// [`ToolCall::raw_arguments`]), `reasoning_content`, refusals (returned as
/// the text, with [`StopReason::ContentFilter`](agent_core::StopReason::ContentFilter)),
/// `finish_reason` and usage are mapped. An `{"error": …}` body becomes the
/// matching [`LlmError`]; anything else unreadable is a decode error.
pub fn parse_response(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let wire: WireResponse<'_> = serde_json::from_slice(body).map_err(|error| {
        LlmError::decode(format!(
            "the response is not a Chat Completions object ({error}); it starts with {:?}",
            snippet(body)
        ))
    })?;
    if let Some(error) = wire.error.as_ref().filter(|error| !error.is_null()) {
        return Err(error_from_object(body, error));
    }
    let WireResponse {
        id,
        model,
        choices,
        usage,
        error: _,
    } = wire;
    let choice = choices
        .0
        .ok_or_else(|| LlmError::decode("the response has no choices"))?;
    let message = choice.message.unwrap_or_default();

    let mut content = message.content.0.map(std::borrow::Cow::into_owned).unwrap_or_default();
    let refusal = message.refusal.text().map(str::to_owned);
    let refused = refusal.is_some();
    if let Some(refusal) = refusal {
        if content.is_empty() {
            content = refusal;
        } else {
            content.push('\n');
            content.push_str(&refusal);
        }
    }

    let mut tool_calls = message.tool_calls.0;
    if tool_calls.is_empty()
        && let Some(function) = message.function_call
    {
        tool_calls.push(to_tool_call(None, function, 0));
    }

    let reasoning = message
        .reasoning_content
        .non_empty()
        .or(message.reasoning.non_empty())
        .map(|text| ReasoningBlock {
            text: text.to_owned(),
            ..ReasoningBlock::default()
        })
        .into_iter()
        .collect();

    Ok(ChatResponse {
        stop_reason: stop_reason(choice.finish_reason, !tool_calls.is_empty(), refused),
        message: AssistantMessage {
            content,
            tool_calls,
            reasoning,
        },
        usage: usage.map(|usage| usage.to_usage()).unwrap_or_default(),
        model: model.unwrap_or_default(),
        id: id.filter(|id| !id.is_empty()),
        route: None,
    })
}

fn to_tool_call(id: Option<String>, function: WireFunction, position: usize) -> ToolCall {
    let id = id
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("call_{position}"));
    let ReplyArguments(arguments, raw_arguments) = function.arguments.unwrap_or_default();
    let mut call = ToolCall::new(id, function.name.unwrap_or_default(), arguments);
    call.raw_arguments = raw_arguments;
    call
}

/// A reply's call arguments, read as they are decoded: a JSON string is
/// parsed right there (an escaped one is never copied out first), an
/// object taken as it is; missing or `null` is no arguments. What is not
/// JSON is kept as raw text ([`ToolCall::parse_arguments`]).
struct ReplyArguments(Value, Option<String>);

impl Default for ReplyArguments {
    fn default() -> Self {
        Self(Value::Object(serde_json::Map::new()), None)
    }
}

impl<'de> Deserialize<'de> for ReplyArguments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArgumentsVisitor;

        impl<'de> serde::de::Visitor<'de> for ArgumentsVisitor {
            type Value = ReplyArguments;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("tool-call arguments as a JSON string or object")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                let (arguments, raw) = ToolCall::parse_arguments(text);
                Ok(ReplyArguments(arguments, raw))
            }

            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(ReplyArguments::default())
            }

            fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                self.visit_unit()
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|value| ReplyArguments(value, None))
            }
        }

        deserializer.deserialize_any(ArgumentsVisitor)
    }
}

#[derive(Deserialize)]
struct WireResponse<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default, borrow)]
    choices: First<WireChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default, borrow)]
    message: Option<WireMessage<'a>>,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

impl Indexed for WireChoice<'_> {
    const FALLBACK: bool = true;

    fn index(&self) -> u32 {
        self.index.unwrap_or(0)
    }
}

#[derive(Default, Deserialize)]
struct WireMessage<'a> {
    #[serde(default, borrow)]
    content: WireText<'a>,
    #[serde(default, borrow)]
    refusal: WireText<'a>,
    #[serde(default)]
    tool_calls: ToolCalls,
    /// The legacy single `function_call`.
    #[serde(default)]
    function_call: Option<WireFunction>,
    /// DeepSeek / vLLM reasoning text.
    #[serde(default, borrow)]
    reasoning_content: LenientStr<'a>,
    /// The newer vLLM / OpenRouter name of the same thing.
    #[serde(default, borrow)]
    reasoning: LenientStr<'a>,
}

/// `tool_calls`, mapped to [`ToolCall`]s as they are read.
#[derive(Default)]
struct ToolCalls(Vec<ToolCall>);

impl<'de> Deserialize<'de> for ToolCalls {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CallsVisitor;

        impl<'de> Visitor<'de> for CallsVisitor {
            type Value = ToolCalls;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of tool calls")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ToolCalls(Vec::new()))
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ToolCalls(Vec::new()))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut calls = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                let mut position = 0;
                while let Some(call) = seq.next_element::<WireToolCall>()? {
                    // Calls of other kinds (custom tools) carry no `function`.
                    if let Some(function) = call.function {
                        calls.push(to_tool_call(call.id, function, position));
                    }
                    position += 1;
                }
                Ok(ToolCalls(calls))
            }
        }

        deserializer.deserialize_any(CallsVisitor)
    }
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<ReplyArguments>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{LlmErrorKind, StopReason, Usage};
    use serde_json::json;

    use super::*;

    fn parse(value: &Value) -> Result<ChatResponse, LlmError> {
        parse_response(value.to_string().as_bytes())
    }

    fn completion(message: &Value, finish_reason: &str) -> Value {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}
        })
    }

    #[test]
    fn text_usage_model_and_id_are_mapped() {
        let response = parse(&completion(&json!({"role": "assistant", "content": "Hi!"}), "stop")).unwrap();
        assert_eq!(response.message.content, "Hi!");
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(response.usage, Usage::new(10, 4));
        assert_eq!(response.model, "gpt-4o");
        assert_eq!(response.id.as_deref(), Some("chatcmpl-1"));
    }

    #[test]
    fn malformed_arguments_are_kept_raw_and_do_not_fail_the_response() {
        let message = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Par"}},
            {"id": "call_b", "type": "function", "function": {"name": "now", "arguments": ""}}
        ]});
        let response = parse(&completion(&message, "tool_calls")).unwrap();
        let calls = &response.message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, Value::Null);
        assert_eq!(calls[0].raw_arguments.as_deref(), Some("{\"location\": \"Par"));
        assert_eq!(calls[1].arguments, json!({}));
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn refusals_become_text_with_a_content_filter_stop() {
        let message = json!({"role": "assistant", "content": null, "refusal": "I can't help with that."});
        let response = parse(&completion(&message, "stop")).unwrap();
        assert_eq!(response.message.content, "I can't help with that.");
        assert_eq!(response.stop_reason, StopReason::ContentFilter);
    }

    #[test]
    fn reasoning_content_is_kept_as_a_block() {
        let message = json!({"role": "assistant", "content": "4", "reasoning_content": "2+2 is 4"});
        let response = parse(&completion(&message, "stop")).unwrap();
        assert_eq!(response.message.reasoning.len(), 1);
        assert_eq!(response.message.reasoning[0].text, "2+2 is 4");
        let message = json!({"role": "assistant", "content": "4", "reasoning": "newer name"});
        let response = parse(&completion(&message, "stop")).unwrap();
        assert_eq!(response.message.reasoning[0].text, "newer name");
    }

    #[test]
    fn the_choice_with_index_zero_is_used() {
        let body = json!({"model": "m", "choices": [
            {"index": 1, "message": {"role": "assistant", "content": "second"}, "finish_reason": "stop"},
            {"index": 0, "message": {"role": "assistant", "content": "first"}, "finish_reason": "length"}
        ]});
        let response = parse(&body).unwrap();
        assert_eq!(response.message.content, "first");
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
    }

    #[test]
    fn compatible_server_quirks_are_tolerated() {
        // Arguments as an object, no call id, tool calls under "stop".
        let message = json!({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
        ]});
        let response = parse(&completion(&message, "stop")).unwrap();
        assert_eq!(response.message.tool_calls[0].id, "call_0");
        assert_eq!(response.message.tool_calls[0].arguments, json!({"a": 1, "b": 2}));
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        // The legacy function_call.
        let message = json!({"role": "assistant", "content": null,
            "function_call": {"name": "add", "arguments": "{\"a\":1}"}});
        let response = parse(&completion(&message, "function_call")).unwrap();
        assert_eq!(response.message.tool_calls[0].name, "add");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn error_bodies_and_garbage_are_errors() {
        let error =
            parse(&json!({"error": {"message": "Invalid model", "type": "invalid_request_error"}})).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
        assert!(error.message.contains("Invalid model"));
        let error = parse_response(b"<html>Bad gateway</html>").unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(error.message.contains("<html>Bad gateway"));
        let error = parse(&json!({"id": "x", "choices": []})).unwrap_err();
        assert!(error.message.contains("no choices"));
    }
}
