//! Every example response and recorded stream in ../shared/wire/openai,
//! mapped and snapshotted, plus explicit checks of what they must show.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{ChatResponse, StopReason, StreamEvent, Usage};
use agent_provider_openai::mapper::{EventMapper, StreamMapper, parse_response};
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use common::{assemble, decode_sse, stem};
use serde_json::json;

fn response(openai: &Wire, relative: &str) -> ChatResponse {
    parse_response(&openai.bytes(relative)).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

fn streamed(openai: &Wire, relative: &str) -> ChatResponse {
    let body = openai.bytes(relative);
    let events = decode_sse(&[&body]).unwrap_or_else(|error| panic!("{relative}: {error}"));
    assemble(&events).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

#[test]
fn every_example_response_maps_to_its_snapshot() {
    let openai = require_wire!("openai");
    let mut seen = 0;
    for dir in ["reference_examples", "sdk_recorded"] {
        for path in openai.files(dir, ".response.json") {
            let name = stem(&path, ".response.json");
            let mapped = parse_response(&std::fs::read(&path).unwrap())
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            insta::assert_json_snapshot!(format!("response_{dir}_{name}"), mapped);
            seen += 1;
        }
    }
    assert!(seen >= 18, "only {seen} example responses found");
}

#[test]
fn every_recorded_stream_assembles_to_its_snapshot() {
    let openai = require_wire!("openai");
    let mut seen = 0;
    for path in openai.files("sdk_recorded", ".sse") {
        let name = stem(&path, ".sse");
        let body = std::fs::read(&path).unwrap();
        let events = decode_sse(&[&body]).unwrap_or_else(|error| panic!("{name}: {error}"));
        let assembled = assemble(&events).unwrap_or_else(|error| panic!("{name}: {error}"));
        insta::assert_json_snapshot!(format!("stream_{name}"), assembled);
        seen += 1;
    }
    assert!(seen >= 13, "only {seen} recorded streams found");
}

/// `streaming.response_chunks.jsonl` holds the chunks of OpenAI's reference
/// streaming example, one JSON object per line, without SSE framing and
/// without `[DONE]`. The reference elides the middle of the stream, so only
/// the first, one text and the final chunk are there, and its request did
/// not ask for usage: the assembled reply is "Hello" with empty usage.
#[test]
fn the_reference_jsonl_stream_assembles_from_its_chunks() {
    let openai = require_wire!("openai");
    let body = openai.text("reference_examples/streaming.response_chunks.jsonl");
    let mut mapper = StreamMapper::new();
    let mut events = Vec::new();
    for line in body.lines().filter(|line| !line.trim().is_empty()) {
        mapper.push(line, &mut events).unwrap();
    }
    mapper.finish(&mut events).unwrap();
    let assembled = assemble(&events).unwrap();
    assert_eq!(assembled.message.content, "Hello");
    assert_eq!(assembled.stop_reason, StopReason::EndTurn);
    assert!(assembled.usage.is_empty());
    insta::assert_json_snapshot!("stream_reference_streaming_jsonl", assembled);
}

#[test]
fn the_parallel_tool_call_stream_emits_the_expected_events() {
    let openai = require_wire!("openai");
    let body = openai.bytes("sdk_recorded/python_stream_parallel_tool_calls.sse");
    let events = decode_sse(&[&body]).unwrap();
    insta::assert_json_snapshot!("stream_events_python_stream_parallel_tool_calls", events);
    assert!(matches!(&events[0], StreamEvent::Started { model: Some(model), .. } if model == "gpt-4o-2024-08-06"));
    let starts: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallStart { index, id, name } => Some((*index, id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            (0, "call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs"),
            (1, "call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price")
        ]
    );
    let tail: Vec<_> = events.iter().rev().take(4).rev().cloned().collect();
    assert_eq!(
        tail,
        [
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::ToolCallEnd { index: 1 },
            StreamEvent::Usage {
                usage: Usage::new(149, 60)
            },
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
        ]
    );
}

#[test]
fn streamed_and_complete_replies_to_the_same_prompt_agree() {
    let openai = require_wire!("openai");
    let complete = response(
        &openai,
        "sdk_recorded/python_parse_multiple_pydantic_tools.response.json",
    );
    let streamed = streamed(&openai, "sdk_recorded/python_stream_parallel_tool_calls.sse");
    let shape = |r: &ChatResponse| {
        r.message
            .tool_calls
            .iter()
            .map(|call| (call.name.clone(), call.arguments.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&complete), shape(&streamed));
    assert_eq!(complete.usage, streamed.usage);
    assert_eq!(complete.stop_reason, streamed.stop_reason);
    assert_eq!(
        streamed.message.tool_calls[0].arguments,
        json!({"city": "Edinburgh", "country": "GB", "units": "c"})
    );
}

#[test]
fn recorded_edge_cases_map_as_specified() {
    let openai = require_wire!("openai");
    let refusal = response(
        &openai,
        "sdk_recorded/python_parse_pydantic_model_refusal.response.json",
    );
    assert_eq!(refusal.stop_reason, StopReason::ContentFilter);
    assert_eq!(refusal.message.content, "I'm very sorry, but I can't assist with that.");
    let refusal = streamed(&openai, "sdk_recorded/python_stream_refusal.sse");
    assert_eq!(refusal.stop_reason, StopReason::ContentFilter);
    assert!(
        refusal.message.content.starts_with("I'm sorry"),
        "{}",
        refusal.message.content
    );

    assert_eq!(
        response(&openai, "sdk_recorded/python_parse_max_tokens_reached.response.json").stop_reason,
        StopReason::MaxTokens
    );
    assert_eq!(
        streamed(&openai, "sdk_recorded/python_stream_finish_length_max_tokens_1.sse").stop_reason,
        StopReason::MaxTokens
    );

    let choices = response(
        &openai,
        "sdk_recorded/python_parse_pydantic_model_multiple_choices.response.json",
    );
    assert!(
        choices.message.content.contains("\"temperature\":64"),
        "choice 0 is used"
    );
    let n3 = streamed(&openai, "sdk_recorded/python_stream_n3_multiple_choices.sse");
    assert_eq!(
        n3.message.content, r#"{"city":"San Francisco","temperature":65,"units":"f"}"#,
        "only choice 0's text"
    );

    let usage = streamed(&openai, "sdk_recorded/node_stream_works_usage_without_details.sse").usage;
    assert_eq!(usage, Usage::new(17, 10));

    let default = response(&openai, "reference_examples/default.response.json");
    assert_eq!(default.model, "gpt-5.4");
    assert_eq!(default.id.as_deref(), Some("chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"));
    assert_eq!(default.usage, Usage::new(19, 10));

    let functions = response(&openai, "reference_examples/functions.response.json");
    assert_eq!(functions.stop_reason, StopReason::ToolUse);
    assert_eq!(
        functions.message.tool_calls[0].arguments,
        json!({"location": "Boston, MA"})
    );
}
