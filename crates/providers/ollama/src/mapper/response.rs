//! `/api/chat` response body -> `ChatResponse`.

use agent_core::{AssistantMessage, ChatResponse, LlmError};

use super::wire::{WireChunk, reasoning, stop_reason, tool_call};

/// Reads a non-streamed `/api/chat` reply.
///
/// Tool calls get the server's id or a synthesised stable one (see
/// [`StreamMapper`](super::StreamMapper), which gives the same ids); their
/// arguments are the object Ollama sends. `thinking` becomes a reasoning
/// block. `done_reason: "length"` is [`MaxTokens`](agent_core::StopReason::MaxTokens);
/// a reply with tool calls stops with `ToolUse`. An `{"error": ...}` body
/// (Ollama sends some with status 200) is an error with Ollama's message.
pub fn parse_response(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let text =
        std::str::from_utf8(body).map_err(|error| LlmError::decode(format!("Ollama's reply is not UTF-8: {error}")))?;
    let chunk = WireChunk::parse(text)?;
    if let Some(error) = chunk.error() {
        return Err(error);
    }
    if !chunk.done {
        return Err(LlmError::decode(
            "Ollama's reply is not finished (`done` is false): was a streamed reply read as a whole?",
        ));
    }
    let usage = chunk.usage();
    let created_at = chunk.created_at.as_deref();
    let mut message = AssistantMessage::default();
    if let Some(wire) = chunk.message {
        message.content = wire.content.map(Into::into).unwrap_or_default();
        if let Some(thinking) = wire.thinking.filter(|thinking| !thinking.is_empty()) {
            message.reasoning.push(reasoning(&thinking));
        }
        message.tool_calls = wire
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(index, call)| tool_call(call, created_at, index))
            .collect();
    }
    let stop_reason = stop_reason(chunk.done_reason.as_deref(), !message.tool_calls.is_empty());
    Ok(ChatResponse {
        message,
        stop_reason,
        usage,
        model: chunk.model.map(Into::into).unwrap_or_default(),
        id: None,
        route: None,
    })
}
