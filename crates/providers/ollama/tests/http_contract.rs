//! The HTTP contract every remote provider keeps (agent-testing's
//! `http_contract`), run on `OllamaClient` with Ollama's own error shape, a
//! recorded reply from its API docs and a tool-call stream written for
//! these tests. Ollama needs no key; the contract's client names one in
//! `api_key_env`, as a server behind an authenticating proxy does.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::{LlmError, LlmErrorKind};
use agent_http::ApiKeyConfig;
use agent_provider_ollama::{OllamaClient, OllamaConfig};
use agent_testing::http_contract::{ClientSetup, ContractClient, HttpContract, RecordedReplies};
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use serde_json::{Value, json};

const KEY_ENV: &str = "OLLAMA_API_KEY";

fn make_client(setup: &ClientSetup<'_>) -> Result<Arc<dyn ContractClient>, LlmError> {
    let mut config = OllamaConfig::new("llama3.2").with_base_url(setup.server);
    config.key = ApiKeyConfig {
        api_key: None,
        api_key_env: Some(KEY_ENV.into()),
    };
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config.headers.extend(setup.owned_headers());
    Ok(Arc::new(OllamaClient::with_env(config, setup.env)?))
}

/// Ollama's error body: `{"error": "..."}`.
fn error_body(_status: u16, message: &str) -> Value {
    json!({ "error": message })
}

fn stream_error(message: &str) -> (Vec<u8>, LlmErrorKind) {
    let text = json!({"model": "m", "message": {"role": "assistant", "content": "Yes"}, "done": false});
    let error = json!({ "error": message });
    (format!("{text}\n{error}\n").into_bytes(), LlmErrorKind::Server)
}

fn contract() -> HttpContract {
    HttpContract {
        provider: "ollama",
        key_env: KEY_ENV,
        key_header: ("authorization", "Bearer "),
        path: "/api/chat".into(),
        stream_content_type: "application/x-ndjson",
        make_client,
        error_body,
        stream_error,
    }
}

fn replies(examples: &Wire) -> RecordedReplies {
    let completion = examples.bytes("api_md_chat_request_no_streaming.response.json");
    let parsed: Value = serde_json::from_slice(&completion).unwrap();
    let text = parsed["message"]["content"].as_str().unwrap().to_owned();
    let stream = common::tool_call_stream();
    // Inside the arguments of the second call.
    let cut = String::from_utf8_lossy(&stream).find("\"Tokyo\"").unwrap();
    RecordedReplies {
        completion: (completion, text),
        tool_stream: stream,
        cut_inside_call: cut,
        cut_call: "get_weather".into(),
        decode: |body| common::decode_ndjson(&[body]),
    }
}

agent_testing::http_contract_tests! {
    contract: contract(),
    replies: replies(&require_wire!("ollama/docs_examples")),
}
