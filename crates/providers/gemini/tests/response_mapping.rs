//! Every recorded response and stream in ../shared/wire/gemini, mapped and
//! snapshotted, plus explicit checks of what they must show.
//!
//! The js-genai recordings keep streamed events as parsed JSON objects: the
//! SSE framing is rebuilt by `common::Interaction::sse` (`data: <json>\r\n\r\n`).
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{ChatResponse, LlmError, LlmErrorKind, StopReason, StreamEvent, Usage};
use agent_provider_gemini::mapper::parse_response;
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use common::{assemble, decode_sse, decode_sse_partial, interaction, interactions, stem};
use serde_json::{Value, json};

/// A mapping's outcome as JSON: the response, or the error.
fn outcome(result: Result<ChatResponse, LlmError>) -> Value {
    match result {
        Ok(response) => json!({"response": response}),
        Err(error) => json!({"error": error}),
    }
}

/// A stream's events, and the error that ended it if any.
fn stream_outcome(events: &[StreamEvent], error: Option<&LlmError>) -> Value {
    json!({"events": events, "error": error})
}

fn streamed(gemini: &Wire, name: &str) -> ChatResponse {
    let recorded = interaction(gemini, name);
    assemble(&decode_sse(&[&recorded.sse()]).unwrap_or_else(|error| panic!("{name}: {error}"))).unwrap()
}

fn complete(gemini: &Wire, name: &str) -> ChatResponse {
    parse_response(&interaction(gemini, name).body()).unwrap_or_else(|error| panic!("{name}: {error}"))
}

#[test]
fn every_recorded_response_maps_to_its_snapshot() {
    let gemini = require_wire!("gemini");
    let mut seen = 0;
    for recorded in interactions(&gemini).into_iter().filter(|i| !i.is_stream()) {
        insta::assert_json_snapshot!(
            format!("response_{}", recorded.name),
            outcome(parse_response(&recorded.body()))
        );
        seen += 1;
    }
    for path in gemini.files("cookbook_rest", ".response.json") {
        let name = stem(&path, ".response.json");
        let mapped = parse_response(&std::fs::read(&path).unwrap());
        insta::assert_json_snapshot!(format!("response_cookbook_{name}"), outcome(mapped));
        seen += 1;
    }
    assert!(seen >= 20, "only {seen} recorded responses found");
}

#[test]
fn every_recorded_stream_maps_to_its_snapshot() {
    let gemini = require_wire!("gemini");
    let mut seen = 0;
    for recorded in interactions(&gemini).into_iter().filter(common::Interaction::is_stream) {
        let (events, error) = decode_sse_partial(&[&recorded.sse()]);
        insta::assert_json_snapshot!(
            format!("stream_{}", recorded.name),
            stream_outcome(&events, error.as_ref())
        );
        if recorded.status == 200 {
            assert!(error.is_none(), "{}: {error:?}", recorded.name);
            assemble(&events).unwrap_or_else(|error| panic!("{}: {error}", recorded.name));
        }
        seen += 1;
    }
    let cookbook = gemini.bytes("cookbook_rest/streaming_gemini-pro_053bfa4.sse");
    let (events, error) = decode_sse_partial(&[&cookbook]);
    insta::assert_json_snapshot!(
        "stream_cookbook_streaming_gemini-pro_053bfa4",
        stream_outcome(&events, error.as_ref())
    );
    let (events, error) = decode_sse_partial(&[&midstream_error_body(&gemini)]);
    insta::assert_json_snapshot!(
        "stream_python-genai_stream_midstream_error",
        stream_outcome(&events, error.as_ref())
    );
    assert!(seen >= 12, "only {seen} recorded streams found");
}

/// The python-genai fixture holds bare JSON lines (no `data:` prefix) and
/// one blank line; each non-blank line becomes one SSE event.
fn midstream_error_body(gemini: &Wire) -> Vec<u8> {
    let fixture = gemini.text("sdk_fixtures/python-genai_stream_midstream_error.jsonl");
    let segments: Vec<Value> = fixture
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(segments.len(), 2);
    common::sse_from(&segments)
}

