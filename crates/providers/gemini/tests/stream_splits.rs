//! A stream decodes to the same events however the network splits it.
//!
//! The recorded streams keep each SSE event as a parsed JSON object; the
//! bodies here rebuild the framing (`data: <json>\r\n\r\n`, see
//! `common::Interaction::sse`). The old cookbook capture is raw SSE as
//! recorded, with its mixed line endings.
#![allow(clippy::unwrap_used)]

mod common;

use agent_provider_gemini::mapper::EventMapper as _;
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use common::{assemble, decode_sse, interaction};
use proptest::prelude::*;

/// Gemini 3 on Vertex: a signed call whose arguments stream in 10 chunks.
const VERTEX_TOOL_CALL: &str = "Client_Tests_generateContentStream_partial_function_calling_Vertex_AI_should_stream_generate_content_enabled_streamFunctionCallArguments_0";
/// gemini-2.5-flash: a signed whole function call.
const SIGNED_CALL: &str = "AFC_Streaming_Tests_chat_stream_AFC_enabled_AFC_max_calls_exceeded_Google_AI_can_continue_after_max_calls_exceeded_0";

fn body(gemini: &Wire, name: &str) -> Vec<u8> {
    interaction(gemini, name).sse()
}

/// Both tool-call recordings in one body: the second reply's events follow
/// the first's, as two chunks of one stream would.
fn tool_call_body(gemini: &Wire) -> Vec<u8> {
    // The first reply's finish is dropped so the two read as one reply.
    let mut head = interaction(gemini, SIGNED_CALL).segments[0].clone();
    head["candidates"][0].as_object_mut().unwrap().remove("finishReason");
    let mut body = common::sse_from(&[head]);
    body.extend(common::sse_from(&interaction(gemini, VERTEX_TOOL_CALL).segments));
    body
}

#[test]
fn a_tool_call_stream_split_at_every_byte_boundary_decodes_like_the_whole() {
    let body = tool_call_body(&require_wire!("gemini"));
    let whole = decode_sse(&[&body]).unwrap();
    let response = assemble(&whole).unwrap();
    assert_eq!(response.message.tool_calls.len(), 2, "{response:?}");
    assert_eq!(response.message.reasoning.len(), 2, "both signatures are kept");
    for k in 0..=body.len() {
        let (head, tail) = body.split_at(k);
        let split = decode_sse(&[head, tail]).unwrap_or_else(|error| panic!("split at {k}: {error}"));
        assert_eq!(split, whole, "split at byte {k}");
    }
}

#[test]
fn a_stream_delivered_byte_by_byte_decodes_like_the_whole() {
    let gemini = require_wire!("gemini");
    for body in [
        body(&gemini, VERTEX_TOOL_CALL),
        gemini.bytes("cookbook_rest/streaming_gemini-pro_053bfa4.sse"),
    ] {
        let whole = decode_sse(&[&body]).unwrap();
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode_sse(&bytes).unwrap(), whole);
    }
}

/// The five recordings the properties run over.
fn recordings(gemini: &Wire) -> [Vec<u8>; 5] {
    [
        body(gemini, VERTEX_TOOL_CALL),
        body(gemini, SIGNED_CALL),
        body(gemini, "Chats_Tests_sendMessage_Google_AI_with_text_stream_0"),
        body(
            gemini,
            "Client_Tests_generateContentStream_ML_Dev_should_stream_generate_content_with_system_instruction_0",
        ),
        gemini.bytes("cookbook_rest/streaming_gemini-pro_053bfa4.sse"),
    ]
}

// The properties over recordings are plain tests around `proptest!`, so
// that they skip when the recordings are absent.

#[test]
fn any_chunking_of_any_recording_decodes_the_same() {
    let recordings = recordings(&require_wire!("gemini"));
    proptest!(ProptestConfig::with_cases(64), |(
        which in 0usize..5,
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    )| {
        let body: &[u8] = &recordings[which];
        let whole = decode_sse(&[body]).unwrap();
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
fn the_stream_mapper_never_panics_on_mangled_chunks() {
    let recordings = recordings(&require_wire!("gemini"));
    proptest!(ProptestConfig::with_cases(64), |(
        which in 0usize..4,
        cut in any::<prop::sample::Index>(),
        junk in "[\\[\\]{}\",:a-zA-Z0-9 ]{0,40}",
    )| {
        // A real chunk cut somewhere and finished with junk.
        let body = std::str::from_utf8(&recordings[which]).unwrap();
        let chunk = body.lines().find(|line| line.starts_with("data: ")).unwrap().trim_start_matches("data: ");
        let mut at = cut.index(chunk.len() + 1);
        while !chunk.is_char_boundary(at) {
            at -= 1;
        }
        let data = format!("{}{junk}", &chunk[..at]);
        let mut mapper = agent_provider_gemini::mapper::StreamMapper::new();
        let mut events = Vec::new();
        let _ = mapper.push(&data, &mut events);
        let _ = mapper.finish(&mut events);
    });
}

#[test]
fn truncating_a_tool_call_stream_anywhere_never_yields_a_half_call() {
    let body = body(&require_wire!("gemini"), VERTEX_TOOL_CALL);
    proptest!(ProptestConfig::with_cases(64), |(cut in any::<prop::sample::Index>())| {
        let cut = cut.index(body.len() + 1);
        // The finishReason comes with the last chunk: any cut before its end is an error.
        match decode_sse(&[&body[..cut]]) {
            Ok(events) => {
                let response = assemble(&events).unwrap();
                prop_assert_eq!(response.message.tool_calls.len(), 1);
                prop_assert_eq!(response.message.tool_calls[0].arguments["unit"].as_str(), Some("C"));
            }
            Err(error) => {
                prop_assert_eq!(error.kind, agent_core::LlmErrorKind::Decode);
                prop_assert!(error.message.contains("truncated") || error.message.contains("ended before"), "{}", error.message);
            }
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_stream_mapper_never_panics_on_arbitrary_chunks(data in "\\PC{0,300}") {
        let mut mapper = agent_provider_gemini::mapper::StreamMapper::new();
        let mut events = Vec::new();
        let _ = mapper.push(&data, &mut events);
        let _ = mapper.finish(&mut events);
    }
}
