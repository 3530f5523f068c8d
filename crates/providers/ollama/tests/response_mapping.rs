//! Every documented Ollama reply and stream mapped and snapshotted, and the
//! streamed and whole mappings of one reply compared.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{LlmErrorKind, StopReason, Usage};
use agent_provider_ollama::mapper::parse_response;
use agent_testing::require_wire;
use agent_testing::wire::stem;
use common::{assemble, decode_ndjson, tool_call_stream};

#[test]
fn every_documented_reply_maps_to_its_snapshot() {
    let examples = require_wire!("ollama/docs_examples");
    let files = examples.files("", ".response.json");
    assert_eq!(files.len(), 6, "the documented replies");
    for path in files {
        let name = stem(&path, ".response.json");
        let response = parse_response(&std::fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        insta::assert_json_snapshot!(format!("response_{name}"), response);
    }
}

#[test]
fn every_documented_chat_stream_maps_to_its_snapshot() {
    let examples = require_wire!("ollama/docs_examples");
    let files = examples.files("", ".response_documented_chunks.jsonl");
    assert_eq!(files.len(), 3, "the documented chat streams");
    for path in files {
        let name = stem(&path, ".response_documented_chunks.jsonl");
        let body = std::fs::read(&path).unwrap();
        let events = decode_ndjson(&[&body]).unwrap_or_else(|e| panic!("{name}: {e}"));
        insta::assert_json_snapshot!(format!("stream_{name}"), events);
    }
}

#[test]
fn the_documented_midstream_error_is_a_server_error_with_ollamas_message() {
    let examples = require_wire!("ollama/docs_examples");
    // The example is an /api/generate stream (`response`, not `message`):
    // its lines carry no chat text, and the error line ends it.
    let error = decode_ndjson(&[&examples.bytes("errors_mdx_midstream_error.ndjson")]).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Server);
    assert_eq!(error.message, "an error was encountered while running the model");
}

#[test]
fn the_documented_error_body_is_an_error_with_ollamas_message() {
    let examples = require_wire!("ollama/docs_examples");
    let error = parse_response(&examples.bytes("errors_mdx_error_body.json")).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Server);
    assert_eq!(error.message, "the model failed to generate a response");
}

#[test]
fn the_documented_generate_stream_ends_with_its_done_line() {
    let examples = require_wire!("ollama/docs_examples");
    // /api/generate lines have no `message`: nothing to show, but the
    // framing, `done` and `done_reason` are the same as /api/chat's.
    let events = decode_ndjson(&[&examples.bytes("streaming_mdx_generate_stream.ndjson")]).unwrap();
    let response = assemble(&events).unwrap();
    assert_eq!(response.model, "gemma4");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}

#[test]
fn a_documented_tool_call_reply_has_object_arguments_a_stable_id_and_tool_use() {
    let examples = require_wire!("ollama/docs_examples");
    let body = examples.bytes("api_md_chat_request_with_tools.response.json");
    let first = parse_response(&body).unwrap();
    let second = parse_response(&body).unwrap();
    let call = &first.message.tool_calls[0];
    assert_eq!(call.name, "get_current_weather");
    assert_eq!(
        call.arguments,
        serde_json::json!({"format": "celsius", "location": "Paris, FR"})
    );
    assert_eq!(call.id, second.message.tool_calls[0].id, "the same reply, the same id");
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert_eq!(first.usage, Usage::new(122, 33));
}

#[test]
fn streamed_and_whole_replies_give_the_same_response() {
    let events = decode_ndjson(&[&tool_call_stream()]).unwrap();
    insta::assert_json_snapshot!("stream_tool_calls_with_thinking", events);
    let streamed = assemble(&events).unwrap();

    // The same reply as one object, as `stream: false` returns it (the
    // timestamp of the tool-call line, which the ids derive from).
    let whole = serde_json::json!({
        "model": "qwen3",
        "created_at": "2025-07-07T20:22:19.4Z",
        "message": {
            "role": "assistant",
            "content": "Checking ☀️ ",
            "thinking": "Two cities, two calls.",
            "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}},
                {"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}
            ]
        },
        "done_reason": "stop",
        "done": true,
        "prompt_eval_count": 169,
        "eval_count": 31
    });
    let whole = parse_response(&serde_json::to_vec(&whole).unwrap()).unwrap();
    assert_eq!(streamed, whole);
    assert_eq!(streamed.usage, Usage::new(169, 31));
}

#[test]
fn server_ids_are_kept_and_string_arguments_are_parsed() {
    let body = br#"{"model":"m","message":{"role":"assistant","content":"","tool_calls":[
        {"id":"call_srv","function":{"name":"f","arguments":"{\"a\":1}"}},
        {"function":{"name":"g","arguments":"not json"}},
        {"function":{"name":"h"}}]},"done":true,"done_reason":"stop"}"#;
    let response = parse_response(body).unwrap();
    let calls = &response.message.tool_calls;
    assert_eq!(calls[0].id, "call_srv");
    assert_eq!(calls[0].arguments, serde_json::json!({"a": 1}));
    assert_eq!(calls[1].raw_arguments.as_deref(), Some("not json"));
    assert_eq!(calls[2].arguments, serde_json::json!({}));
    let ids: std::collections::HashSet<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids.len(), 3);
}

#[test]
fn unfinished_or_garbled_replies_are_decode_errors() {
    let unfinished = parse_response(br#"{"model":"m","message":{"content":"The"},"done":false}"#).unwrap_err();
    assert_eq!(unfinished.kind, LlmErrorKind::Decode);
    assert!(unfinished.message.contains("done"), "{unfinished}");
    let garbled = parse_response(b"<html>proxy error</html>").unwrap_err();
    assert_eq!(garbled.kind, LlmErrorKind::Decode);
    assert!(garbled.message.contains("<html>proxy error"), "{garbled}");
}

#[test]
fn length_is_max_tokens() {
    let body = br#"{"model":"m","message":{"content":"The sky is"},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":3}"#;
    assert_eq!(parse_response(body).unwrap().stop_reason, StopReason::MaxTokens);
}
