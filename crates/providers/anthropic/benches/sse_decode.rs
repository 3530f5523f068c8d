//! `sse_decode`: a 1 MiB stream of recorded Anthropic stream events (the
//! official SDK recording of a streamed `tool_use` reply in ../shared/wire,
//! with the real server's padding, its events repeated) decoded the way the
//! client does it: SSE framing over 4 KiB network-sized pieces, then every
//! event's JSON mapped by the `StreamMapper` into `StreamEvent`s (a fresh
//! mapper for each repeated message).

use agent_core::StreamEvent;
use agent_http::sse::{SseDecoder, SseEvent};
use agent_provider_anthropic::mapper::{EventMapper, StreamMapper};
use agent_testing::require_wire;
use agent_testing::wire::{Wire, repeated_sse_stream};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const RECORDING: &str =
    "anthropic/sdk_recorded/python_tool_runner_streaming_tool_use_then_tool_result_a__555fb399.exchange0.sse";

fn recorded_stream(wire: &Wire) -> Vec<u8> {
    repeated_sse_stream(&wire.text(RECORDING), 1 << 20)
}

fn map(frames: &mut Vec<SseEvent>, mapper: &mut StreamMapper, events: &mut Vec<StreamEvent>, messages: &mut usize) {
    for frame in frames.drain(..) {
        // The client's SSE stream ends at `[DONE]`; the mapper never sees it.
        if frame.is_done() {
            continue;
        }
        if mapper.is_finished() {
            *mapper = StreamMapper::new();
            *messages += 1;
        }
        if let Err(error) = mapper.push(&frame.data, events) {
            panic!("{error}");
        }
    }
}

fn decode(input: &[u8], frames: &mut Vec<SseEvent>, events: &mut Vec<StreamEvent>) -> usize {
    let mut decoder = SseDecoder::new();
    let mut mapper = StreamMapper::new();
    let mut messages = 1;
    for piece in input.chunks(4096) {
        decoder.push(piece, frames);
        map(frames, &mut mapper, events, &mut messages);
    }
    decoder.finish(frames);
    map(frames, &mut mapper, events, &mut messages);
    if let Err(error) = mapper.finish(events) {
        panic!("{error}");
    }
    messages
}

/// Skipped, saying why, when the recorded wire examples are absent.
fn bench(c: &mut Criterion) {
    let input = recorded_stream(&require_wire!());
    let mut frames = Vec::with_capacity(64);
    let mut events = Vec::with_capacity(32_768);
    let messages = decode(&input, &mut frames, &mut events);
    let stops = events
        .iter()
        .filter(|event| matches!(event, StreamEvent::Stop { .. }))
        .count();
    assert_eq!(stops, messages, "every repeated message decodes completely");
    println!(
        "sse_decode: {} bytes -> {messages} messages, {} events",
        input.len(),
        events.len()
    );

    let mut group = c.benchmark_group("sse_decode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("anthropic_events_1MiB_framing_and_mapping", |b| {
        b.iter(|| {
            events.clear();
            decode(&input, &mut frames, &mut events)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
