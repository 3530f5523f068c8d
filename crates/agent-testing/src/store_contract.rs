//! The same checks run on `InMemoryStore`, the SQLite store and the
//! PostgreSQL store, so that a new
//! [`ConversationStore`](agent_core::ConversationStore) is held to exactly
//! what the others are.
//!
//! Each `check_*` function takes a new, empty store (it creates its own
//! conversations and expects to find no others), panics with what went
//! wrong when the store breaks the contract, and runs on Tokio (the
//! contract waits a few milliseconds between appends). A store's test file
//! calls each one from a test of its own, on a store of its own:
//!
//! ```text
//! #[tokio::test]
//! async fn the_sqlite_store_keeps_the_store_contract() {
//!     let (_dir, store) = temp_store();
//!     store_contract::check_contract(&store).await;
//! }
//! ```
//!
//! The whole contract, on the in-memory store:
//!
//! ```
//! use agent_store::InMemoryStore;
//! use agent_testing::store_contract;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! store_contract::check_contract(&InMemoryStore::new()).await;
//! store_contract::check_compaction(&InMemoryStore::new()).await;
//! store_contract::check_compaction_of_a_repaired_conversation(&InMemoryStore::new()).await;
//! store_contract::check_checkpoints(&InMemoryStore::new()).await;
//! # }
//! ```
//!
//! [`rich_turn`](crate::store_contract::rich_turn),
//! [`summary`](crate::store_contract::summary) and
//! [`assert_sendable`](crate::store_contract::assert_sendable) serve the
//! store's own tests too (reopening, crashes, concurrency).

// The links above are written out in full: with the doc comment on the
// declaration in lib.rs, rustdoc resolves them from the crate root.

// Test support: a store call that fails where the contract wants it to
// succeed panics with the store's error.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use agent_core::{
    AssistantMessage, ConversationMeta, ConversationStore, LOST_RESULT, Message, ReasoningBlock, StoreError, ToolCall,
    ToolResult, TurnMeta, Usage,
};
use agent_store::make_sendable;
use serde_json::{Value, json};

/// A turn of every kind of message: text, parallel tool calls with
/// malformed arguments, reasoning blocks, results (one failed), unicode.
/// Five messages; the user message starts with `{tag}:` and the call ids
/// are `{tag}-1` and `{tag}-2`, so turns with different tags differ.
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

/// The message a summary stands as at the start of a compacted context.
pub fn summary(text: &str) -> Message {
    Message::system(text)
}

/// Asserts that `messages` can be sent to a model as they are: each tool
/// call of an assistant message has exactly one result among the tool
/// messages directly after it, no tool result answers anything else, and no
/// call id repeats within one assistant message. The condition of
/// `agent_runner::history::is_sendable`, checked here with
/// [`make_sendable`] (which must find nothing to repair), as every
/// [`ConversationStore::load`] must return it.
#[track_caller]
pub fn assert_sendable(messages: &[Message]) {
    for (index, message) in messages.iter().enumerate() {
        if let Message::Assistant(assistant) = message {
            let mut ids = HashSet::new();
            for call in &assistant.tool_calls {
                assert!(
                    ids.insert(call.id.as_str()),
                    "not sendable: message {index} has two tool calls with the id `{}`",
                    call.id
                );
            }
        }
    }
    let mut repaired = messages.to_vec();
    let repairs = make_sendable(&mut repaired);
    if repairs > 0 {
        let first = messages
            .iter()
            .zip(&repaired)
            .position(|(stored, sendable)| stored != sendable)
            .unwrap_or(messages.len().min(repaired.len()));
        panic!(
            "not sendable: the repair adds or leaves out {repairs} message(s), the first at message {first}: \
             it is {:?}, sendable it would be {:?}",
            messages.get(first),
            repaired.get(first)
        );
    }
}

