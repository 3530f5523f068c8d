//! What the real-model tests share.

#![allow(dead_code)]

use agent_core::{CancellationToken, ChatRequest, ChatResponse, LlmClient, ToolDefinition};
use agent_provider_llama::models::{DEFAULT_MODEL, ModelStore, known_model};
use agent_provider_llama::{LlamaClient, LlamaConfig};
use serde_json::json;

/// The embedded model loaded with `config`, or `None` (after saying why)
/// when it is not fetched; with `AGENTRY_REQUIRE_MODEL` set, as CI sets
/// it, a missing model fails the test instead.
pub fn client_with(config: LlamaConfig) -> Option<LlamaClient> {
    let known = known_model(DEFAULT_MODEL)?;
    if !ModelStore::default_location().is_ready(known) {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_MODEL").is_none(),
            "the model {DEFAULT_MODEL} is not in the store; run `cargo xtask fetch-model`"
        );
        agent_testing::report_skip!("the model is not fetched (run `cargo xtask fetch-model`)");
        return None;
    }
    Some(LlamaClient::load(config).expect("the model loads"))
}

/// `get_weather(city)` and `calculator(expression)`.
pub fn weather_and_calculator() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "get_weather",
            "Current weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        ToolDefinition::new(
            "calculator",
            "Evaluates an arithmetic expression.",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        ),
    ]
}

/// The client's whole reply to `request`, on a runtime of its own.
pub fn reply(client: &LlamaClient, request: &ChatRequest) -> ChatResponse {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(client.complete(request, &CancellationToken::new()))
        .expect("reply")
}
