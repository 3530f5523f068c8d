//! A stream decodes to the same events however the network splits it, and a
//! stream cut anywhere never yields a half call.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::LlmErrorKind;
use agent_provider_ollama::mapper::EventMapper as _;
use agent_testing::require_wire;
use common::{assemble, decode_ndjson, tool_call_stream};
use proptest::prelude::*;

#[test]
fn a_stream_split_at_every_byte_boundary_decodes_like_the_whole() {
    let body = tool_call_stream();
    let whole = decode_ndjson(&[&body]).unwrap();
    assert_eq!(assemble(&whole).unwrap().message.tool_calls.len(), 2);
    for k in 0..=body.len() {
        let (head, tail) = body.split_at(k);
        let split = decode_ndjson(&[head, tail]).unwrap_or_else(|error| panic!("split at {k}: {error}"));
        assert_eq!(split, whole, "split at byte {k}");
    }
}

#[test]
fn the_documented_tool_stream_split_at_every_byte_decodes_like_the_whole() {
    let examples = require_wire!("ollama/docs_examples");
    let body = examples.bytes("api_md_chat_request_streaming_with_tools.response_documented_chunks.jsonl");
    let whole = decode_ndjson(&[&body]).unwrap();
    for k in 0..=body.len() {
        let (head, tail) = body.split_at(k);
        assert_eq!(decode_ndjson(&[head, tail]).unwrap(), whole, "split at byte {k}");
    }
}

#[test]
fn a_stream_cut_in_the_middle_of_a_tool_call_is_an_error_naming_it() {
    let body = tool_call_stream();
    let text = String::from_utf8(body.clone()).unwrap();
    let cut = text.find("\"Tokyo\"").unwrap();
    let error = decode_ndjson(&[&body[..cut]]).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert!(
        error
            .message
            .contains("cut off in the middle of a line carrying tool call `get_weather`"),
        "{error}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_chunking_decodes_the_same(cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let body = tool_call_stream();
        let whole = decode_ndjson(&[&body]).unwrap();
        let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(body.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for point in points {
            pieces.push(&body[start..point]);
            start = point;
        }
        pieces.push(&body[start..]);
        prop_assert_eq!(decode_ndjson(&pieces).unwrap(), whole);
    }

    #[test]
    fn the_stream_mapper_never_panics_on_arbitrary_lines(data in "\\PC{0,300}") {
        let mut mapper = agent_provider_ollama::mapper::StreamMapper::new();
        let mut events = Vec::new();
        let _ = mapper.push(&data, &mut events);
        let _ = mapper.finish(&mut events);
    }

    #[test]
    fn truncating_anywhere_gives_whole_calls_or_a_decode_error(cut in 0usize..2000) {
        let body = tool_call_stream();
        let cut = cut.min(body.len());
        match decode_ndjson(&[&body[..cut]]) {
            Ok(events) => {
                // Only a cut after the `done` line's last byte decodes.
                let response = assemble(&events).unwrap();
                prop_assert_eq!(response.message.tool_calls.len(), 2);
                prop_assert!(response.message.tool_calls.iter().all(|call| call.raw_arguments.is_none()));
            }
            Err(error) => prop_assert_eq!(error.kind, LlmErrorKind::Decode),
        }
    }
}