#[test]
fn a_mid_stream_error_is_a_typed_error_after_the_text_before_it() {
    let gemini = require_wire!("gemini");
    let (events, error) = decode_sse_partial(&[&midstream_error_body(&gemini)]);
    let error = error.unwrap();
    assert_eq!(error.kind, LlmErrorKind::Server);
    assert_eq!(error.status, Some(500));
    assert_eq!(error.message, "the stream reported an error: INTERNAL: Error");
    assert_eq!(events.last(), Some(&StreamEvent::TextDelta { text: "test".into() }));
}

#[test]
fn the_old_cookbook_stream_repeats_stop_on_every_chunk_and_is_read_to_its_end() {
    let gemini = require_wire!("gemini");
    let body = gemini.bytes("cookbook_rest/streaming_gemini-pro_053bfa4.sse");
    let response = assemble(&decode_sse(&[&body]).unwrap()).unwrap();
    assert!(
        response
            .message
            .content
            .starts_with("In the quaint, sunlit cottage nestled amidst a lush meadow, resided two feline companions")
    );
    assert!(
        response
            .message
            .content
            .ends_with("and for adventure stronger than ever.")
    );
    assert!(
        response.message.content.contains("\"冒险伙伴\""),
        "multi-byte text survives"
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(response.usage.is_empty(), "this old capture reports no usage");
}

#[test]
fn streamed_and_complete_replies_to_the_same_prompt_agree() {
    let gemini = require_wire!("gemini");
    let whole = complete(&gemini, "Chats_Tests_sendMessage_Google_AI_with_config_0");
    let stream = streamed(&gemini, "Chats_Tests_sendMessage_Google_AI_with_config_stream_0");
    assert_eq!(whole.message.content, stream.message.content);
    assert_eq!(whole.stop_reason, StopReason::MaxTokens);
    assert_eq!(whole.stop_reason, stream.stop_reason);
    assert_eq!(whole.usage, Usage::new(6, 20));
    assert_eq!(whole.usage, stream.usage, "the last chunk's usage wins");

    let whole = complete(
        &gemini,
        "non-streaming_Tests_generateContent_afc_enabled_Google_AI_AFC_enabled_0",
    );
    let stream = streamed(
        &gemini,
        "AFC_Streaming_Tests_generateContentStream_afc_enabled_Google_AI_AFC_enabled_0",
    );
    let shape = |r: &ChatResponse| {
        r.message
            .tool_calls
            .iter()
            .map(|call| (call.name.clone(), call.arguments.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&whole), shape(&stream));
    assert_eq!(
        shape(&whole),
        [("customDivide".to_owned(), json!({"denominator": 2, "numerator": 10}))]
    );
    assert_eq!(
        (whole.stop_reason, stream.stop_reason),
        (StopReason::ToolUse, StopReason::ToolUse)
    );
    assert_eq!(whole.usage, stream.usage);
}

#[test]
fn the_last_usage_of_a_stream_wins_over_the_partial_ones() {
    let gemini = require_wire!("gemini");
    // Intermediate chunks say promptTokenCount 101 without candidates; the last says 27 and 37.
    let response = streamed(
        &gemini,
        "AFC_Streaming_Tests_generateContentStream_afc_enabled_Google_AI_AFC_enabled_1",
    );
    assert_eq!(response.usage, Usage::new(27, 37));
    let thinking = streamed(
        &gemini,
        "Client_Tests_generateContentStream_ML_Dev_should_stream_generate_content_with_system_instruction_0",
    );
    assert_eq!(
        thinking.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 253 + 260,
            reasoning_tokens: 260,
            ..Usage::default()
        }
    );
}

#[test]
fn recorded_edge_cases_map_as_specified() {
    let gemini = require_wire!("gemini");
    // MAX_TOKENS with a content that has no parts.
    let empty = complete(
        &gemini,
        "Client_Tests_generateContent_ML_Dev_should_return_the_headers_in_the_sdkHttpResponse_by_default_0",
    );
    assert_eq!(empty.stop_reason, StopReason::MaxTokens);
    assert!(empty.message.content.is_empty() && empty.message.tool_calls.is_empty());
    assert_eq!(
        empty.usage,
        Usage {
            input_tokens: 7,
            output_tokens: 19,
            reasoning_tokens: 19,
            ..Usage::default()
        }
    );

    // `thought: true` parts are reasoning, not content.
    let thought = complete(
        &gemini,
        "Client_Tests_test_thinking_generate_content_should_return_thought_field_0",
    );
    assert!(thought.message.content.is_empty());
    assert!(
        thought.message.reasoning[0]
            .text
            .starts_with("**Breaking Down the Sum of Natural Numbers**")
    );
    assert_eq!(thought.message.reasoning[0].signature, None);

    // Three parallel calls without ids: distinct, stable, recognisable ids.
    let mixed = complete(
        &gemini,
        "MCP_related_client_Tests_generateContent_ML_Dev_can_take_mixed_tools_when_AFC_is_disabled_0",
    );
    let ids: Vec<&str> = mixed.message.tool_calls.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "gemini_synth_ojCtaMv-M-H9jrEP_aiggAo_0",
            "gemini_synth_ojCtaMv-M-H9jrEP_aiggAo_1",
            "gemini_synth_ojCtaMv-M-H9jrEP_aiggAo_2"
        ]
    );
    assert_eq!(mixed.message.tool_calls[1].arguments, json!({}));
    assert_eq!(mixed.stop_reason, StopReason::ToolUse);

    // A signature on the first of two parallel calls names that call.
    let signed = complete(
        &gemini,
        "MCP_related_client_Tests_generateContent_ML_Dev_Multiple_CallableTool_with_MCPClients_and_conduct_automated_function_calling_0",
    );
    assert_eq!(signed.message.reasoning.len(), 1);
    assert_eq!(
        signed.message.reasoning[0].data,
        Some(json!({"gemini_part": "function_call", "call_id": signed.message.tool_calls[0].id}))
    );

    // Implicit/explicit caching is reported as cache reads inside the input.
    let cached =
        parse_response(&gemini.bytes("cookbook_rest/caching_generate_with_cachedContent.response.json")).unwrap();
    assert_eq!(
        cached.usage,
        Usage {
            input_tokens: 323_388,
            output_tokens: 397,
            cache_read_tokens: 323_383,
            ..Usage::default()
        }
    );

    // A prompt blocked before any candidate is an error naming the reason.
    let blocked = parse_response(&gemini.bytes("cookbook_rest/safety_prompt_blocked.response.json")).unwrap_err();
    assert_eq!(blocked.kind, LlmErrorKind::InvalidRequest);
    assert!(blocked.message.contains("blockReason SAFETY"), "{}", blocked.message);

    // The old cookbook function call, lowercase everything, no usage.
    let theaters =
        parse_response(&gemini.bytes("cookbook_rest/function_calling_single_turn_find_theaters.response.json"))
            .unwrap();
    assert_eq!(theaters.message.tool_calls[0].name, "find_theaters");
    assert!(theaters.message.tool_calls[0].id.starts_with("gemini_synth_"));
    assert_eq!(theaters.stop_reason, StopReason::ToolUse);
}

#[test]
fn vertex_streamed_function_arguments_are_assembled() {
    let gemini = require_wire!("gemini");
    let response = streamed(
        &gemini,
        "Client_Tests_generateContentStream_partial_function_calling_Vertex_AI_should_stream_generate_content_enabled_streamFunctionCallArguments_0",
    );
    assert_eq!(response.message.tool_calls.len(), 1);
    let call = &response.message.tool_calls[0];
    assert_eq!(call.name, "getCurrentWeather");
    assert_eq!(
        call.arguments,
        json!({"country": "USA", "location": "NewYorkCity", "purpose": "to know what to wear today", "unit": "C"})
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.message.reasoning[0].data.as_ref().unwrap()["call_id"],
        json!(call.id)
    );
}

#[test]
fn the_recorded_404_on_an_event_stream_maps_to_a_clear_error() {
    let gemini = require_wire!("gemini");
    let recorded = interaction(&gemini, "Chats_Tests_sendMessage_Send_message_stream_with_error_0");
    assert_eq!(recorded.status, 404);
    let error = decode_sse(&[&recorded.sse()]).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert!(
        error
            .message
            .contains("NOT_FOUND: models/custom-gemini-2.0-flash is not found for API version v1beta"),
        "{}",
        error.message
    );
}
