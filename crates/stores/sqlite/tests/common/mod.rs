//! Helpers shared by the test files.
#![allow(clippy::unwrap_used, dead_code)]

use agent_core::{AssistantMessage, Message, ReasoningBlock, ToolCall, ToolResult};
use agent_store_sqlite::SqliteStore;
use serde_json::json;

/// A store on `store.db` in a new temporary directory.
pub fn temp_store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("store.db")).unwrap();
    (dir, store)
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
