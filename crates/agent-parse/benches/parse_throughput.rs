//! Throughput of JSON extraction and tool-call parsing over 1 MiB inputs,
//! including the adversarial ones that make naive scanners quadratic.

use std::hint::black_box;

use agent_parse::{JsonExtractor, StreamingToolCallFilter, ToolCallParser};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const MIB: usize = 1 << 20;

/// Realistic prose (with the odd brace, bracket, quote and `<`) and one JSON
/// object in the middle.
fn prose_with_json() -> String {
    let sentence = "The travel assistant compared three itineraries [1] and noted that the \"fastest\" option \
                    costs more; prices < 500 EUR were preferred {see notes}. ";
    let object = r#"{"destination": "Lisbon", "nights": 4, "budget": {"currency": "EUR", "max": 1200}, "tags": ["sea", "food"]}"#;
    let mut text = String::with_capacity(MIB + 256);
    while text.len() < MIB / 2 {
        text.push_str(sentence);
    }
    text.push_str(object);
    while text.len() < MIB {
        text.push_str(sentence);
    }
    text
}

fn inputs() -> [(&'static str, String); 3] {
    [
        ("prose_with_json", prose_with_json()),
        ("open_braces", "{".repeat(MIB)),
        ("nested_prefix", r#"[{"a":"#.repeat(MIB / 6)),
    ]
}

fn parse_throughput(c: &mut Criterion) {
    let inputs = inputs();
    let mut group = c.benchmark_group("parse_throughput");
    group.sample_size(20);
    for (name, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("extract_strict/{name}"), |b| {
            b.iter(|| JsonExtractor::strict().extract_value(black_box(text)).is_ok());
        });
        group.bench_function(format!("extract_lenient/{name}"), |b| {
            b.iter(|| JsonExtractor::lenient().extract_value(black_box(text)).is_ok());
        });
        group.bench_function(format!("tool_calls/{name}"), |b| {
            let parser = ToolCallParser::new();
            b.iter(|| parser.parse(black_box(text)).calls.len());
        });
        group.bench_function(format!("streaming_filter_4k_deltas/{name}"), |b| {
            b.iter(|| {
                let mut filter = StreamingToolCallFilter::new();
                let mut shown = 0;
                let mut rest = black_box(text.as_str());
                while !rest.is_empty() {
                    let mut at = rest.len().min(4096);
                    while !rest.is_char_boundary(at) {
                        at += 1;
                    }
                    shown += filter.push(&rest[..at]).len();
                    rest = &rest[at..];
                }
                shown + filter.finish().text.len()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, parse_throughput);
criterion_main!(benches);