/// What every store must do with conversations: create (a name once),
/// append whole turns and sum their usage and cost into the metadata, load
/// them back exactly, list them most recently updated first, refuse invalid
/// names and unknown conversations, import a copy (keeping its timestamps
/// and totals, recounting its messages, refusing a clash) and delete one
/// with every message. Takes an empty store.
pub async fn check_contract(store: &dyn ConversationStore) {
    assert!(store.list().await.unwrap().is_empty());
    assert!(store.load("trip").await.unwrap().is_none());
    let created = store.create("trip").await.unwrap();
    assert_eq!((created.message_count, created.cost_usd), (0, 0.0));
    assert!(matches!(store.create("trip").await, Err(StoreError::Conflict { .. })));

    let delta = TurnMeta::new("openai", "gpt-4o-mini", Usage::new(100, 20), 0.25);
    store.append("trip", &rich_turn("a"), &delta).await.unwrap();
    let unnamed = TurnMeta {
        usage: Usage {
            cache_read_tokens: 7,
            reasoning_tokens: 3,
            ..Usage::new(1, 5)
        },
        cost_usd: 0.5,
        ..TurnMeta::default()
    };
    let meta = store.append("trip", &rich_turn("b"), &unnamed).await.unwrap();
    assert_eq!((meta.message_count, meta.user_turns), (10, 2));
    assert_eq!((meta.provider.as_str(), meta.model.as_str()), ("openai", "gpt-4o-mini"));
    assert_eq!(
        meta.usage,
        Usage {
            input_tokens: 101,
            output_tokens: 25,
            cache_read_tokens: 7,
            cache_write_tokens: 0,
            reasoning_tokens: 3
        }
    );
    assert!((meta.cost_usd - 0.75).abs() < 1e-12);
    assert!(meta.updated_at >= meta.created_at);

    let loaded = store.load("trip").await.unwrap().unwrap();
    assert_eq!(loaded.messages, [rich_turn("a"), rich_turn("b")].concat());
    assert_eq!((loaded.repairs, loaded.summarised, &loaded.meta), (0, 0, &meta));
    assert_eq!(store.meta("trip").await.unwrap(), Some(meta.clone()), "meta is load's");
    assert_eq!(store.meta("elsewhere").await.unwrap(), None);
    assert!(matches!(store.meta("../x").await, Err(StoreError::InvalidName { .. })));
    assert!(!meta.has_checkpoint);
    assert_eq!(
        store.transcript("trip").await.unwrap().unwrap(),
        loaded,
        "without a summary the transcript is the context"
    );

    store.create("other").await.unwrap();
    let names: Vec<String> = store.list().await.unwrap().into_iter().map(|m| m.name).collect();
    assert_eq!(names.len(), 2);
    // Timestamps have millisecond resolution.
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    store
        .append("trip", &[Message::user("again")], &TurnMeta::default())
        .await
        .unwrap();
    assert_eq!(
        store.list().await.unwrap()[0].name,
        "trip",
        "most recently updated first"
    );

    for bad in ["", "../etc", ".hidden", "a/b", "a b"] {
        assert!(
            matches!(store.create(bad).await, Err(StoreError::InvalidName { .. })),
            "{bad:?}"
        );
        assert!(matches!(store.load(bad).await, Err(StoreError::InvalidName { .. })));
        assert!(matches!(
            store.append(bad, &[], &TurnMeta::default()).await,
            Err(StoreError::InvalidName { .. })
        ));
        assert!(matches!(store.delete(bad).await, Err(StoreError::InvalidName { .. })));
    }
    assert!(matches!(
        store
            .append("missing", &[Message::user("x")], &TurnMeta::default())
            .await,
        Err(StoreError::NotFound { .. })
    ));

    // import keeps timestamps and totals, recounts messages, refuses a clash.
    let mut copy = store.load("trip").await.unwrap().unwrap();
    copy.meta.name = "copy".into();
    copy.meta.message_count = 0;
    let imported = store.import(&copy).await.unwrap();
    assert_eq!((imported.message_count, imported.user_turns), (11, 3));
    let reloaded = store.load("copy").await.unwrap().unwrap();
    assert_eq!(reloaded.messages, copy.messages);
    assert_eq!(reloaded.meta.created_at, copy.meta.created_at);
    assert_eq!(reloaded.meta.usage, copy.meta.usage);
    assert!(matches!(store.import(&copy).await, Err(StoreError::Conflict { .. })));

    store.delete("trip").await.unwrap();
    assert!(store.load("trip").await.unwrap().is_none());
    assert!(matches!(store.delete("trip").await, Err(StoreError::NotFound { .. })));
    let fresh = store.load_or_create("trip").await.unwrap();
    assert!(fresh.messages.is_empty(), "no message survives a delete");
    assert_eq!(store.load_or_create("copy").await.unwrap().messages.len(), 11);
}

