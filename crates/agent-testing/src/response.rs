//! Builders for [`ChatResponse`]s, so tests read like scripts.

use agent_core::{AssistantMessage, ChatResponse, StopReason, ToolCall, Usage};
use serde_json::Value;

/// A final text answer with a small default usage (10 in, 5 out).
pub fn text(content: impl Into<String>) -> ChatResponse {
    ChatResponse {
        message: AssistantMessage::text(content),
        stop_reason: StopReason::EndTurn,
        usage: Usage::new(10, 5),
        model: "scripted-model".into(),
        id: None,
        route: None,
    }
}

/// A turn that calls the given tools, with ids `call_1`, `call_2`, ... in order.
pub fn tool_calls<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> ChatResponse {
    let calls = calls
        .into_iter()
        .enumerate()
        .map(|(index, (name, arguments))| ToolCall::new(format!("call_{}", index + 1), name, arguments))
        .collect();
    with_calls("", calls)
}

/// A turn with text followed by these exact tool calls.
pub fn with_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> ChatResponse {
    ChatResponse {
        message: AssistantMessage::with_tool_calls(content, calls),
        stop_reason: StopReason::ToolUse,
        usage: Usage::new(10, 5),
        model: "scripted-model".into(),
        id: None,
        route: None,
    }
}

/// Replaces a response's usage.
pub fn with_usage(mut response: ChatResponse, usage: Usage) -> ChatResponse {
    response.usage = usage;
    response
}
