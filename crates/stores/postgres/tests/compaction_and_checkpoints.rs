//! Compaction (summaries) and run checkpoints: the shared contract
//! (`agent_testing::store_contract`), as the SQLite store's tests check it,
//! then what only the database can show (reconnecting, the rows behind a
//! context, atomicity of an append that fails half way, a damaged
//! checkpoint).
#![allow(clippy::unwrap_used)]

use agent_core::{ConversationStore, Message, StoreError, TurnMeta, Usage};
use agent_store_postgres::PostgresStore;
use agent_testing::store_contract::{
    check_checkpoints, check_compaction, check_compaction_of_a_repaired_conversation, rich_turn, summary,
};
use common::{execute, temp_store};
use serde_json::json;
use sqlx_core::query_as::query_as;
use sqlx_core::query_scalar::query_scalar;

mod common;

#[tokio::test]
async fn the_postgres_store_compacts() {
    let Some((_, store)) = temp_store("compacts").await else {
        return;
    };
    check_compaction(&store).await;
}

#[tokio::test]
async fn the_postgres_store_compacts_a_repaired_conversation_only_before_the_repair() {
    let Some((_, store)) = temp_store("compacts_repaired").await else {
        return;
    };
    check_compaction_of_a_repaired_conversation(&store).await;
}

#[tokio::test]
async fn the_postgres_store_keeps_checkpoints() {
    let Some((_, store)) = temp_store("checkpoints").await else {
        return;
    };
    check_checkpoints(&store).await;
}

#[tokio::test]
async fn reopening_gives_the_same_context_transcript_and_checkpoint() {
    let Some((url, store)) = temp_store("reopening_compacted").await else {
        return;
    };
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
    store.close().await;
    drop(store);

    let reopened = PostgresStore::connect(&url).await.unwrap();
    let after = reopened.load("trip").await.unwrap().unwrap();
    assert_eq!(after, context);
    assert_eq!(after.messages, [vec![summary("S2")], rich_turn("c")].concat());
    assert_eq!(after.summarised, 10);
    assert_eq!(reopened.transcript("trip").await.unwrap().unwrap(), transcript);
    assert_eq!(transcript.messages.len(), 15);
    assert_eq!(reopened.checkpoint("trip").await.unwrap(), Some(checkpoint));
    assert_eq!(reopened.list().await.unwrap(), listed);
    assert!(listed[0].has_checkpoint);

    // Nothing is deleted: both summaries and every message are in the database.
    let summaries: Vec<(i64, String)> = query_as("SELECT summarised, content FROM summaries ORDER BY id")
        .fetch_all(reopened.pool())
        .await
        .unwrap();
    assert_eq!(summaries, [(5, "S1".to_owned()), (10, "S2".to_owned())]);
    let rows: i64 = query_scalar("SELECT count(*) FROM messages")
        .fetch_one(reopened.pool())
        .await
        .unwrap();
    assert_eq!(rows, 15);

    // Deleting the conversation deletes every row of it.
    reopened.delete("trip").await.unwrap();
    for table in ["conversations", "messages", "summaries", "checkpoints"] {
        let rows: i64 = query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(reopened.pool())
            .await
            .unwrap();
        assert_eq!(rows, 0, "{table}");
    }
}

#[tokio::test]
async fn an_append_and_the_removal_of_the_checkpoint_succeed_or_fail_together() {
    let Some((_, store)) = temp_store("append_atomic").await else {
        return;
    };
    store.create("run").await.unwrap();
    let checkpoint = json!({"step": 3});
    store.save_checkpoint("run", &checkpoint).await.unwrap();

    // The messages cannot be stored: the checkpoint stays.
    execute(
        &store,
        "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.body LIKE '%boom%' THEN RAISE EXCEPTION 'boom refused'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER refuse_boom BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_boom();",
    )
    .await;
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
    execute(
        &store,
        "CREATE FUNCTION keep_checkpoints() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN RAISE EXCEPTION 'checkpoint kept'; END $$; \
         CREATE TRIGGER keep_checkpoints BEFORE DELETE ON checkpoints FOR EACH ROW EXECUTE FUNCTION keep_checkpoints();",
    )
    .await;
    let failed = store.append("run", &[Message::user("hi")], &TurnMeta::default()).await;
    assert!(matches!(failed, Err(StoreError::Backend { .. })), "{failed:?}");
    let loaded = store.load("run").await.unwrap().unwrap();
    assert_eq!((loaded.messages.len(), loaded.meta.message_count), (0, 0));
    assert!(loaded.meta.has_checkpoint);

    execute(
        &store,
        "DROP TRIGGER keep_checkpoints ON checkpoints; DROP TRIGGER refuse_boom ON messages;",
    )
    .await;
    store
        .append("run", &[Message::user("hi")], &TurnMeta::default())
        .await
        .unwrap();
    assert_eq!(store.checkpoint("run").await.unwrap(), None);
}

#[tokio::test]
async fn a_damaged_checkpoint_names_its_conversation() {
    let Some((_, store)) = temp_store("damaged_checkpoint").await else {
        return;
    };
    store.create("run").await.unwrap();
    store.save_checkpoint("run", &json!({"step": 1})).await.unwrap();
    execute(&store, r#"UPDATE checkpoints SET body = '{"step":'"#).await;
    let error = store.checkpoint("run").await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(
        error.to_string().contains("run checkpoint of conversation `run`"),
        "{error}"
    );
}
