//! The HTTP contract every remote provider keeps (agent-testing's
//! `http_contract`), run on `OpenAiClient` (the OpenAI variant) with
//! OpenAI's own error shapes and recorded replies.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::{LlmError, LlmErrorKind};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use agent_testing::http_contract::{ClientSetup, ContractClient, HttpContract, RecordedReplies};
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use serde_json::{Value, json};

fn make_client(setup: &ClientSetup<'_>) -> Result<Arc<dyn ContractClient>, LlmError> {
    let mut config = OpenAiConfig::openai("gpt-4o-mini");
    config.base_url = Some(format!("{}/v1", setup.server));
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config.headers.extend(setup.owned_headers());
    Ok(Arc::new(OpenAiClient::with_env(config, setup.env)?))
}

/// OpenAI's error body: `{"error": {"message", "type", "code"}}`.
fn error_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        400 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

fn stream_error(message: &str) -> (Vec<u8>, LlmErrorKind) {
    let text =
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]});
    let error = json!({"error": {"message": message, "type": "server_error"}});
    (
        format!("data: {text}\n\ndata: {error}\n\n").into_bytes(),
        LlmErrorKind::Server,
    )
}

fn contract() -> HttpContract {
    HttpContract {
        provider: "openai",
        key_env: "OPENAI_API_KEY",
        key_header: ("authorization", "Bearer "),
        path: "/v1/chat/completions".into(),
        stream_content_type: "text/event-stream",
        make_client,
        error_body,
        stream_error,
    }
}

fn replies(openai: &Wire) -> RecordedReplies {
    let completion = openai.bytes("reference_examples/default.response.json");
    let parsed: Value = serde_json::from_slice(&completion).unwrap();
    let text = parsed["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    let stream = openai.text("sdk_recorded/python_stream_parallel_tool_calls.sse");
    // The chunks up to the first fragment of the second call's arguments.
    let inside = stream.find("{\\\"ti").unwrap();
    let cut = inside + stream[inside..].find("\n\n").unwrap() + 2;
    RecordedReplies {
        completion: (completion, text),
        tool_stream: stream.into_bytes(),
        cut_inside_call: cut,
        cut_call: "get_stock_price".into(),
        decode: |body| common::decode_sse(&[body]),
    }
}

agent_testing::http_contract_tests! {
    contract: contract(),
    replies: replies(&require_wire!("openai")),
}
