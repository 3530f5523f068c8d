//! A recorded stream decodes to the same events however the network splits it.
#![allow(clippy::unwrap_used)]

mod common;

use agent_provider_openai::mapper::EventMapper as _;
use agent_testing::require_wire;
use common::decode_sse;
use proptest::prelude::*;

const RECORDING: &str = "sdk_recorded/python_stream_parallel_tool_calls.sse";

#[test]
fn a_stream_split_at_every_byte_boundary_decodes_like_the_whole() {
    let body = require_wire!("openai").bytes(RECORDING);
    let whole = decode_sse(&[&body]).unwrap();
    assert!(whole.len() > 20, "the recording has many events: {}", whole.len());
    for k in 0..=body.len() {
        let (head, tail) = body.split_at(k);
        let split = decode_sse(&[head, tail]).unwrap_or_else(|error| panic!("split at {k}: {error}"));
        assert_eq!(split, whole, "split at byte {k}");
    }
}

#[test]
fn a_stream_delivered_byte_by_byte_decodes_like_the_whole() {
    let body = require_wire!("openai").bytes(RECORDING);
    let whole = decode_sse(&[&body]).unwrap();
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(decode_sse(&bytes).unwrap(), whole);
}

// The properties over recordings are plain tests around `proptest!`, so
// that they skip when the recordings are absent.

#[test]
fn any_chunking_of_any_recording_decodes_the_same() {
    let openai = require_wire!("openai");
    proptest!(ProptestConfig::with_cases(64), |(
        file in prop::sample::select(vec![
            "sdk_recorded/python_stream_parallel_tool_calls.sse",
            "sdk_recorded/python_stream_refusal.sse",
            "sdk_recorded/python_stream_n3_multiple_choices.sse",
            "sdk_recorded/node_stream_works_usage_without_details.sse",
        ]),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    )| {
        let body = openai.bytes(file);
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
fn truncating_a_recording_anywhere_never_yields_a_half_call() {
    let body = require_wire!("openai").bytes(RECORDING);
    proptest!(ProptestConfig::with_cases(64), |(cut in 0usize..7728)| {
        let cut = cut.min(body.len());
        // A cut before the finish_reason chunk must be an error; after it, complete calls.
        match decode_sse(&[&body[..cut]]) {
            Ok(events) => {
                let response = common::assemble(&events).unwrap();
                prop_assert_eq!(response.message.tool_calls.len(), 2);
                for call in &response.message.tool_calls {
                    prop_assert!(call.raw_arguments.is_none(), "complete calls only: {:?}", call);
                }
            }
            Err(error) => prop_assert_eq!(error.kind, agent_core::LlmErrorKind::Decode),
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_stream_mapper_never_panics_on_arbitrary_chunks(data in "\\PC{0,300}") {
        let mut mapper = agent_provider_openai::mapper::StreamMapper::new();
        let mut events = Vec::new();
        let _ = mapper.push(&data, &mut events);
        let _ = mapper.finish(&mut events);
    }
}
