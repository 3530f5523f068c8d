//! `ndjson_decode`: a 1 MiB stream of Ollama `/api/chat` lines (the text
//! and tool-call lines of the documented streams in ../shared/wire, repeated,
//! then their final `done` line) decoded the way the client does it: NDJSON
//! framing over 4 KiB network-sized pieces, then every line mapped by the
//! `StreamMapper` into `StreamEvent`s.

use agent_core::StreamEvent;
use agent_http::decode_body;
use agent_http::ndjson::NdjsonDecoder;
use agent_provider_ollama::mapper::StreamMapper;
use agent_testing::require_wire;
use agent_testing::wire::Wire;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn recorded_stream(wire: &Wire) -> Vec<u8> {
    let text = wire.text("ollama/docs_examples/api_md_chat_request_streaming.response_documented_chunks.jsonl");
    let tools =
        wire.text("ollama/docs_examples/api_md_chat_request_streaming_with_tools.response_documented_chunks.jsonl");
    let mut text_lines = text.lines().filter(|line| !line.trim().is_empty());
    let mut tool_lines = tools.lines().filter(|line| !line.trim().is_empty());
    let (Some(text_line), Some(tool_line), Some(done_line)) = (text_lines.next(), tool_lines.next(), tool_lines.next())
    else {
        panic!("the documented streams have a first and a final line");
    };
    let mut stream = String::with_capacity((1 << 20) + 1024);
    while stream.len() < 1 << 20 {
        for line in [text_line, text_line, text_line, tool_line] {
            stream.push_str(line);
            stream.push('\n');
        }
    }
    stream.push_str(done_line);
    stream.push('\n');
    stream.into_bytes()
}

fn decode(input: &[u8], lines: &mut Vec<String>, events: &mut Vec<StreamEvent>) -> usize {
    let pieces = input.chunks(4096);
    if let Err(error) = decode_body(
        &mut NdjsonDecoder::new(),
        &mut StreamMapper::new(),
        pieces,
        lines,
        events,
    ) {
        panic!("{error}");
    }
    events.len()
}

/// Skipped, saying why, when the recorded wire examples are absent.
fn bench(c: &mut Criterion) {
    let input = recorded_stream(&require_wire!());
    let mut lines = Vec::with_capacity(64);
    let mut events = Vec::with_capacity(32_768);
    let count = decode(&input, &mut lines, &mut events);
    assert!(
        matches!(events.last(), Some(StreamEvent::Stop { .. })),
        "the stream decodes completely"
    );
    println!("ndjson_decode: {} bytes -> {count} events", input.len());

    let mut group = c.benchmark_group("ndjson_decode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("ollama_lines_1MiB_framing_and_mapping", |b| {
        b.iter(|| {
            events.clear();
            decode(&input, &mut lines, &mut events)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
