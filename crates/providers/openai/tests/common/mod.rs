//! Shared by the integration tests: the canonical conversations whose
//! request bodies are snapshotted and schema-checked, and the stream
//! decoding the client does. The official wire examples in
//! ../shared/wire/openai (read in place, never copied) come from
//! `agent_testing::require_wire!("openai")` in each test that reads them.
#![allow(dead_code, unused_imports, clippy::unwrap_used)]

use agent_core::{ChatRequest, Message};
use agent_provider_openai::mapper::EventMapper as _;
use agent_provider_openai::{BodyOptions, MaxTokensField, SystemRole};
use serde_json::Value;

pub use agent_testing::canonical::{multi_turn_request, parallel_calls_request, weather_tool};
use agent_testing::wire::Wire;
pub use agent_testing::wire::stem;
use serde_json::json;

/// The official schema, with the root pointing at the request schema.
pub fn request_validator(openai: &Wire) -> jsonschema::Validator {
    let mut document = openai.json("chat_completions_subset.openapi.json");
    document["$ref"] = json!("#/components/schemas/CreateChatCompletionRequest");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&document)
        .unwrap_or_else(|error| panic!("the OpenAPI document does not compile as a JSON Schema: {error}"))
}

/// Where `body` breaks the schema, one line each.
pub fn schema_errors(validator: &jsonschema::Validator, body: &Value) -> Vec<String> {
    validator
        .iter_errors(body)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect()
}

/// The shared canonical conversations with the options OpenAI sends them
/// with, plus OpenAI-only variants: snapshot name, request, options.
pub fn canonical_requests() -> Vec<(&'static str, ChatRequest, BodyOptions)> {
    let options = BodyOptions::new("gpt-4o-mini");
    let mut requests: Vec<(&'static str, ChatRequest, BodyOptions)> = agent_testing::canonical::conversations()
        .into_iter()
        .map(|(name, request)| match name {
            "multi_turn" => (
                "multi_turn_developer_role",
                request,
                BodyOptions {
                    system_role: SystemRole::Developer,
                    ..BodyOptions::new("o3-mini")
                },
            ),
            "max_tokens_required_tool" => (
                "compatible_server_max_tokens",
                request,
                BodyOptions {
                    max_tokens_field: MaxTokensField::MaxTokens,
                    ..BodyOptions::new("qwen2.5-7b-instruct")
                },
            ),
            other => (other, request, options.clone()),
        })
        .collect();
    requests.push((
        "streamed_with_usage",
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
    let bytes = agent_provider_openai::mapper::build_request_body(request, options).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Decodes a whole SSE body, fed in the given pieces, through the SSE
/// framing and the [`StreamMapper`](agent_provider_openai::mapper::StreamMapper).
pub fn decode_sse(pieces: &[&[u8]]) -> Result<Vec<agent_core::StreamEvent>, agent_core::LlmError> {
    let mut events = Vec::new();
    agent_http::decode_body(
        &mut agent_http::sse::SseDecoder::new(),
        &mut agent_provider_openai::mapper::StreamMapper::new(),
        pieces.iter().copied(),
        &mut Vec::new(),
        &mut events,
    )?;
    Ok(events)
}

/// Assembles events into a response.
pub fn assemble(events: &[agent_core::StreamEvent]) -> Result<agent_core::ChatResponse, agent_core::LlmError> {
    let mut accumulator = agent_core::StreamAccumulator::new();
    for event in events {
        accumulator.push(event.clone())?;
    }
    accumulator.finish()
}
