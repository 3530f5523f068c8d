//! Shared by the integration tests: the canonical conversations with
//! Ollama's options, and the stream decoding the client does. The official
//! Ollama examples in ../shared/wire/ollama (read in place, never copied)
//! come from `agent_testing::require_wire!("ollama/docs_examples")` in each
//! test that reads them.
#![allow(dead_code, clippy::unwrap_used)]

use agent_core::{ChatRequest, ChatResponse, LlmError, StreamAccumulator, StreamEvent};
use agent_http::ndjson::NdjsonDecoder;
use agent_provider_ollama::mapper::{StreamMapper, build_request_body};
use agent_provider_ollama::{BodyOptions, KeepAlive, Think};
use serde_json::{Value, json};

/// The canonical conversations with the options Ollama sends them with,
/// plus Ollama-only variants: snapshot name, request, options.
pub fn canonical_requests() -> Vec<(String, ChatRequest, BodyOptions)> {
    let options = BodyOptions::new("llama3.2");
    let mut requests: Vec<(String, ChatRequest, BodyOptions)> = agent_testing::canonical::conversations()
        .into_iter()
        .map(|(name, request)| (name.to_owned(), request, options.clone()))
        .collect();
    let configured = BodyOptions {
        num_ctx: Some(8192),
        keep_alive: Some(KeepAlive::Duration("10m".into())),
        think: Some(Think::Level("low".into())),
        extra_options: [("seed".to_owned(), json!(7)), ("temperature".to_owned(), json!(1.5))]
            .into_iter()
            .collect(),
        ..BodyOptions::new("qwen3").streaming()
    };
    requests.push((
        "streamed_with_configured_options".to_owned(),
        agent_testing::canonical::conversation("system_prompt").unwrap(),
        configured,
    ));
    requests
}

/// The body as JSON (keys in wire order).
pub fn body_json(request: &ChatRequest, options: &BodyOptions) -> Value {
    serde_json::from_slice(&build_request_body(request, options).unwrap()).unwrap()
}

/// Decodes a whole NDJSON body, fed in the given pieces, through the line
/// splitter and the [`StreamMapper`], as the client does.
pub fn decode_ndjson(pieces: &[&[u8]]) -> Result<Vec<StreamEvent>, LlmError> {
    let mut events = Vec::new();
    agent_http::decode_body(
        &mut NdjsonDecoder::new(),
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

/// A streamed reply with text, thinking, two tool calls and the final line,
/// written for these tests in the documented line format.
pub fn tool_call_stream() -> Vec<u8> {
    let lines = [
        r#"{"model":"qwen3","created_at":"2025-07-07T20:22:19.1Z","message":{"role":"assistant","content":"","thinking":"Two cities, "},"done":false}"#,
        r#"{"model":"qwen3","created_at":"2025-07-07T20:22:19.2Z","message":{"role":"assistant","content":"","thinking":"two calls."},"done":false}"#,
        r#"{"model":"qwen3","created_at":"2025-07-07T20:22:19.3Z","message":{"role":"assistant","content":"Checking ☀️ "},"done":false}"#,
        r#"{"model":"qwen3","created_at":"2025-07-07T20:22:19.4Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}}},{"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}}]},"done":false}"#,
        r#"{"model":"qwen3","created_at":"2025-07-07T20:22:19.5Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":182242375,"prompt_eval_count":169,"eval_count":31}"#,
    ];
    let mut body = lines.join("\n");
    body.push('\n');
    body.into_bytes()
}
