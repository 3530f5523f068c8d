//! Several stores (several pools: as many server sessions as separate
//! processes would have) writing one conversation at once: turns stay whole
//! and ordered, compaction and deletion never lose or orphan a row.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::time::Duration;

use agent_core::{AssistantMessage, ConversationStore, Message, StoreError, ToolCall, ToolResult, TurnMeta, Usage};
use agent_runner::history::is_sendable;
use agent_store_postgres::PostgresStore;
use common::database;
use serde_json::json;
use sqlx_core::query_scalar::query_scalar;

mod common;

const TURNS: usize = 40;

/// Turn `i` of `writer`: two messages, or three with a tool call and its
/// result.
fn turn(writer: &str, i: usize) -> Vec<Message> {
    let question = Message::user(format!("{writer} {i}"));
    if i.is_multiple_of(2) {
        return vec![question, Message::assistant(format!("answer {writer} {i}"))];
    }
    let id = format!("{writer}-{i}");
    vec![
        question,
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new(id.clone(), "lookup", json!({"i": i}))],
        )),
        Message::tool(ToolResult::success(id, "lookup", format!("result {writer} {i}"))),
    ]
}

fn delta(i: usize) -> TurnMeta {
    TurnMeta::new("openai", "gpt-4o-mini", Usage::new(i as u64 + 1, 2), 0.001)
}

/// `count` stores, each on a pool of its own, on the database at `url`.
async fn stores(url: &str, count: usize) -> Vec<PostgresStore> {
    let mut stores = Vec::with_capacity(count);
    for _ in 0..count {
        stores.push(PostgresStore::connect(url).await.unwrap());
    }
    stores
}

