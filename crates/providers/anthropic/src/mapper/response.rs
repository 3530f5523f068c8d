//! Messages API response body -> `ChatResponse`.

use agent_core::{AssistantMessage, ChatResponse, LlmError, ReasoningBlock, ToolCall};
use serde::Deserialize;
use serde_json::{Value, json};

use agent_http::LenientStr;

use agent_http::error::snippet;

use super::wire::{WireUsage, error_from_object, stop_reason};

/// Reads a (non-streamed) Messages API response.
///
/// - `text` blocks are joined into the message text;
/// - `tool_use` blocks become [`ToolCall`]s (`input` as the arguments);
/// - `thinking` blocks become [`ReasoningBlock`]s with text and signature,
///   `redacted_thinking` blocks a [`ReasoningBlock`] whose `data` is the
///   whole block (`{"type": "redacted_thinking", "data": …}`), so that the
///   request mapper can send both back unchanged;
/// - other block types (`server_tool_use`, `web_search_tool_result`, and
///   whatever Anthropic adds) are skipped: they belong to server-side tools
///   this crate never enables, and the history stays valid without them;
/// - `stop_reason` and usage are mapped (input tokens include cache reads
///   and writes).
///
/// An error object (`{"type": "error", …}`) becomes the matching
/// [`LlmError`]; anything else that is not a message is a decode error.
pub fn parse_response(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let wire: WireMessage<'_> = serde_json::from_slice(body).map_err(|error| {
        LlmError::decode(format!(
            "the response is not a Messages API object ({error}); it starts with {:?}",
            snippet(body)
        ))
    })?;
    if let Some(error) = wire.error.as_ref().filter(|error| !error.is_null()) {
        return Err(error_from_object(body, error, wire.request_id.as_deref()));
    }
    let Some(content) = wire.content else {
        return Err(LlmError::decode(format!(
            "the response has no `content`; it starts with {:?}",
            snippet(body)
        )));
    };
    let mut message = AssistantMessage::default();
    for block in content {
        map_block(block, &mut message);
    }
    Ok(ChatResponse {
        stop_reason: stop_reason(wire.stop_reason.as_str(), !message.tool_calls.is_empty()),
        message,
        usage: wire.usage.map(WireUsage::to_usage).unwrap_or_default(),
        model: wire.model.0.map(std::borrow::Cow::into_owned).unwrap_or_default(),
        id: wire.id.non_empty().map(str::to_owned),
        route: None,
    })
}

/// Appends what one content block says to `message`.
fn map_block(mut block: Value, message: &mut AssistantMessage) {
    let text = |block: &mut Value, key: &str| match block.get_mut(key).map(Value::take) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    };
    match block.get("type").and_then(Value::as_str).unwrap_or_default() {
        "text" => {
            if let Some(text) = text(&mut block, "text") {
                message.content.push_str(&text);
            }
        }
        "thinking" => message.reasoning.push(ReasoningBlock {
            text: text(&mut block, "thinking").unwrap_or_default(),
            signature: text(&mut block, "signature").filter(|signature| !signature.is_empty()),
            data: None,
            provider: None,
        }),
        "redacted_thinking" => {
            if let Some(data) = text(&mut block, "data") {
                message.reasoning.push(redacted_block(data));
            }
        }
        "tool_use" => {
            let position = message.tool_calls.len();
            let id = text(&mut block, "id")
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("toolu_{position}"));
            let name = text(&mut block, "name").unwrap_or_default();
            let arguments = match block.get_mut("input").map(Value::take) {
                None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
                Some(input) => input,
            };
            message.tool_calls.push(ToolCall::new(id, name, arguments));
        }
        _ => {}
    }
}

/// The [`ReasoningBlock`] that stands for a `redacted_thinking` block.
pub(crate) fn redacted_block(data: impl Into<String>) -> ReasoningBlock {
    ReasoningBlock {
        data: Some(json!({"type": "redacted_thinking", "data": data.into()})),
        ..ReasoningBlock::default()
    }
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(default, borrow)]
    id: LenientStr<'a>,
    #[serde(default, borrow)]
    model: LenientStr<'a>,
    #[serde(default)]
    content: Option<Vec<Value>>,
    #[serde(default, borrow)]
    stop_reason: LenientStr<'a>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    request_id: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{LlmErrorKind, StopReason, Usage};

    use super::*;

    fn parse(value: &Value) -> Result<ChatResponse, LlmError> {
        parse_response(value.to_string().as_bytes())
    }

    fn message(content: &Value, stop_reason: &str) -> Value {
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": content, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 4}
        })
    }

    #[test]
    fn text_blocks_are_joined_and_unknown_blocks_skipped() {
        let response = parse(&message(
            &json!([
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result"}]},
                {"type": "text", "text": "It is ", "citations": [{"type": "web_search_result_location"}]},
                {"type": "text", "text": "sunny."},
                {"type": "brand_new_block", "text": {"unexpected": "shape"}}
            ]),
            "end_turn",
        ))
        .unwrap();
        assert_eq!(response.message.content, "It is sunny.");
        assert!(response.message.tool_calls.is_empty() && response.message.reasoning.is_empty());
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(response.usage, Usage::new(10, 4));
        assert_eq!(response.id.as_deref(), Some("msg_1"));
        assert_eq!(response.model, "claude-sonnet-4-5-20250929");
    }

    #[test]
    fn thinking_tool_use_and_redacted_thinking_are_kept() {
        let response = parse(&message(
            &json!([
                {"type": "thinking", "thinking": "Paris first.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "EmwKAhgB"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "", "name": "now"}
            ]),
            "tool_use",
        ))
        .unwrap();
        let reasoning = &response.message.reasoning;
        assert_eq!(reasoning[0].text, "Paris first.");
        assert_eq!(reasoning[0].signature.as_deref(), Some("sig-1"));
        assert_eq!(
            reasoning[1].data,
            Some(json!({"type": "redacted_thinking", "data": "EmwKAhgB"}))
        );
        let calls = &response.message.tool_calls;
        assert_eq!(
            calls[0],
            ToolCall::new("toolu_01A", "get_weather", json!({"city": "Paris"}))
        );
        assert_eq!(
            calls[1],
            ToolCall::new("toolu_1", "now", json!({})),
            "a missing id is synthesised"
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn error_bodies_and_garbage_are_errors() {
        let error = parse(
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                                  "request_id": "req_9"}),
        )
        .unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Overloaded);
        assert_eq!(error.request_id.as_deref(), Some("req_9"));
        let error = parse_response(b"<html>Bad gateway</html>").unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(error.message.contains("<html>Bad gateway"), "{error}");
        let error = parse(&json!({"id": "x"})).unwrap_err();
        assert!(error.message.contains("no `content`"), "{error}");
    }
}
