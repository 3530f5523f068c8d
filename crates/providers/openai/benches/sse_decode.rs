//! `sse_decode`: a 1 MiB stream of recorded OpenAI chat chunks (the official
//! SDK recording of a parallel tool-call reply in ../shared/wire, its chunks
//! repeated) decoded the way the client does it: SSE framing over 4 KiB
//! network-sized pieces, then every chunk's JSON mapped by the
//! `StreamMapper` into `StreamEvent`s.

use agent_core::StreamEvent;
use agent_http::decode_body;
use agent_http::sse::SseDecoder;
use agent_provider_openai::mapper::StreamMapper;
use agent_testing::require_wire;
use agent_testing::wire::{Wire, repeated_sse_stream};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn recorded_stream(wire: &Wire) -> Vec<u8> {
    let recording = wire.text("openai/sdk_recorded/python_stream_parallel_tool_calls.sse");
    repeated_sse_stream(&recording, 1 << 20)
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
    group.bench_function("openai_chunks_1MiB_framing_and_mapping", |b| {
        b.iter(|| {
            events.clear();
            decode(&input, &mut frames, &mut events)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
