//! The HTTP contract every remote provider keeps (agent-testing's
//! `http_contract`), run on `GeminiClient` with Google's own error shapes
//! and recorded replies.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::{LlmError, LlmErrorKind};
use agent_provider_gemini::{GeminiClient, GeminiConfig};
use agent_testing::http_contract::{ClientSetup, ContractClient, HttpContract, RecordedReplies};
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use common::interaction;
use serde_json::{Value, json};

fn make_client(setup: &ClientSetup<'_>) -> Result<Arc<dyn ContractClient>, LlmError> {
    let mut config = GeminiConfig::new("gemini-2.5-flash").with_base_url(setup.server);
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config.headers.extend(setup.owned_headers());
    Ok(Arc::new(GeminiClient::with_env(config, setup.env)?))
}

/// Google's error body: `{"error": {"code", "message", "status"}}`.
fn error_body(status: u16, message: &str) -> Value {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}

fn stream_error(message: &str) -> (Vec<u8>, LlmErrorKind) {
    let body = common::sse_from(&[
        json!({"candidates": [{"content": {"parts": [{"text": "test"}], "role": "model"}}]}),
        json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}}),
    ]);
    (body, LlmErrorKind::Server)
}

fn contract() -> HttpContract {
    HttpContract {
        provider: "gcp.gemini",
        key_env: "GEMINI_API_KEY",
        key_header: ("x-goog-api-key", ""),
        path: "/v1beta/models/gemini-2.5-flash:generateContent".into(),
        stream_content_type: "text/event-stream",
        make_client,
        error_body,
        stream_error,
    }
}

fn replies(gemini: &Wire) -> RecordedReplies {
    let completion = interaction(gemini, "Chats_Tests_sendMessage_Google_AI_with_config_0").body();
    let parsed: Value = serde_json::from_slice(&completion).unwrap();
    let text: String = parsed["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect();
    let stream = interaction(
        gemini,
        "AFC_Streaming_Tests_chat_stream_AFC_enabled_AFC_max_calls_exceeded_Google_AI_can_continue_after_max_calls_exceeded_0",
    )
    .sse();
    // Past the call's name (which follows its args), inside its signature.
    let cut = String::from_utf8_lossy(&stream).find("thoughtSignature").unwrap() + 40;
    RecordedReplies {
        completion: (completion, text),
        tool_stream: stream,
        cut_inside_call: cut,
        cut_call: "customDivide".into(),
        decode: |body| common::decode_sse(&[body]),
    }
}

agent_testing::http_contract_tests! {
    contract: contract(),
    replies: replies(&require_wire!("gemini")),
}