async fn count_rows(store: &PostgresStore, sql: &str) -> usize {
    let count: i64 = query_scalar(sql).fetch_one(store.pool()).await.unwrap();
    usize::try_from(count).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_appending_to_one_conversation_store_every_turn_once_and_whole() {
    let Some(url) = database("two_stores_appending").await else {
        return;
    };
    let stores = stores(&url, 2).await;
    stores[0].create("shared").await.unwrap();
    let writers: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(index, store)| {
            let store = store.clone();
            tokio::spawn(async move {
                let writer = format!("w{index}");
                for i in 0..TURNS {
                    store.append("shared", &turn(&writer, i), &delta(i)).await.unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }

    let loaded = stores[1].load("shared").await.unwrap().unwrap();
    let per_writer: usize = (0..TURNS).map(|i| turn("w", i).len()).sum();
    assert_eq!(loaded.messages.len(), 2 * per_writer);
    assert_eq!(loaded.meta.message_count, 2 * per_writer as u64);
    assert_eq!(loaded.meta.user_turns, 2 * TURNS as u64);
    let input: u64 = (1..=TURNS as u64).sum();
    assert_eq!(loaded.meta.usage, Usage::new(2 * input, 2 * 2 * TURNS as u64));
    assert!((loaded.meta.cost_usd - 0.001 * 2.0 * TURNS as f64).abs() < 1e-9);
    assert_eq!(loaded.repairs, 0);
    assert!(is_sendable(&loaded.messages));

    // Walk the conversation turn by turn: each starts with its question and
    // is whole; each writer's turns come in its order; none comes twice.
    let mut seen = HashSet::new();
    let mut next = [0_usize; 2];
    let mut rest = &loaded.messages[..];
    while let Some(Message::User { content, .. }) = rest.first() {
        let (writer, i) = content.split_once(' ').unwrap();
        let i: usize = i.parse().unwrap();
        let index: usize = writer[1..].parse().unwrap();
        assert_eq!(i, next[index], "{writer}'s turns in order");
        next[index] += 1;
        assert!(seen.insert(content.clone()), "{content} stored twice");
        let expected = turn(writer, i);
        assert_eq!(rest[..expected.len()], expected[..], "turn {content} is contiguous");
        rest = &rest[expected.len()..];
    }
    assert!(rest.is_empty(), "every message belongs to a turn");
    let order: Vec<char> = loaded
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::User { content, .. } => content.chars().nth(1),
            _ => None,
        })
        .collect();
    let switches = order.windows(2).filter(|pair| pair[0] != pair[1]).count();
    assert!(switches >= 2, "the writers ran at the same time ({switches} switches)");
    assert_eq!(next, [TURNS, TURNS]);

    // The rows: numbered 0..n without a gap, one `turn` number per turn.
    let store = &stores[0];
    let rows = 2 * per_writer;
    assert_eq!(count_rows(store, "SELECT count(*) FROM messages").await, rows);
    assert_eq!(count_rows(store, "SELECT min(seq) FROM messages").await, 0);
    assert_eq!(count_rows(store, "SELECT max(seq) + 1 FROM messages").await, rows);
    assert_eq!(
        count_rows(store, "SELECT count(DISTINCT turn) FROM messages").await,
        2 * TURNS
    );
    let split = "SELECT count(*) FROM (SELECT turn FROM messages GROUP BY turn \
                 HAVING max(seq) - min(seq) + 1 <> count(*)) AS split";
    assert_eq!(count_rows(store, split).await, 0, "no turn is split");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacting_while_another_store_appends_loses_nothing() {
    let Some(url) = database("compacting_while_appending").await else {
        return;
    };
    let stores = stores(&url, 2).await;
    stores[0].create("shared").await.unwrap();
    let appender = {
        let store = stores[0].clone();
        tokio::spawn(async move {
            for i in 0..TURNS {
                let pair = [Message::user(format!("q{i}")), Message::assistant(format!("a{i}"))];
                store.append("shared", &pair, &TurnMeta::default()).await.unwrap();
            }
        })
    };
    // Summarise all but the last turn of the context, again and again.
    let compactor = &stores[1];
    let mut compactions = 0;
    while !appender.is_finished() || compactions == 0 {
        let context = compactor.load("shared").await.unwrap().unwrap();
        let summary = usize::from(context.summarised > 0);
        let turns = (context.messages.len() - summary) / 2;
        if turns >= 2 {
            let replaced = summary + 2 * (turns - 1);
            compactor
                .compact("shared", replaced, &format!("S{compactions}"))
                .await
                .unwrap();
            compactions += 1;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    appender.await.unwrap();

    let all: Vec<Message> = (0..TURNS)
        .flat_map(|i| [Message::user(format!("q{i}")), Message::assistant(format!("a{i}"))])
        .collect();
    let transcript = compactor.transcript("shared").await.unwrap().unwrap();
    assert_eq!(transcript.messages, all);
    let context = compactor.load("shared").await.unwrap().unwrap();
    let kept = context.messages.len() - 1;
    assert_eq!(context.summarised as usize + kept, all.len());
    assert_eq!(context.messages[1..], all[all.len() - kept..]);
    assert!(matches!(&context.messages[0], Message::System { .. }));
    assert!(compactions > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_deleted_while_another_store_writes_leaves_no_row() {
    let Some(url) = database("deleted_while_writing").await else {
        return;
    };
    let stores = stores(&url, 2).await;
    stores[0].create("doomed").await.unwrap();
    let (started, writing) = tokio::sync::oneshot::channel();
    let writer = {
        let store = stores[0].clone();
        tokio::spawn(async move {
            let mut stored = 0;
            let mut started = Some(started);
            for i in 0..200 {
                if i == 20
                    && let Some(started) = started.take()
                {
                    started.send(()).unwrap();
                }
                let appended = store.append("doomed", &turn("w", i), &TurnMeta::default()).await;
                let saved = store.save_checkpoint("doomed", &json!({"step": i})).await;
                for result in [appended.map(|_| ()), saved] {
                    match result {
                        Ok(()) => stored += 1,
                        Err(StoreError::NotFound { name }) => assert_eq!(name, "doomed"),
                        Err(other) => panic!("{other}"),
                    }
                }
            }
            stored
        })
    };
    writing.await.unwrap();
    stores[1].delete("doomed").await.unwrap();
    let stored = writer.await.unwrap();
    assert!(stored < 400, "the delete happened while writing ({stored} writes)");
    for table in ["conversations", "messages", "checkpoints"] {
        let rows = count_rows(&stores[1], &format!("SELECT count(*) FROM {table}")).await;
        assert_eq!(rows, 0, "{table}");
    }
}
