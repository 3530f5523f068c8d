//! A recorded stream decodes to the same events however the network splits
//! it, and a stream cut anywhere never yields a half tool call.
#![allow(clippy::unwrap_used)]

mod common;

use agent_provider_anthropic::mapper::EventMapper as _;
use agent_testing::require_wire;
use common::{assemble, decode_sse};
use proptest::prelude::*;

const RECORDING: &str = "sdk_fixtures/python_stream_tool_use_response.sse";

#[test]
fn a_tool_use_stream_split_at_every_byte_boundary_decodes_like_the_whole() {
    let body = require_wire!("anthropic").bytes(RECORDING);
    let whole = decode_sse(&[&body]).unwrap();
    assert!(whole.len() > 10, "the recording has many events: {}", whole.len());
    for k in 0..=body.len() {
        let (head, tail) = body.split_at(k);
        let split = decode_sse(&[head, tail]).unwrap_or_else(|error| panic!("split at {k}: {error}"));
        assert_eq!(split, whole, "split at byte {k}");
    }
}

#[test]
fn a_stream_delivered_byte_by_byte_decodes_like_the_whole() {
    let anthropic = require_wire!("anthropic");
    for file in [
        RECORDING,
        "sdk_recorded/python_tool_runner_streaming_tool_use_then_tool_result_b__771c64ff.exchange0.sse",
    ] {
        let body = anthropic.bytes(file);
        let whole = decode_sse(&[&body]).unwrap();
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode_sse(&bytes).unwrap(), whole, "{file}");
    }
}

// The properties over recordings are plain tests around `proptest!`, so
// that they skip when the recordings are absent.

#[test]
fn any_chunking_of_any_recording_decodes_the_same() {
    let anthropic = require_wire!("anthropic");
    proptest!(ProptestConfig::with_cases(64), |(
        file in prop::sample::select(vec![
            RECORDING,
            "sdk_fixtures/python_stream_incomplete_partial_json_response.sse",
            "sdk_fixtures/python_stream_compaction_response.sse",
            "sdk_recorded/python_tool_runner_streaming_tool_use_then_tool_result_a__555fb399.exchange0.sse",
            "sdk_recorded/python_beta_stream_structured_output__9381e2b7.exchange0.sse",
        ]),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    )| {
        let body = anthropic.bytes(file);
        let whole = decode_sse(&[&body]).unwrap();
        let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(body.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for point in points {
            pieces.push(&body[start..point]);
            start = point;
        }
        pieces.push(&body[start..]);
        prop_assert_eq!(decode_sse(&pieces).unwrap(), whole);
    });
}

#[test]
fn truncating_the_tool_use_stream_anywhere_never_yields_a_half_call() {
    let body = require_wire!("anthropic").bytes(RECORDING);
    proptest!(ProptestConfig::with_cases(64), |(cut in 0usize..2000)| {
        let cut = cut.min(body.len());
        // A cut before the stop reason must be an error; after it, the complete call.
        match decode_sse(&[&body[..cut]]) {
            Ok(events) => {
                let response = assemble(&events).unwrap();
                prop_assert_eq!(response.message.tool_calls.len(), 1);
                prop_assert!(response.message.tool_calls[0].raw_arguments.is_none());
                prop_assert_eq!(&response.message.tool_calls[0].arguments, &serde_json::json!({"location": "Paris"}));
            }
            Err(error) => prop_assert_eq!(error.kind, agent_core::LlmErrorKind::Decode),
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_stream_mapper_never_panics_on_arbitrary_events(data in "\\PC{0,300}") {
        let mut mapper = agent_provider_anthropic::mapper::StreamMapper::new();
        let mut events = Vec::new();
        let _ = mapper.push(&data, &mut events);
        let _ = mapper.finish(&mut events);
    }

    #[test]
    fn the_stream_mapper_never_panics_on_shuffled_event_kinds(
        kinds in prop::collection::vec(prop::sample::select(vec![
            r#"{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"s"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}"#,
            r#"{"type":"message_stop"}"#,
            r#"{"type":"ping"}"#,
        ]), 0..16),
    ) {
        let mut mapper = agent_provider_anthropic::mapper::StreamMapper::new();
        let mut events = Vec::new();
        for data in kinds {
            if mapper.push(data, &mut events).is_err() {
                break;
            }
        }
        let _ = mapper.finish(&mut events);
    }
}
