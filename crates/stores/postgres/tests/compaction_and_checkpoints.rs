//! Compaction (summaries) and run checkpoints: the shared contract, as the
//! SQLite store's tests check it, then what only the database can show
//! (reconnecting, the rows behind a context, atomicity of an append that
//! fails half way, a damaged checkpoint).
#![allow(clippy::unwrap_used)]

use agent_core::{
    AssistantMessage, ConversationStore, LOST_RESULT, Message, StoreError, ToolCall, ToolResult, TurnMeta, Usage,
};
use agent_runner::history::is_sendable;
use agent_store_postgres::PostgresStore;
use common::{execute, rich_turn, temp_store};
use serde_json::{Value, json};
use sqlx_core::query_as::query_as;
use sqlx_core::query_scalar::query_scalar;

mod common;

fn conflict_reason(result: Result<agent_core::ConversationMeta, StoreError>) -> String {
    match result {
        Err(StoreError::Conflict { name, reason }) => {
            assert_eq!(name, "long");
            reason
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn summary(text: &str) -> Message {
    Message::system(text)
}

/// What compaction must do on every store.
async fn check_compaction(store: &dyn ConversationStore) {
    store.create("long").await.unwrap();
    let delta = TurnMeta::new("openai", "gpt-4o-mini", Usage::new(10, 2), 0.5);
    for tag in ["a", "b", "c"] {
        store.append("long", &rich_turn(tag), &delta).await.unwrap();
    }
    let before = store.load("long").await.unwrap().unwrap();
    assert_eq!(before.messages.len(), 15);

    // Refusals change nothing.
    assert!(conflict_reason(store.compact("long", 0, "S").await).contains("at least one message"));
    assert!(conflict_reason(store.compact("long", 16, "S").await).contains("only 15 messages"));
    // Messages 2 and 3 are the results of the calls in message 1.
    assert!(conflict_reason(store.compact("long", 2, "S").await).contains("tool call `a-1`"));
    assert!(conflict_reason(store.compact("long", 3, "S").await).contains("tool call `a-2`"));
    assert!(conflict_reason(store.compact("long", 5, "  ").await).contains("summary is empty"));
    assert!(matches!(
        store.compact("missing", 1, "S").await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.compact("../x", 1, "S").await,
        Err(StoreError::InvalidName { .. })
    ));
    assert_eq!(store.load("long").await.unwrap().unwrap(), before);

    // The first turn becomes a summary; metadata does not change.
    let meta = store.compact("long", 5, "S1").await.unwrap();
    assert_eq!(meta, before.meta);
    let context = store.load("long").await.unwrap().unwrap();
    let expected = [vec![summary("S1")], rich_turn("b"), rich_turn("c")].concat();
    assert_eq!(context.messages, expected);
    assert_eq!((context.summarised, context.repairs), (5, 0));
    assert_eq!((context.meta.message_count, context.meta.user_turns), (15, 3));
    assert!(is_sendable(&context.messages));

    // Turns appended later follow the summary.
    store.append("long", &rich_turn("d"), &delta).await.unwrap();
    let context = store.load("long").await.unwrap().unwrap();
    assert_eq!(context.messages[11..], rich_turn("d")[..]);

    // A second summary replaces the first one and turn b.
    store.compact("long", 6, "S2").await.unwrap();
    let context = store.load("long").await.unwrap().unwrap();
    let expected = [vec![summary("S2")], rich_turn("c"), rich_turn("d")].concat();
    assert_eq!(context.messages, expected);
    assert_eq!(context.summarised, 10);
    // Replacing only the summary keeps the count.
    store.compact("long", 1, "S3").await.unwrap();
    let context = store.load("long").await.unwrap().unwrap();
    assert_eq!(context.messages[0], summary("S3"));
    assert_eq!(context.messages[1..], expected[1..]);
    assert_eq!(context.summarised, 10);

    // The transcript has every stored message and no summary.
    let transcript = store.transcript("long").await.unwrap().unwrap();
    let all = [rich_turn("a"), rich_turn("b"), rich_turn("c"), rich_turn("d")].concat();
    assert_eq!(transcript.messages, all);
    assert_eq!((transcript.summarised, transcript.repairs), (0, 0));
    assert_eq!(transcript.meta.message_count, 20);
    assert!(store.transcript("missing").await.unwrap().is_none());

    // The whole context, summary included, can be summarised.
    store.compact("long", 11, "S4").await.unwrap();
    let context = store.load("long").await.unwrap().unwrap();
    assert_eq!((context.messages, context.summarised), (vec![summary("S4")], 20));
    store
        .append("long", &[Message::user("next")], &TurnMeta::default())
        .await
        .unwrap();
    let context = store.load("long").await.unwrap().unwrap();
    assert_eq!(context.messages, [summary("S4"), Message::user("next")]);

    // A compacted context cannot be imported (its summarised messages are
    // missing); its transcript can, and has no summary.
    let mut copy = store.load("long").await.unwrap().unwrap();
    copy.meta.name = "copy".into();
    assert!(matches!(store.import(&copy).await, Err(StoreError::Conflict { .. })));
    let mut copy = store.transcript("long").await.unwrap().unwrap();
    copy.meta.name = "copy".into();
    let imported = store.import(&copy).await.unwrap();
    assert_eq!(imported.message_count, 21);
    let loaded = store.load("copy").await.unwrap().unwrap();
    assert_eq!((loaded.messages.len(), loaded.summarised), (21, 0));

    // A deleted conversation's summary does not come back with a new one of
    // the same name (the rows are keyed by name: the delete cascades).
    store.delete("copy").await.unwrap();
    store.delete("long").await.unwrap();
    let fresh = store.load_or_create("long").await.unwrap();
    assert_eq!((fresh.messages.len(), fresh.summarised), (0, 0));
    store
        .append("long", &[Message::user("again")], &TurnMeta::default())
        .await
        .unwrap();
    let loaded = store.load("long").await.unwrap().unwrap();
    assert_eq!((loaded.messages, loaded.summarised), (vec![Message::user("again")], 0));
}

/// A conversation whose second turn lost a tool result: compaction may cut
/// before the repair, not after it.
async fn check_compaction_of_a_repaired_conversation(store: &dyn ConversationStore) {
    store.create("long").await.unwrap();
    let calls = Message::Assistant(AssistantMessage::with_tool_calls(
        "",
        vec![
            ToolCall::new("c1", "book_flight", json!({})),
            ToolCall::new("c2", "book_hotel", json!({})),
        ],
    ));
    let c1 = Message::tool(ToolResult::success("c1", "book_flight", "booked"));
    let turns = [
        vec![Message::user("hi"), Message::assistant("hello")],
        vec![Message::user("book"), calls.clone()],
        vec![c1.clone()],
        vec![Message::user("status?"), Message::assistant("unknown")],
    ];
    for turn in &turns {
        store.append("long", turn, &TurnMeta::default()).await.unwrap();
    }
    let lost = Message::tool(ToolResult::error("c2", "book_hotel", LOST_RESULT));
    let before = store.load("long").await.unwrap().unwrap();
    assert_eq!(before.repairs, 1);
    assert_eq!(before.messages[4..6], [c1.clone(), lost.clone()]);

    for replaced in [6, 8] {
        let reason = conflict_reason(store.compact("long", replaced, "S").await);
        assert!(reason.contains("1 of them were added or left out"), "{reason}");
    }
    assert_eq!(store.load("long").await.unwrap().unwrap(), before);

    store.compact("long", 2, "S").await.unwrap();
    let context = store.load("long").await.unwrap().unwrap();
    let expected = vec![
        summary("S"),
        Message::user("book"),
        calls,
        c1,
        lost,
        Message::user("status?"),
        Message::assistant("unknown"),
    ];
    assert_eq!(
        (context.messages, context.summarised, context.repairs),
        (expected, 2, 1)
    );
}

/// What run checkpoints must do on every store.
async fn check_checkpoints(store: &dyn ConversationStore) {
    store.create("run").await.unwrap();
    store.create("other").await.unwrap();
    assert_eq!(store.checkpoint("run").await.unwrap(), None);
    assert!(store.list().await.unwrap().iter().all(|meta| !meta.has_checkpoint));

    // A large state with a history, unicode and every JSON type.
    let history: Vec<Value> = (0..200)
        .map(|i| json!({"role": "user", "content": format!("message {i}: {}", "Tōkyō 🌧 ".repeat(50))}))
        .collect();
    let first = json!({"step": 1, "history": history, "done": false, "cost": 0.25, "stop": null});
    store.save_checkpoint("run", &first).await.unwrap();
    assert_eq!(store.checkpoint("run").await.unwrap(), Some(first.clone()));
    assert_eq!(store.checkpoint("other").await.unwrap(), None);
    let listed: Vec<(String, bool)> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|meta| (meta.name, meta.has_checkpoint))
        .collect();
    assert!(listed.contains(&("run".into(), true)), "{listed:?}");
    assert!(listed.contains(&("other".into(), false)), "{listed:?}");
    assert!(store.load("run").await.unwrap().unwrap().meta.has_checkpoint);

    // A save replaces the checkpoint; clearing twice is fine.
    let second = json!({"step": 2, "b": 1, "a": [1, 2]});
    store.save_checkpoint("run", &second).await.unwrap();
    assert_eq!(store.checkpoint("run").await.unwrap(), Some(second.clone()));
    store.clear_checkpoint("run").await.unwrap();
    store.clear_checkpoint("run").await.unwrap();
    assert_eq!(store.checkpoint("run").await.unwrap(), None);
    assert!(!store.load("run").await.unwrap().unwrap().meta.has_checkpoint);

    // An appended turn ends the run: its checkpoint goes with the append.
    store.save_checkpoint("run", &second).await.unwrap();
    store.save_checkpoint("other", &first).await.unwrap();
    let meta = store
        .append("run", &rich_turn("a"), &TurnMeta::default())
        .await
        .unwrap();
    assert!(!meta.has_checkpoint);
    assert_eq!(store.checkpoint("run").await.unwrap(), None);
    assert_eq!(
        store.checkpoint("other").await.unwrap(),
        Some(first.clone()),
        "only the appended conversation's"
    );
    // Compaction is not a turn: it keeps the checkpoint.
    store.save_checkpoint("run", &second).await.unwrap();
    store.compact("run", 5, "S").await.unwrap();
    assert_eq!(store.checkpoint("run").await.unwrap(), Some(second.clone()));

    // Delete removes it: a new conversation of that name has none.
    store.delete("other").await.unwrap();
    store.create("other").await.unwrap();
    assert_eq!(store.checkpoint("other").await.unwrap(), None);
    assert!(!store.load("other").await.unwrap().unwrap().meta.has_checkpoint);

    for missing in [
        store.save_checkpoint("missing", &first).await,
        store.checkpoint("missing").await.map(|_| ()),
        store.clear_checkpoint("missing").await,
    ] {
        assert!(
            matches!(missing, Err(StoreError::NotFound { ref name }) if name == "missing"),
            "{missing:?}"
        );
    }
    assert!(matches!(
        store.save_checkpoint("a b", &first).await,
        Err(StoreError::InvalidName { .. })
    ));
}

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
