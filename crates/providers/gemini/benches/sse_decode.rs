//! `sse_decode`: a 1 MiB stream of recorded Gemini chunks decoded the way
//! the client does it: SSE framing over 4 KiB network-sized pieces, then
//! every chunk's JSON mapped by the `StreamMapper` into `StreamEvent`s.
//!
//! The recording (js-genai's `sendMessage ... with text stream`, in
//! ../shared/wire) keeps each SSE event as a parsed JSON object, so the
//! framing is rebuilt here (`data: <json>\r\n\r\n` per event, as Google
//! sends it) and the events repeated to past 1 MiB.

use agent_core::StreamEvent;
use agent_http::decode_body;
use agent_http::sse::SseDecoder;
use agent_provider_gemini::mapper::StreamMapper;
use agent_testing::require_wire;
use agent_testing::wire::{Wire, repeated_sse_stream};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const RECORDING: &str = "gemini/sdk_recorded/js-genai_Chats_Tests_sendMessage_Google_AI_with_text_stream.json";

fn recorded_stream(wire: &Wire) -> Vec<u8> {
    let recording = wire.json(RECORDING);
    let mut sse = String::new();
    for segment in recording["interactions"][0]["response"]["bodySegments"]
        .as_array()
        .expect("recorded segments")
    {
        sse.push_str("data: ");
        sse.push_str(&segment.to_string());
        sse.push_str("\r\n\r\n");
    }
    repeated_sse_stream(&sse, 1 << 20)
}

fn decode(input: &[u8], frames: &mut Vec<agent_http::sse::SseEvent>, events: &mut Vec<StreamEvent>) -> usize {
    let pieces = input.chunks(4096);
    if let Err(error) = decode_body(&mut SseDecoder::new(), &mut StreamMapper::new(), pieces, frames, events) {
        panic!("{error}");
    }
    events.len()
}

/// Skipped, saying why, when the recorded wire examples are absent.
fn bench(c: &mut Criterion) {
    let input = recorded_stream(&require_wire!());
    let mut frames = Vec::with_capacity(64);
    let mut events = Vec::with_capacity(16_384);
    let count = decode(&input, &mut frames, &mut events);
    assert!(
        matches!(events.last(), Some(StreamEvent::Stop { .. })),
        "the stream decodes completely"
    );
    println!("sse_decode: {} bytes -> {count} events", input.len());

    let mut group = c.benchmark_group("sse_decode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("gemini_chunks_1MiB_framing_and_mapping", |b| {
        b.iter(|| {
            events.clear();
            decode(&input, &mut frames, &mut events)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
