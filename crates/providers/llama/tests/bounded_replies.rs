//! A reply ends as soon as its calls are complete, on the real embedded
//! model: at the request's `max_tool_calls`, and at the first call that
//! repeats one already answered in the turn, never at `max_tokens`.
//!
//! Needs the model (`cargo xtask fetch-model`); skipped without it unless
//! `AGENTRY_REQUIRE_MODEL` is set.

mod common;

use agent_core::{AssistantMessage, ChatRequest, Message, StopReason, ToolCall, ToolChoice, ToolResult};
use agent_provider_llama::{LlamaClient, LlamaConfig};
use serde_json::json;

/// Room for many calls: a reply that runs on shows it.
const MAX_TOKENS: u32 = 256;

fn client() -> Option<LlamaClient> {
    common::client_with(LlamaConfig {
        context_size: 4096,
        ..LlamaConfig::default()
    })
}

fn request(messages: Vec<Message>) -> ChatRequest {
    let mut request = ChatRequest::new(messages).with_system("You are a helpful assistant. Use the tools.");
    request.tools = common::weather_and_calculator().into();
    request.tool_choice = ToolChoice::Required;
    request.max_tokens = Some(MAX_TOKENS);
    request.temperature = Some(0.0);
    request
}

#[test]
fn a_reply_ends_when_its_calls_reach_the_cap() {
    let Some(client) = client() else { return };
    let mut capped = request(vec![Message::user(
        "Call get_weather four times, one call per line: for Oslo, Rome, Paris and Madrid.",
    )]);
    let uncapped = common::reply(&client, &capped);
    eprintln!("uncapped: {:?}", uncapped.message.tool_calls);
    capped.max_tool_calls = Some(1);
    let response = common::reply(&client, &capped);
    eprintln!("capped: {:?} {:?}", response.message.tool_calls, response.usage);
    assert_eq!(response.message.tool_calls.len(), 1, "{:?}", response.message);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert!(
        response.usage.output_tokens < uncapped.usage.output_tokens.max(2),
        "the capped reply ({} tokens) stopped before the uncapped one ({} tokens, {} calls)",
        response.usage.output_tokens,
        uncapped.usage.output_tokens,
        uncapped.message.tool_calls.len()
    );
}

#[test]
fn a_reply_ends_at_the_first_call_already_answered_in_the_turn() {
    let Some(client) = client() else { return };
    let answered = request(vec![
        Message::user("What's 17 times 23?"),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("c1", "calculator", json!({"expression": "17 * 23"}))],
        )),
        Message::tool(ToolResult::success("c1", "calculator", r#"{"result": 391}"#)),
    ]);
    // A call is required, and the only one the question needs was made: the
    // model writes a repeat, and the reply ends with it.
    let response = common::reply(&client, &answered);
    eprintln!("{:?} {:?}", response.message.tool_calls, response.usage);
    assert_ne!(response.stop_reason, StopReason::MaxTokens, "{:?}", response.message);
    let calls = &response.message.tool_calls;
    let repeats = calls.iter().position(|call| {
        call.name == "calculator"
            && call.arguments["expression"]
                .as_str()
                .is_some_and(|e| e.contains("17") && e.contains("23") || e.trim() == "391")
    });
    assert_eq!(
        repeats,
        Some(calls.len() - 1),
        "the repeat is the reply's last call: {calls:?}"
    );
}
