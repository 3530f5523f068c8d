//! The store's behaviour: the shared contract (`agent_testing::store_contract`,
//! run on the SQLite store and on the in-memory one), reopening, crash
//! repair, damaged and newer files.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agent_core::{
    AssistantMessage, ConversationStore, LOST_RESULT, Message, StoreError, ToolCall, ToolResult, TurnMeta, Usage,
};
use agent_runner::history::is_sendable;
use agent_store::InMemoryStore;
use agent_store_sqlite::SqliteStore;
use agent_testing::store_contract::{check_contract, rich_turn};
use common::temp_store;
use serde_json::json;

mod common;

#[tokio::test]
async fn the_sqlite_store_keeps_the_store_contract() {
    let (_dir, store) = temp_store();
    check_contract(&store).await;
}

#[tokio::test]
async fn the_in_memory_store_keeps_the_store_contract() {
    check_contract(&InMemoryStore::new()).await;
}

#[tokio::test]
async fn reopening_gives_identical_messages_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/store.db");
    let store = SqliteStore::open(&path).unwrap();
    store.create("trip").await.unwrap();
    let mut expected = Vec::new();
    for i in 0..5 {
        let turn = rich_turn(&format!("t{i}"));
        store
            .append(
                "trip",
                &turn,
                &TurnMeta::new("anthropic", "claude", Usage::new(10, 1), 0.1),
            )
            .await
            .unwrap();
        expected.extend(turn);
    }
    let before = store.load("trip").await.unwrap().unwrap();
    let listed = store.list().await.unwrap();
    drop(store);

    let reopened = SqliteStore::open(&path).unwrap();
    let after = reopened.load("trip").await.unwrap().unwrap();
    assert_eq!(after, before);
    assert_eq!(after.messages, expected);
    assert_eq!(reopened.list().await.unwrap(), listed);
    assert_eq!(after.meta.usage, Usage::new(50, 5));
    assert!((after.meta.cost_usd - 0.5).abs() < 1e-12);
    assert!(is_sendable(&after.messages));
}

#[tokio::test]
async fn a_crash_between_a_tool_call_and_its_result_loads_as_a_sendable_conversation() {
    let (dir, store) = temp_store();
    store.create("crash").await.unwrap();
    store
        .append("crash", &rich_turn("ok"), &TurnMeta::default())
        .await
        .unwrap();
    // The caller records the calls first, one result arrives, then the process dies.
    let calls = Message::Assistant(AssistantMessage::with_tool_calls(
        "Booking.",
        vec![
            ToolCall::new("c1", "book_flight", json!({"to": "NRT"})),
            ToolCall::new("c2", "book_hotel", json!({"city": "Tokyo"})),
        ],
    ));
    store
        .append(
            "crash",
            &[Message::user("book it"), calls.clone()],
            &TurnMeta::default(),
        )
        .await
        .unwrap();
    let c1 = Message::tool(ToolResult::success("c1", "book_flight", "booked"));
    store
        .append("crash", std::slice::from_ref(&c1), &TurnMeta::default())
        .await
        .unwrap();
    drop(store);

    let store = SqliteStore::open(dir.path().join("store.db")).unwrap();
    let loaded = store.load("crash").await.unwrap().unwrap();
    assert!(is_sendable(&loaded.messages));
    assert_eq!(loaded.repairs, 1);
    assert_eq!(loaded.meta.message_count, 8, "the repair is not written back");
    let lost = Message::tool(ToolResult::error("c2", "book_hotel", LOST_RESULT));
    assert_eq!(
        loaded.messages[5..],
        [Message::user("book it"), calls, c1, lost.clone()]
    );

    // Continuing the conversation keeps the repaired view stable.
    store
        .append(
            "crash",
            &[Message::user("status?"), Message::assistant("The hotel is unknown.")],
            &TurnMeta::default(),
        )
        .await
        .unwrap();
    let continued = store.load("crash").await.unwrap().unwrap();
    assert!(is_sendable(&continued.messages));
    assert_eq!(continued.messages[..loaded.messages.len()], loaded.messages[..]);
    assert_eq!(continued.messages[8], lost);
}

