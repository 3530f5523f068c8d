//! The HTTP contract every remote provider keeps (agent-testing's
//! `http_contract`), run on `AnthropicClient` with Anthropic's own error
//! shapes and recorded replies.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::{LlmError, LlmErrorKind};
use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
use agent_testing::http_contract::{ClientSetup, ContractClient, HttpContract, RecordedReplies};
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use serde_json::{Value, json};

fn make_client(setup: &ClientSetup<'_>) -> Result<Arc<dyn ContractClient>, LlmError> {
    let mut config = AnthropicConfig::new("claude-sonnet-4-5");
    setup.server.clone_into(&mut config.base_url);
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config.headers.extend(setup.owned_headers());
    Ok(Arc::new(AnthropicClient::with_env(config, setup.env)?))
}

/// Anthropic's error body: `{"type": "error", "error": {"type", "message"}}`.
fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_contract"})
}

fn stream_error(message: &str) -> (Vec<u8>, LlmErrorKind) {
    let body = common::sse_body(&[
        json!({"type": "message_start", "message": {"id": "msg_e", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
    ]);
    let error = json!({"type": "error", "error": {"type": "api_error", "message": message}});
    let body = format!("{body}event: error\ndata: {error}\n\n");
    (body.into_bytes(), LlmErrorKind::Server)
}

fn contract() -> HttpContract {
    HttpContract {
        provider: "anthropic",
        key_env: "ANTHROPIC_API_KEY",
        key_header: ("x-api-key", ""),
        path: "/v1/messages".into(),
        stream_content_type: "text/event-stream",
        make_client,
        error_body,
        stream_error,
    }
}

fn replies(anthropic: &Wire) -> RecordedReplies {
    let exchange = anthropic.json("sdk_recorded/python_tool_runner_tool_use_then_tool_result_weather_c__a8ac789b.json");
    let completion = &exchange[1]["response"]["body"];
    let text = completion["content"][0]["text"].as_str().unwrap().to_owned();
    let stream = anthropic.text("sdk_fixtures/python_stream_tool_use_response.sse");
    // The events up to the `on": "P` fragment of the call's arguments.
    let inside = stream.find("on\\\": \\\"P").unwrap();
    let cut = inside + stream[inside..].find("\n\n").unwrap() + 2;
    RecordedReplies {
        completion: (completion.to_string().into_bytes(), text),
        tool_stream: stream.into_bytes(),
        cut_inside_call: cut,
        cut_call: "get_weather".into(),
        decode: |body| common::decode_sse(&[body]),
    }
}

agent_testing::http_contract_tests! {
    contract: contract(),
    replies: replies(&require_wire!("anthropic")),
}
