//! Shared by the integration tests: the canonical conversations with the
//! options Anthropic sends them with, and helpers that decode SSE bodies the
//! way the client does. The official wire examples in
//! ../shared/wire/anthropic (read in place, never copied) come from
//! `agent_testing::require_wire!("anthropic")` in each test that reads them.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

use agent_core::{
    AssistantMessage, ChatRequest, ChatResponse, LlmError, Message, ReasoningBlock, StreamAccumulator, StreamEvent,
    ToolCall, ToolResult,
};
use agent_provider_anthropic::BodyOptions;
use agent_provider_anthropic::mapper::{StreamMapper, build_request_body};
use serde_json::{Value, json};

pub const MODEL: &str = "claude-sonnet-4-5";

#[allow(unused_imports)]
pub use agent_testing::canonical::{parallel_calls_request, weather_tool};
#[allow(unused_imports)]
pub use agent_testing::wire::stem;

/// A signed thinking block, a redacted one and a tool call, as a previous
/// reply with extended thinking held them, then the tool's result.
pub fn thinking_round_trip_request() -> ChatRequest {
    let assistant = AssistantMessage {
        reasoning: vec![
            ReasoningBlock {
                text: "The user wants Paris weather; call the tool.".into(),
                signature: Some("EqQBCkYIARgCIkDsig".into()),
                data: None,
                provider: Some("anthropic".into()),
            },
            ReasoningBlock {
                data: Some(json!({"type": "redacted_thinking", "data": "EmwKAhgBEgyRedacted"})),
                ..ReasoningBlock::default()
            },
        ],
        ..AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("toolu_01A", "get_weather", json!({"city": "Paris"}))],
        )
    };
    ChatRequest {
        max_tokens: Some(8192),
        temperature: Some(0.7),
        ..ChatRequest::new(vec![
            Message::user("Weather in Paris?"),
            Message::Assistant(assistant),
            Message::tool(ToolResult::success("toolu_01A", "get_weather", r#"{"temp_c":18}"#)),
        ])
        .with_system("You are a travel assistant.")
        .with_tools(vec![weather_tool()])
    }
}

/// Every canonical conversation with the options Anthropic sends it with,
/// plus Anthropic-only cases: snapshot name, request, options.
pub fn canonical_requests() -> Vec<(&'static str, ChatRequest, BodyOptions)> {
    let options = BodyOptions::new(MODEL);
    let mut requests: Vec<(&'static str, ChatRequest, BodyOptions)> = agent_testing::canonical::conversations()
        .into_iter()
        .map(|(name, request)| (name, request, options.clone()))
        .collect();
    requests.push((
        "thinking_round_trip",
        thinking_round_trip_request(),
        options.clone().with_thinking(2048),
    ));
    requests.push((
        "prompt_caching_system_only",
        ChatRequest {
            prompt_caching: true,
            ..ChatRequest::new(vec![Message::user("Summarise our refund policy.")])
                .with_system("You answer questions about the shop's policies.")
        },
        options.clone(),
    ));
    requests.push((
        "streamed",
        ChatRequest {
            max_tokens: Some(64),
            ..ChatRequest::new(vec![Message::user("Count to three.")])
        },
        options.streaming(),
    ));
    requests
}

/// The body as JSON (keys in wire order).
pub fn body_json(request: &ChatRequest, options: &BodyOptions) -> Value {
    let bytes = build_request_body(request, options).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The recorded exchanges of a `sdk_recorded/*.json` file.
pub fn exchanges(path: &Path) -> Vec<Value> {
    let value: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    value.as_array().unwrap().clone()
}

/// Decodes a whole SSE body, fed in the given pieces, through the SSE
/// framing and the [`StreamMapper`].
pub fn decode_sse(pieces: &[&[u8]]) -> Result<Vec<StreamEvent>, LlmError> {
    let mut events = Vec::new();
    agent_http::decode_body(
        &mut agent_http::sse::SseDecoder::new(),
        &mut StreamMapper::new(),
        pieces.iter().copied(),
        &mut Vec::new(),
        &mut events,
    )?;
    Ok(events)
}

/// Assembles events into a response.
pub fn assemble(events: &[StreamEvent]) -> Result<ChatResponse, LlmError> {
    let mut accumulator = StreamAccumulator::new();
    for event in events {
        accumulator.push(event.clone())?;
    }
    accumulator.finish()
}

/// An SSE body of these events (`event:` name and `data:` line each).
pub fn sse_body(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        body.push_str("event: ");
        body.push_str(event["type"].as_str().unwrap_or("message"));
        body.push_str("\ndata: ");
        body.push_str(&event.to_string());
        body.push_str("\n\n");
    }
    body
}
