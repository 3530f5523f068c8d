//! Helpers shared by the test files: one PostgreSQL server per test binary
//! (a `TempCluster`), a database of its own per test.
#![allow(clippy::unwrap_used, dead_code)]

use std::sync::OnceLock;

use agent_core::{AssistantMessage, Message, ReasoningBlock, ToolCall, ToolResult};
use agent_store_postgres::PostgresStore;
use agent_store_postgres::testing::TempCluster;
use serde_json::json;

/// The server of this test binary; `None` when PostgreSQL is not installed
/// (and `AGENTRY_REQUIRE_POSTGRES` is not set). Never dropped: its watchdog
/// stops it when the binary exits.
pub fn cluster() -> Option<&'static TempCluster> {
    static CLUSTER: OnceLock<Result<Option<TempCluster>, String>> = OnceLock::new();
    match CLUSTER.get_or_init(TempCluster::start) {
        Ok(cluster) => cluster.as_ref(),
        Err(error) => panic!("{error}"),
    }
}

/// The URL of a new database named after `test`; `None` (after saying so)
/// when the test should skip.
pub async fn database(test: &str) -> Option<String> {
    let Some(cluster) = cluster() else {
        eprintln!("skipped {test}: PostgreSQL is not installed");
        return None;
    };
    Some(cluster.create_database(test).await.unwrap())
}

/// A store on a new database named after `test`, with the database's URL.
pub async fn temp_store(test: &str) -> Option<(String, PostgresStore)> {
    let url = database(test).await?;
    let store = PostgresStore::connect(&url).await.unwrap();
    Some((url, store))
}

/// Runs `sql` (statements without parameters) on the store's database,
/// outside the store: to damage rows, add triggers and look at the tables.
pub async fn execute(store: &PostgresStore, sql: &str) {
    use sqlx_core::executor::Executor as _;
    store.pool().execute(sql).await.unwrap();
}

/// A turn of every kind of message: text, parallel tool calls with
/// malformed arguments, reasoning blocks, results (one failed), unicode.
pub fn rich_turn(tag: &str) -> Vec<Message> {
    let mut malformed = ToolCall::from_argument_text(format!("{tag}-2"), "calc", "{1 + }");
    malformed.raw_arguments = Some("{1 + }".into());
    vec![
        Message::user(format!("{tag}: weather in Tōkyō? 🌧")),
        Message::Assistant(AssistantMessage {
            content: "Looking it up.".into(),
            tool_calls: vec![
                ToolCall::new(
                    format!("{tag}-1"),
                    "get_weather",
                    json!({"location": "Tokyo", "days": [1, 2]}),
                ),
                malformed,
            ],
            reasoning: vec![ReasoningBlock {
                text: "think".into(),
                signature: Some("sig==".into()),
                data: Some(json!({"opaque": true})),
                provider: Some("anthropic".into()),
            }],
        }),
        Message::tool(ToolResult::success(format!("{tag}-1"), "get_weather", r#"{"temp":21}"#)),
        Message::tool(ToolResult::error(format!("{tag}-2"), "calc", "invalid arguments")),
        Message::assistant(format!("{tag}: sunny, 21°C.")),
    ]
}