/// The reason of the conflict `result` must be, on the conversation `long`.
#[track_caller]
fn conflict_reason(result: Result<ConversationMeta, StoreError>) -> String {
    match result {
        Err(StoreError::Conflict { name, reason }) => {
            assert_eq!(name, "long");
            reason
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// What compaction must do: refuse (changing nothing) to summarise no
/// message, more than there are, an empty summary, or a cut between a tool
/// call and its results; replace the first messages of the context with a
/// summary, keeping the metadata, the transcript (every stored message and
/// no summary) and the turns appended later; let a second summary replace
/// the first; refuse to import a compacted context but import its
/// transcript; and leave no summary behind a deleted conversation. Takes an
/// empty store.
pub async fn check_compaction(store: &dyn ConversationStore) {
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
    assert_sendable(&context.messages);

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
    // the same name (deleting `copy` first lets a store that numbers its
    // rows, as SQLite does, reuse the row id of `long`).
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

/// Compaction of a conversation whose second turn lost a tool result (the
/// load repairs it with a [`LOST_RESULT`] error): a cut before the repair
/// is allowed and keeps the repair in the context, a cut after it is
/// refused and changes nothing. Takes an empty store.
pub async fn check_compaction_of_a_repaired_conversation(store: &dyn ConversationStore) {
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

/// What run checkpoints must do: none at first; a save (of a large state
/// with every JSON type) reads back equal and shows in the metadata and the
/// list of that conversation only; a save replaces, a clear (twice) removes;
/// an append removes the appended conversation's checkpoint, compaction
/// keeps it, a delete takes it with the conversation; unknown conversations
/// and invalid names are refused. Takes an empty store.
pub async fn check_checkpoints(store: &dyn ConversationStore) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The panic message of `assert_sendable`, if it panics.
    fn refusal(messages: Vec<Message>) -> Option<String> {
        let caught = std::panic::catch_unwind(move || assert_sendable(&messages)).err()?;
        Some(caught.downcast_ref::<String>().cloned().unwrap_or_default())
    }

    /// What `agent_runner::history::is_sendable` refuses is refused.
    #[test]
    fn assert_sendable_refuses_what_cannot_be_sent() {
        let turn = rich_turn("a");
        assert_eq!(refusal([rich_turn("a"), rich_turn("b")].concat()), None);
        assert_eq!(refusal(Vec::new()), None);

        let mut lost = turn.clone();
        lost.remove(3);
        let refused = refusal(lost).unwrap();
        assert!(refused.contains("1 message(s), the first at message 3"), "{refused}");
        let refused = refusal(vec![turn[0].clone(), turn[2].clone()]).unwrap();
        assert!(refused.contains("the first at message 1"), "{refused}");
        let mut twice = turn.clone();
        twice.insert(3, turn[2].clone());
        let refused = refusal(twice).unwrap();
        assert!(refused.contains("the first at message 3"), "{refused}");
        let mut late = turn.clone();
        late.swap(3, 4);
        let refused = refusal(late).unwrap();
        assert!(refused.contains("2 message(s), the first at message 3"), "{refused}");

        // make_sendable finds nothing to repair here: the one result
        // answers both calls.
        let mut repeated = turn.clone();
        let Message::Assistant(calls) = &mut repeated[1] else {
            panic!("message 1 has the calls")
        };
        calls.tool_calls[1].id = "a-1".into();
        repeated.remove(3);
        let refused = refusal(repeated).unwrap();
        assert!(
            refused.contains("message 1 has two tool calls with the id `a-1`"),
            "{refused}"
        );
    }
}
