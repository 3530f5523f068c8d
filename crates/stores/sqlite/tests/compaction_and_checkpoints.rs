//! Compaction (summaries) and run checkpoints: the shared contract
//! (`agent_testing::store_contract`), run on the SQLite store and on the
//! in-memory one, then what only a file can show (reopening, atomicity of an
//! append that fails half way).
#![allow(clippy::unwrap_used)]

use agent_core::{ConversationStore, Message, StoreError, TurnMeta, Usage};
use agent_store::InMemoryStore;
use agent_store_sqlite::SqliteStore;
use agent_testing::store_contract::{
    check_checkpoints, check_compaction, check_compaction_of_a_repaired_conversation, rich_turn, summary,
};
use common::temp_store;
use serde_json::json;

mod common;

#[tokio::test]
async fn the_sqlite_store_compacts() {
    let (_dir, store) = temp_store();
    check_compaction(&store).await;
}

#[tokio::test]
async fn the_in_memory_store_compacts() {
    check_compaction(&InMemoryStore::new()).await;
}

#[tokio::test]
async fn the_sqlite_store_compacts_a_repaired_conversation_only_before_the_repair() {
    let (_dir, store) = temp_store();
    check_compaction_of_a_repaired_conversation(&store).await;
}

#[tokio::test]
async fn the_in_memory_store_compacts_a_repaired_conversation_only_before_the_repair() {
    check_compaction_of_a_repaired_conversation(&InMemoryStore::new()).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_checkpoints() {
    let (_dir, store) = temp_store();
    check_checkpoints(&store).await;
}

#[tokio::test]
async fn the_in_memory_store_keeps_checkpoints() {
    check_checkpoints(&InMemoryStore::new()).await;
}

#[tokio::test]
async fn reopening_gives_the_same_context_transcript_and_checkpoint() {
    let (dir, store) = temp_store();
    store.create("trip").await.unwrap();
    for tag in ["a", "b", "c"] {
        store
            .append(
                "trip",
                &rich_turn(tag),
                &TurnMeta::new("anthropic", "claude", Usage::new(1, 1), 0.1),
            )
            .await
            .unwrap();
    }
    store.compact("trip", 5, "S1").await.unwrap();
    store.compact("trip", 6, "S2").await.unwrap();
    let checkpoint = json!({"step": 7, "messages": [{"role": "user", "content": "é"}]});
    store.save_checkpoint("trip", &checkpoint).await.unwrap();
    let context = store.load("trip").await.unwrap().unwrap();
    let transcript = store.transcript("trip").await.unwrap().unwrap();
    let listed = store.list().await.unwrap();
    drop(store);

    let reopened = SqliteStore::open(dir.path().join("store.db")).unwrap();
    let after = reopened.load("trip").await.unwrap().unwrap();
    assert_eq!(after, context);
    assert_eq!(after.messages, [vec![summary("S2")], rich_turn("c")].concat());
    assert_eq!(after.summarised, 10);
    assert_eq!(reopened.transcript("trip").await.unwrap().unwrap(), transcript);
    assert_eq!(transcript.messages.len(), 15);
    assert_eq!(reopened.checkpoint("trip").await.unwrap(), Some(checkpoint));
    assert_eq!(reopened.list().await.unwrap(), listed);
    assert!(listed[0].has_checkpoint);

    // Nothing is deleted: both summaries and every message are in the file.
    let raw = rusqlite::Connection::open(dir.path().join("store.db")).unwrap();
    let summaries: Vec<(i64, String)> = raw
        .prepare("SELECT summarised, content FROM summaries ORDER BY id")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(summaries, [(5, "S1".to_owned()), (10, "S2".to_owned())]);
    let rows: i64 = raw
        .query_row("SELECT count(*) FROM messages", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 15);
}

#[tokio::test]
async fn an_append_and_the_removal_of_the_checkpoint_succeed_or_fail_together() {
    let (dir, store) = temp_store();
    store.create("run").await.unwrap();
    let checkpoint = json!({"step": 3});
    store.save_checkpoint("run", &checkpoint).await.unwrap();
    let raw = rusqlite::Connection::open(dir.path().join("store.db")).unwrap();

    // The messages cannot be stored: the checkpoint stays.
    raw.execute_batch(
        "CREATE TRIGGER refuse_boom BEFORE INSERT ON messages WHEN NEW.body LIKE '%boom%' \
         BEGIN SELECT RAISE(ABORT, 'boom refused'); END;",
    )
    .unwrap();
    let failed = store
        .append(
            "run",
            &[Message::user("ok"), Message::user("boom")],
            &TurnMeta::default(),
        )
        .await;
    assert!(matches!(failed, Err(StoreError::Backend { .. })), "{failed:?}");
    assert_eq!(store.checkpoint("run").await.unwrap(), Some(checkpoint.clone()));
    assert!(store.transcript("run").await.unwrap().unwrap().messages.is_empty());

    // The checkpoint cannot be removed: the messages are not stored either.
    raw.execute_batch(
        "CREATE TRIGGER keep_checkpoints BEFORE DELETE ON checkpoints \
         BEGIN SELECT RAISE(ABORT, 'checkpoint kept'); END;",
    )
    .unwrap();
    let failed = store.append("run", &[Message::user("hi")], &TurnMeta::default()).await;
    assert!(matches!(failed, Err(StoreError::Backend { .. })), "{failed:?}");
    let loaded = store.load("run").await.unwrap().unwrap();
    assert_eq!((loaded.messages.len(), loaded.meta.message_count), (0, 0));
    assert!(loaded.meta.has_checkpoint);

    raw.execute_batch("DROP TRIGGER keep_checkpoints; DROP TRIGGER refuse_boom;")
        .unwrap();
    store
        .append("run", &[Message::user("hi")], &TurnMeta::default())
        .await
        .unwrap();
    assert_eq!(store.checkpoint("run").await.unwrap(), None);
}

#[tokio::test]
async fn a_damaged_checkpoint_names_its_conversation() {
    let (dir, store) = temp_store();
    store.create("run").await.unwrap();
    store.save_checkpoint("run", &json!({"step": 1})).await.unwrap();
    let raw = rusqlite::Connection::open(dir.path().join("store.db")).unwrap();
    raw.execute("UPDATE checkpoints SET body = '{\"step\":'", []).unwrap();
    let error = store.checkpoint("run").await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(
        error.to_string().contains("run checkpoint of conversation `run`"),
        "{error}"
    );
}
