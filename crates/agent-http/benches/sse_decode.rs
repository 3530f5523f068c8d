//! `sse_decode`: SSE framing throughput over 1 MiB of recorded OpenAI chat
//! chunks (the official SDK recording in ../shared/wire, repeated), fed in
//! 4 KiB network-sized pieces.

use agent_http::sse::SseDecoder;
use agent_testing::require_wire;
use agent_testing::wire::{Wire, repeated_sse_stream};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn recorded_stream(wire: &Wire) -> Vec<u8> {
    let recording = wire.text("openai/sdk_recorded/python_stream_parallel_tool_calls.sse");
    repeated_sse_stream(&recording, 1 << 20)
}

/// Skipped, saying why, when the recorded wire examples are absent.
fn bench(c: &mut Criterion) {
    let input = recorded_stream(&require_wire!());
    let mut group = c.benchmark_group("sse_decode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("openai_chunks_1MiB", |b| {
        let mut events = Vec::with_capacity(8192);
        b.iter(|| {
            events.clear();
            let mut decoder = SseDecoder::new();
            for chunk in input.chunks(4096) {
                decoder.push(chunk, &mut events);
            }
            decoder.finish(&mut events);
            assert!(events.last().is_some_and(agent_http::sse::SseEvent::is_done));
            events.len()
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
