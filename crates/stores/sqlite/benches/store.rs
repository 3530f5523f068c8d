//! `store`: a 1,000-message session in the SQLite store. `append_1000_then_load`
//! appends 250 turns of 4 messages (user, tool call, tool result, answer),
//! one transaction each, then loads the session; `load_1000` only loads it.
//! The file is on the temporary directory's file system with
//! `synchronous = FULL`, so the append figure includes 250 commits to disk.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{AssistantMessage, ConversationStore, Message, ToolCall, ToolResult, TurnMeta, Usage};
use agent_store_sqlite::SqliteStore;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn turn(i: usize) -> [Message; 4] {
    let id = format!("call-{i}");
    [
        Message::user(format!("What is the weather in city {i}?")),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "Let me look that up.",
            vec![ToolCall::new(
                id.clone(),
                "get_weather",
                json!({"location": format!("city {i}"), "unit": "celsius"}),
            )],
        )),
        Message::tool(ToolResult::success(
            id,
            "get_weather",
            r#"{"temp_c":21,"sky":"sunny","wind_kph":12}"#,
        )),
        Message::assistant(format!("It is 21 °C and sunny in city {i}, with a light wind.")),
    ]
}

async fn fill(store: &SqliteStore, name: &str) {
    store.create(name).await.unwrap();
    let delta = TurnMeta::new("openai", "gpt-4o-mini", Usage::new(500, 40), 0.0001);
    for i in 0..250 {
        store.append(name, &turn(i), &delta).await.unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("bench.db")).unwrap();
    let mut group = c.benchmark_group("store");
    group.sample_size(10).measurement_time(Duration::from_secs(10));

    let next = AtomicUsize::new(0);
    group.bench_function("append_1000_then_load", |b| {
        b.to_async(&runtime).iter(|| async {
            let name = format!("s{}", next.fetch_add(1, Ordering::Relaxed));
            fill(&store, &name).await;
            let loaded = store.load(&name).await.unwrap().unwrap();
            assert_eq!(loaded.messages.len(), 1_000);
        });
    });

    runtime.block_on(fill(&store, "loaded"));
    group.bench_function("load_1000", |b| {
        b.to_async(&runtime).iter(|| async {
            let loaded = store.load("loaded").await.unwrap().unwrap();
            assert_eq!(loaded.messages.len(), 1_000);
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
