//! Every recorded response and stream in ../shared/wire/anthropic, mapped
//! and snapshotted, plus explicit checks of what they must show.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{ChatResponse, LlmErrorKind, ReasoningBlock, StopReason, StreamEvent, ToolCall, Usage};
use agent_provider_anthropic::mapper::{EventMapper, StreamMapper, parse_response};
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use common::{assemble, decode_sse, exchanges, sse_body, stem};
use serde_json::{Value, json};

fn parse(body: &Value) -> ChatResponse {
    parse_response(body.to_string().as_bytes()).unwrap_or_else(|error| panic!("{error}: {body}"))
}

fn streamed(anthropic: &Wire, relative: &str) -> ChatResponse {
    let body = anthropic.bytes(relative);
    let events = decode_sse(&[&body]).unwrap_or_else(|error| panic!("{relative}: {error}"));
    assemble(&events).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

fn recorded_response(anthropic: &Wire, file: &str, exchange: usize) -> ChatResponse {
    let recording = anthropic.json(&format!("sdk_recorded/{file}.json"));
    parse(&recording[exchange]["response"]["body"])
}

/// Maps every Messages response of every recorded exchange. Error bodies
/// are checked to map to the error their status means (the client sees
/// them through `classify_response`, see tests/http.rs); streamed bodies
/// are the `.exchangeN.sse` files mapped below.
#[test]
fn every_recorded_message_response_maps_to_its_snapshot() {
    let anthropic = require_wire!("anthropic");
    let (mut messages, mut errors, mut streams) = (0, 0, 0);
    for path in anthropic.files("sdk_recorded", ".json") {
        let name = stem(&path, ".json");
        if name.starts_with("typescript_ToolRunner") {
            continue;
        }
        for (position, exchange) in exchanges(&path).iter().enumerate() {
            let body = &exchange["response"]["body"];
            let status = exchange["response"]["status_code"].as_u64().unwrap();
            match body["type"].as_str() {
                Some("message") => {
                    insta::assert_json_snapshot!(format!("response_{name}_{position}"), parse(body));
                    messages += 1;
                }
                Some("error") => {
                    let error = parse_response(body.to_string().as_bytes()).unwrap_err();
                    let expected = match status {
                        429 => LlmErrorKind::RateLimited,
                        400 => LlmErrorKind::InvalidRequest,
                        other => panic!("{name}: an error body with status {other} the test does not expect"),
                    };
                    assert_eq!(error.kind, expected, "{name} #{position}");
                    assert!(error.request_id.is_some(), "{name} #{position}: {error:?}");
                    errors += 1;
                }
                _ => {
                    assert!(
                        body.is_string(),
                        "{name} #{position}: a body that is neither a message nor an error"
                    );
                    let sse = path.with_file_name(format!("{name}.exchange{position}.sse"));
                    assert!(sse.exists(), "{} is mapped by the stream tests", sse.display());
                    streams += 1;
                }
            }
        }
    }
    assert_eq!((messages, errors, streams), (21, 5, 6));
}

#[test]
fn every_tool_runner_recording_response_maps_to_its_snapshot() {
    let anthropic = require_wire!("anthropic");
    let recording = anthropic.json("sdk_recorded/typescript_ToolRunner.nock.json");
    let entries = recording.as_array().unwrap();
    assert_eq!(entries.len(), 10);
    for (position, entry) in entries.iter().enumerate() {
        assert_eq!(entry["status"], 200);
        insta::assert_json_snapshot!(
            format!("response_typescript_ToolRunner_{position}"),
            parse(&entry["response"])
        );
    }
    let parallel = parse(&entries[2]["response"]);
    assert_eq!(parallel.stop_reason, StopReason::ToolUse);
    assert_eq!(
        parallel.message.tool_calls,
        [
            ToolCall::new("toolu_01L8GVQapA1HmggQcrwboukH", "test_tool", json!({"count": 1})),
            ToolCall::new("toolu_01J5Fvzxu7DP1Uh59c1kr5JD", "test_tool", json!({"count": 2})),
        ]
    );
    assert_eq!(
        parallel.message.content,
        "I'll use the test_tool twice as requested - first with count 1, then with count 2."
    );
}

#[test]
fn every_stream_maps_to_its_snapshot_events_or_typed_error() {
    let anthropic = require_wire!("anthropic");
    let mut seen = 0;
    for dir in ["sdk_fixtures", "sdk_recorded"] {
        for path in anthropic.files(dir, ".sse") {
            let name = stem(&path, ".sse");
            let body = std::fs::read(&path).unwrap();
            match decode_sse(&[&body]) {
                Ok(events) => {
                    assemble(&events).unwrap_or_else(|error| panic!("{name}: {error}"));
                    insta::assert_json_snapshot!(format!("stream_events_{name}"), events);
                }
                Err(error) => insta::assert_json_snapshot!(format!("stream_error_{name}"), error),
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 14);
}

#[test]
fn the_overloaded_error_event_is_a_typed_error_with_the_providers_message() {
    let anthropic = require_wire!("anthropic");
    let body = anthropic.bytes("sdk_fixtures/python_stream_error_event_overloaded.sse");
    let error = decode_sse(&[&body]).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Overloaded);
    assert!(error.is_retryable());
    assert_eq!(
        error.message,
        "the stream reported an error: overloaded_error: Overloaded"
    );
}

#[test]
fn the_tool_use_stream_assembles_text_and_a_call() {
    let anthropic = require_wire!("anthropic");
    let response = streamed(&anthropic, "sdk_fixtures/python_stream_tool_use_response.sse");
    assert_eq!(
        response.message.content,
        "I'll check the current weather in Paris for you."
    );
    assert_eq!(
        response.message.tool_calls,
        [ToolCall::new(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "get_weather",
            json!({"location": "Paris"})
        )]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage, Usage::new(377, 65));
    assert_eq!(response.model, "claude-sonnet-4-20250514");
    assert_eq!(response.id.as_deref(), Some("msg_019Q1hrJbZG26Fb9BQhrkHEr"));
}

#[test]
fn recorded_stream_edge_cases_map_as_documented() {
    let anthropic = require_wire!("anthropic");
    // A tool call cut by max_tokens ends at message_stop and keeps its text raw.
    let cut = streamed(
        &anthropic,
        "sdk_fixtures/python_stream_incomplete_partial_json_response.sse",
    );
    assert_eq!(cut.stop_reason, StopReason::MaxTokens);
    let call = &cut.message.tool_calls[0];
    assert_eq!(call.name, "make_file");
    assert_eq!(call.arguments, Value::Null);
    assert!(
        call.raw_arguments
            .as_deref()
            .unwrap()
            .starts_with("{\"filename\": \"taxes.txt\""),
        "{call:?}"
    );
    assert!(cut.message.content.ends_with("Let me do that for you now."));

    let refusal = streamed(&anthropic, "sdk_fixtures/python_stream_refusal_response.sse");
    assert_eq!(refusal.stop_reason, StopReason::ContentFilter);
    assert_eq!(refusal.message.content, "");

    // Unknown block types (compaction, fallback) are skipped; the text stays.
    for file in [
        "python_stream_compaction_response",
        "python_stream_fallback_response",
        "python_stream_fallback_credit_response",
        "python_stream_basic_response",
    ] {
        let response = streamed(&anthropic, &format!("sdk_fixtures/{file}.sse"));
        assert_eq!(response.message.content, "Hello there!", "{file}");
        assert!(response.message.reasoning.is_empty() && response.message.tool_calls.is_empty());
        assert_eq!(response.stop_reason, StopReason::EndTurn);
    }

    let structured = streamed(
        &anthropic,
        "sdk_recorded/python_beta_stream_structured_output__9381e2b7.exchange0.sse",
    );
    assert_eq!(structured.message.content, "[12345,67890]");
    assert_eq!(structured.usage, Usage::new(135, 10));
}

#[test]
fn message_delta_usage_replaces_the_start_values_key_by_key() {
    let anthropic = require_wire!("anthropic");
    let fixture = anthropic.json("sdk_fixtures/typescript_stream_usage_merge.events.json");
    let mut mapper = StreamMapper::new();
    let mut events = Vec::new();
    for event in fixture["events"].as_array().unwrap() {
        mapper.push(&event.to_string(), &mut events).unwrap();
    }
    mapper.finish(&mut events).unwrap();
    let response = assemble(&events).unwrap();
    let expected = &fixture["expected_final_usage_subset"];
    let count = |key: &str| expected[key].as_u64().unwrap();
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: count("input_tokens")
                + count("cache_creation_input_tokens")
                + count("cache_read_input_tokens"),
            output_tokens: count("output_tokens"),
            cache_read_tokens: count("cache_read_input_tokens"),
            cache_write_tokens: count("cache_creation_input_tokens"),
            reasoning_tokens: expected["output_tokens_details"]["thinking_tokens"].as_u64().unwrap(),
        }
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 57,
            output_tokens: 99,
            cache_read_tokens: 8,
            cache_write_tokens: 7,
            reasoning_tokens: 30
        }
    );
    assert_eq!(response.message.content, "Done.");
}

