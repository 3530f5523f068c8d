//! The store's behaviour: the shared contract (`agent_testing::store_contract`,
//! as the SQLite store's tests check it), reopening, crash repair, exact
//! round trips, damaged rows, a newer schema, and what `Debug` and errors
//! show of the URL.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agent_core::{
    AssistantMessage, ConversationStore, LOST_RESULT, Message, StoreError, ToolCall, ToolResult, TurnMeta, Usage,
};
use agent_runner::history::is_sendable;
use agent_store_postgres::{LATEST_MIGRATION, PgPoolOptions, PostgresStore};
use agent_testing::store_contract::{check_contract, rich_turn};
use common::{cluster, execute, temp_store};
use serde_json::json;

mod common;

#[tokio::test]
async fn the_postgres_store_keeps_the_store_contract() {
    let Some((_, store)) = temp_store("contract").await else {
        return;
    };
    check_contract(&store).await;
}

#[tokio::test]
async fn reopening_gives_identical_messages_and_metadata() {
    let Some((url, store)) = temp_store("reopening").await else {
        return;
    };
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
    store.close().await;
    drop(store);

    let reopened = PostgresStore::connect(&url).await.unwrap();
    let after = reopened.load("trip").await.unwrap().unwrap();
    assert_eq!(after, before);
    assert_eq!(after.messages, expected);
    assert_eq!(reopened.list().await.unwrap(), listed);
    assert_eq!(after.meta.usage, Usage::new(50, 5));
    assert!((after.meta.cost_usd - 0.5).abs() < 1e-12);
    assert!(is_sendable(&after.messages));
}

#[tokio::test]
async fn messages_come_back_byte_for_byte() {
    let Some((url, store)) = temp_store("byte_for_byte").await else {
        return;
    };
    // Key order (JSONB would sort it), a NUL character (JSONB refuses it),
    // numbers JSON keeps as written, and text of every plane.
    let arguments = json!({"zeta": 1, "alpha": {"b": 2.50, "a": [true, null]}, "big": 12_345_678_901_234_567_u64});
    let turn = vec![
        Message::user("nul \u{0} tab \t quote \" backslash \\ emoji 🦀 cjk 東京 rtl שלום"),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("c1", "f", arguments)],
        )),
        Message::tool(ToolResult::success("c1", "f", "\u{0}\u{1f}")),
    ];
    store.create("exact").await.unwrap();
    store.append("exact", &turn, &TurnMeta::default()).await.unwrap();
    let reopened = PostgresStore::connect(&url).await.unwrap();
    let loaded = reopened.load("exact").await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_string(&loaded.messages).unwrap(),
        serde_json::to_string(&turn).unwrap(),
        "the same JSON text, keys in the same order"
    );
}

#[tokio::test]
async fn a_crash_between_a_tool_call_and_its_result_loads_as_a_sendable_conversation() {
    let Some((url, store)) = temp_store("crash").await else {
        return;
    };
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

    let store = PostgresStore::connect(&url).await.unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_tasks_append_whole_turns_and_lose_nothing() {
    let Some((_, store)) = temp_store("concurrent_tasks").await else {
        return;
    };
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
    let Some((url, store)) = temp_store("damaged").await else {
        return;
    };
    store.create("trip").await.unwrap();
    store
        .append("trip", &rich_turn("a"), &TurnMeta::default())
        .await
        .unwrap();
    execute(
        &store,
        r#"UPDATE messages SET body = '{"role":"nobody"}' WHERE seq = 3"#,
    )
    .await;
    let error = store.load("trip").await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(
        error.to_string().contains("message 3 of conversation `trip`"),
        "{error}"
    );
    let error = store.transcript("trip").await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    execute(&store, "UPDATE messages SET body = 'not json' WHERE seq = 0").await;
    let error = store.compact("trip", 1, "S").await.unwrap_err();
    assert!(
        error.to_string().contains("message 0 of conversation `trip`"),
        "{error}"
    );

    // A migration this version does not know: written by a newer one.
    let newer = LATEST_MIGRATION + 1;
    execute(
        &store,
        &format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({newer}, 'from the future', true, '\\x00', 0)"
        ),
    )
    .await;
    // Refused through an existing pool, then through a new one: the first
    // refusal released the migrator's advisory lock (or the second would
    // wait for it forever).
    let error = PostgresStore::from_pool(store.pool().clone()).await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    let connect = tokio::time::timeout(std::time::Duration::from_secs(20), PostgresStore::connect(&url));
    let error = connect.await.expect("the migrator's lock was released").unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains(&format!("schema migration {newer}, written by a newer agentry")),
        "{error}"
    );
}

#[tokio::test]
async fn two_stores_starting_at_once_on_a_new_database_both_migrate_it() {
    let Some(url) = common::database("starting_at_once").await else {
        return;
    };
    let (first, second) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    let (first, second) = (first.unwrap(), second.unwrap());
    first.create("trip").await.unwrap();
    assert_eq!(second.list().await.unwrap()[0].name, "trip");
    // A pool built elsewhere works too, and finds the schema in place.
    let pool = PgPoolOptions::new().max_connections(2).connect(&url).await.unwrap();
    let third = PostgresStore::from_pool(pool).await.unwrap();
    assert!(third.load("trip").await.unwrap().is_some());
}

#[tokio::test]
async fn debug_and_errors_never_show_the_password() {
    let Some(cluster) = cluster() else {
        return;
    };
    cluster.create_database("password").await.unwrap();
    // The server trusts every local connection: any password is accepted.
    let url = format!("postgres://postgres:s3cret-pw@127.0.0.1:{}/password", cluster.port());
    let store = PostgresStore::connect(&url).await.unwrap();
    for shown in [
        format!("{store:?}"),
        format!("{store:#?}"),
        format!("{:?}", store.clone()),
    ] {
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains(&format!("postgres@127.0.0.1:{}/password", cluster.port())),
            "{shown}"
        );
    }

    // A database that is not there, a bad URL.
    for url in [
        format!("postgres://postgres:s3cret-pw@127.0.0.1:{}/missing", cluster.port()),
        "postgres://postgres:s3cret-pw@127.0.0.1:notaport/db".to_owned(),
    ] {
        let error = PostgresStore::connect(&url).await.unwrap_err();
        assert!(matches!(error, StoreError::Backend { .. }), "{error}");
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }
    // A server that is not there (`connect` would retry for sqlx's acquire
    // timeout, 30 s; this pool gives up after one).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let pool = PgPoolOptions::new()
        .acquire_timeout(std::time::Duration::from_secs(1))
        .connect_lazy(&format!("postgres://postgres:s3cret-pw@127.0.0.1:{port}/db"))
        .unwrap();
    let error = PostgresStore::from_pool(pool).await.unwrap_err();
    assert!(matches!(error, StoreError::Backend { .. }), "{error}");
    assert!(!error.to_string().contains("s3cret"), "{error}");
    assert!(
        error.to_string().contains(&format!("postgres@127.0.0.1:{port}/db")),
        "{error}"
    );
}