#[tokio::test]
async fn concurrent_tasks_append_whole_turns_and_lose_nothing() {
    let (_dir, store) = temp_store();
    store.create("busy").await.unwrap();
    let store: Arc<dyn ConversationStore> = Arc::new(store);
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for i in 0..10 {
                    let turn = rich_turn(&format!("k{task}x{i}"));
                    store.append("busy", &turn, &TurnMeta::default()).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let loaded = store.load("busy").await.unwrap().unwrap();
    assert_eq!(loaded.messages.len(), 8 * 10 * 5);
    for chunk in loaded.messages.chunks(5) {
        let Message::User { content, .. } = &chunk[0] else {
            panic!("a turn starts with its user message")
        };
        let tag = content.split(':').next().unwrap();
        assert_eq!(chunk, rich_turn(tag), "turns are never interleaved");
    }
}

#[tokio::test]
async fn a_damaged_row_names_the_message_and_a_newer_schema_is_refused() {
    let (dir, store) = temp_store();
    let path = dir.path().join("store.db");
    store.create("trip").await.unwrap();
    store
        .append("trip", &rich_turn("a"), &TurnMeta::default())
        .await
        .unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("UPDATE messages SET body = '{\"role\":\"nobody\"}' WHERE seq = 3", [])
        .unwrap();
    let error = store.load("trip").await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(
        error.to_string().contains("message 3 of conversation `trip`"),
        "{error}"
    );

    raw.pragma_update(None, "user_version", 99).unwrap();
    drop(raw);
    let error = SqliteStore::open(&path).unwrap_err();
    assert!(error.to_string().contains("schema version 99"), "{error}");
}

/// The schema of version 1, as the first release wrote it.
const SCHEMA_V1: &str = r"
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    user_turns INTEGER NOT NULL DEFAULT 0,
    turn_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_update ON conversations (updated_at DESC, name);
CREATE TABLE messages (
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;
PRAGMA user_version = 1;
";

#[tokio::test]
async fn a_version_1_file_is_upgraded_and_keeps_its_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let turn = rich_turn("old");
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        let mode: String = raw
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        raw.execute_batch(SCHEMA_V1).unwrap();
        raw.execute(
            "INSERT INTO conversations (name, created_at, updated_at, provider, model, input_tokens, \
             output_tokens, cost_usd, message_count, user_turns, turn_count) \
             VALUES ('old', '2025-01-01T00:00:00.000Z', '2025-01-02T00:00:00.000Z', 'openai', 'gpt-4o', \
             100, 20, 0.5, 5, 1, 1)",
            [],
        )
        .unwrap();
        for (seq, message) in (0_i64..).zip(&turn) {
            raw.execute(
                "INSERT INTO messages (conversation_id, seq, turn, role, body) VALUES (1, ?1, 0, ?2, ?3)",
                rusqlite::params![
                    seq,
                    format!("{:?}", message.role()).to_lowercase(),
                    serde_json::to_string(message).unwrap()
                ],
            )
            .unwrap();
        }
    }

    let store = SqliteStore::open(&path).unwrap();
    let loaded = store.load("old").await.unwrap().unwrap();
    assert_eq!(loaded.messages, turn);
    assert_eq!((loaded.repairs, loaded.summarised), (0, 0));
    let meta = &loaded.meta;
    assert_eq!(
        (meta.created_at.as_str(), meta.updated_at.as_str()),
        ("2025-01-01T00:00:00.000Z", "2025-01-02T00:00:00.000Z")
    );
    assert_eq!((meta.provider.as_str(), meta.model.as_str()), ("openai", "gpt-4o"));
    assert_eq!(
        (meta.usage, meta.message_count, meta.user_turns),
        (Usage::new(100, 20), 5, 1)
    );
    assert!(!meta.has_checkpoint);
    assert_eq!(store.list().await.unwrap(), vec![meta.clone()]);
    let raw = rusqlite::Connection::open(&path).unwrap();
    let version: u32 = raw.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert_eq!(version, agent_store_sqlite::SCHEMA_VERSION);
    assert_eq!(version, 3);

    // The upgraded file does what a new one does.
    store
        .append("old", &rich_turn("new"), &TurnMeta::default())
        .await
        .unwrap();
    store.compact("old", 5, "Summary of the old turn.").await.unwrap();
    store.save_checkpoint("old", &json!({"step": 1})).await.unwrap();
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    let context = reopened.load("old").await.unwrap().unwrap();
    assert_eq!(
        context.messages,
        [vec![Message::system("Summary of the old turn.")], rich_turn("new")].concat()
    );
    assert!(context.meta.has_checkpoint);
    assert_eq!(
        reopened.transcript("old").await.unwrap().unwrap().messages,
        [turn, rich_turn("new")].concat()
    );
}

#[cfg(unix)]
#[tokio::test]
async fn the_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store) = temp_store();
    store.create("secret").await.unwrap();
    for name in ["store.db", "store.db-wal", "store.db-shm"] {
        let mode = std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{name}: {mode:o}");
    }
}