#[test]
fn server_tool_blocks_are_skipped_and_client_tool_calls_kept() {
    let anthropic = require_wire!("anthropic");
    let search = recorded_response(&anthropic, "python_web_search_server_tool_single_turn__32da0815", 0);
    assert!(search.message.tool_calls.is_empty());
    assert_eq!(search.stop_reason, StopReason::EndTurn);
    assert!(
        search.message.content.contains("San Francisco"),
        "{}",
        search.message.content
    );
    assert_eq!(search.usage, Usage::new(11306, 163));

    let mixed = recorded_response(
        &anthropic,
        "python_tool_runner_server_tool_use_and_tool_use_then_tool_result__092be1de",
        0,
    );
    assert_eq!(
        mixed.message.content,
        "I'll check the weather for all three cities in Celsius simultaneously."
    );
    assert_eq!(
        mixed.message.tool_calls,
        [ToolCall::new(
            "toolu_011MDRpaZRMRRjtFkJizD6nS",
            "get_weather",
            json!({"location": "San Francisco, CA", "units": "c"})
        )]
    );
    assert_eq!(mixed.stop_reason, StopReason::ToolUse);
}

/// One reply with thinking, text, a tool call and cache usage, written both
/// as a complete body and as the stream that would deliver it: both map to
/// the same response, usage included.
#[test]
fn streamed_and_complete_forms_of_one_reply_map_identically() {
    let usage_start = json!({"input_tokens": 12, "cache_creation_input_tokens": 1500, "cache_read_input_tokens": 0, "output_tokens": 1});
    let complete = json!({
        "id": "msg_same", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "thinking", "thinking": "Need the weather.", "signature": "EqQBsig"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_same", "name": "get_weather", "input": {"city": "Paris"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 1500, "cache_read_input_tokens": 0, "output_tokens": 48}
    });
    let stream = sse_body(&[
        json!({"type": "message_start", "message": {"id": "msg_same", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": null, "usage": usage_start}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need the "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "weather."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBsig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Let me check."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_same", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 48}}),
        json!({"type": "message_stop"}),
    ]);
    let from_body = parse(&complete);
    let from_stream = assemble(&decode_sse(&[stream.as_bytes()]).unwrap()).unwrap();
    assert_eq!(from_stream, from_body);
    assert_eq!(
        from_body.usage,
        Usage {
            input_tokens: 1512,
            output_tokens: 48,
            cache_write_tokens: 1500,
            ..Usage::default()
        }
    );
    assert_eq!(
        from_body.message.reasoning,
        [ReasoningBlock {
            text: "Need the weather.".into(),
            signature: Some("EqQBsig".into()),
            data: None,
            provider: None
        }]
    );
}

#[test]
fn the_streamed_tool_runner_recording_starts_with_the_model_and_ends_with_usage_and_stop() {
    let anthropic = require_wire!("anthropic");
    let body = anthropic
        .bytes("sdk_recorded/python_tool_runner_streaming_tool_use_then_tool_result_a__555fb399.exchange0.sse");
    let events = decode_sse(&[&body]).unwrap();
    assert_eq!(
        events[0],
        StreamEvent::Started {
            model: Some("claude-haiku-4-5-20251001".into()),
            id: Some("msg_01AusY9WEbCaj3N7Tv5J4YjH".into())
        }
    );
    let tail: Vec<StreamEvent> = events.iter().rev().take(3).rev().cloned().collect();
    assert_eq!(
        tail,
        [
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::Usage {
                usage: Usage::new(656, 74)
            },
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            }
        ]
    );
    let response = assemble(&events).unwrap();
    assert_eq!(
        response.message.tool_calls[0].arguments,
        json!({"location": "San Francisco, CA", "units": "f"})
    );
}
