//! The conversation store port: named conversations that outlive a process.
//!
//! A [`ConversationStore`] keeps conversations by name, each with its
//! [`ConversationMeta`] (timestamps, the provider and model of the last run,
//! usage and cost totals). Messages are only ever added a turn at a time with
//! [`ConversationStore::append`], which is atomic: either every message of the
//! turn and its metadata delta are stored, or none is.
//!
//! # A loaded conversation is always sendable
//!
//! Append a model turn together with its tool results and a crash can never
//! separate them. A caller may still append an assistant message whose tool
//! calls have no results yet (for instance to record the calls before running
//! slow tools) and then die before appending the results. Every
//! implementation therefore passes what it loads through [`make_sendable`]:
//! each tool call left without a result gets an error result saying
//! [`LOST_RESULT`], inserted right after the results that did arrive, and a
//! tool result that answers no call of the assistant message before it is
//! left out. The stored rows are not changed, so loading is deterministic:
//! every load shows the same repaired conversation, and
//! [`Conversation::repairs`] says how many messages were added or left out.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Message, ToolResult, Usage};

/// The longest conversation name, in bytes.
pub const MAX_CONVERSATION_NAME_LEN: usize = 64;

/// The content of the error result [`make_sendable`] gives a tool call whose
/// result was never stored.
pub const LOST_RESULT: &str = "The result was lost: the process ended before the tool finished.";

/// What is known about a stored conversation, without its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationMeta {
    /// Its name (see [`validate_conversation_name`]).
    pub name: String,
    /// When it was created (RFC 3339, UTC, milliseconds).
    pub created_at: String,
    /// When a turn was last appended (RFC 3339, UTC, milliseconds).
    pub updated_at: String,
    /// The provider of the last turn that named one; empty before any.
    #[serde(default)]
    pub provider: String,
    /// The model of the last turn that named one; empty before any.
    #[serde(default)]
    pub model: String,
    /// Tokens used by every turn.
    #[serde(default)]
    pub usage: Usage,
    /// Estimated cost of every turn whose price was known, in USD.
    #[serde(default)]
    pub cost_usd: f64,
    /// Messages stored (before any repair by [`make_sendable`]).
    #[serde(default)]
    pub message_count: u64,
    /// User messages stored: the turns a person sees.
    #[serde(default)]
    pub user_turns: u64,
}

impl ConversationMeta {
    /// The metadata of a new, empty conversation created at `now`
    /// (a timestamp from [`utc_timestamp`]).
    pub fn new(name: impl Into<String>, now: impl Into<String>) -> Self {
        let now = now.into();
        Self {
            name: name.into(),
            created_at: now.clone(),
            updated_at: now,
            provider: String::new(),
            model: String::new(),
            usage: Usage::default(),
            cost_usd: 0.0,
            message_count: 0,
            user_turns: 0,
        }
    }

    /// Adds one appended turn (`messages` and `delta`) to the totals and sets
    /// `updated_at` to `now`.
    pub fn record_turn(&mut self, messages: &[Message], delta: &TurnMeta, now: impl Into<String>) {
        self.message_count += messages.len() as u64;
        self.user_turns += count_user_messages(messages);
        if let Some(provider) = &delta.provider {
            provider.clone_into(&mut self.provider);
        }
        if let Some(model) = &delta.model {
            model.clone_into(&mut self.model);
        }
        self.usage += delta.usage;
        self.cost_usd += delta.cost_usd;
        self.updated_at = now.into();
    }
}

/// A stored conversation, ready to continue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// Its metadata.
    pub meta: ConversationMeta,
    /// The messages, in the order they were appended, made sendable.
    pub messages: Vec<Message>,
    /// How many messages [`make_sendable`] added or left out when loading;
    /// 0 for a conversation whose every tool call got its result.
    #[serde(default)]
    pub repairs: usize,
}

/// What one appended turn adds to a conversation's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnMeta {
    /// The provider that produced the turn; `None` keeps the stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model that produced the turn; `None` keeps the stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tokens the turn used, added to the total.
    #[serde(default)]
    pub usage: Usage,
    /// Estimated cost of the turn in USD, added to the total.
    #[serde(default)]
    pub cost_usd: f64,
}

impl TurnMeta {
    /// A turn produced by `model` of `provider`, which used `usage` and cost `cost_usd`.
    pub fn new(provider: impl Into<String>, model: impl Into<String>, usage: Usage, cost_usd: f64) -> Self {
        Self {
            provider: Some(provider.into()),
            model: Some(model.into()),
            usage,
            cost_usd,
        }
    }
}

/// A failed store operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// No conversation has that name.
    #[error("no conversation named `{name}`")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// The name cannot be used.
    #[error("invalid conversation name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The operation contradicts what is stored (e.g. creating a
    /// conversation that already exists).
    #[error("conversation `{name}`: {reason}")]
    Conflict {
        /// The conversation.
        name: String,
        /// What it contradicts.
        reason: String,
    },
    /// Stored data could not be read back (damaged or written by an
    /// incompatible version).
    #[error("the conversation store is damaged: {detail}")]
    Corrupt {
        /// What could not be read, and where.
        detail: String,
    },
    /// The storage behind the store failed (disk, database, lock timeout).
    #[error("the conversation store failed: {message}")]
    Backend {
        /// What failed, as the backend reported it.
        message: String,
    },
}

impl StoreError {
    /// The error for a missing conversation.
    pub fn not_found(name: impl Into<String>) -> Self {
        Self::NotFound { name: name.into() }
    }

    /// The error for creating a conversation that already exists.
    pub fn already_exists(name: impl Into<String>) -> Self {
        Self::Conflict {
            name: name.into(),
            reason: "a conversation of that name already exists".into(),
        }
    }

    /// A backend failure.
    pub fn backend(message: impl std::fmt::Display) -> Self {
        Self::Backend {
            message: message.to_string(),
        }
    }

    /// Damaged stored data.
    pub fn corrupt(detail: impl std::fmt::Display) -> Self {
        Self::Corrupt {
            detail: detail.to_string(),
        }
    }
}

/// Named conversations that outlive a process. Object safe: use it as
/// `Arc<dyn ConversationStore>`.
///
/// Every method validates the name first ([`validate_conversation_name`]).
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// Creates an empty conversation called `name`; a
    /// [`StoreError::Conflict`] when one exists.
    async fn create(&self, name: &str) -> Result<ConversationMeta, StoreError>;

    /// The conversation called `name`, made sendable ([`make_sendable`]);
    /// `None` when there is none.
    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError>;

    /// Appends one turn to `name` and adds `delta` to its metadata, as one
    /// atomic operation: after a crash either all of it is stored or none.
    /// Turns appended concurrently (by several tasks or processes) are
    /// stored one after the other, never interleaved. Returns the updated
    /// metadata; a [`StoreError::NotFound`] when `name` does not exist.
    async fn append(&self, name: &str, turn: &[Message], delta: &TurnMeta) -> Result<ConversationMeta, StoreError>;

    /// Every conversation's metadata, most recently updated first (ties by name).
    async fn list(&self) -> Result<Vec<ConversationMeta>, StoreError>;

    /// Deletes `name` and its messages; a [`StoreError::NotFound`] when there is none.
    async fn delete(&self, name: &str) -> Result<(), StoreError>;

    /// Stores a whole conversation as it is, metadata included (its
    /// timestamps, provider, model and totals are kept; the message counts
    /// are recomputed), e.g. one imported from another store. A
    /// [`StoreError::Conflict`] when one of that name exists.
    async fn import(&self, conversation: &Conversation) -> Result<ConversationMeta, StoreError>;

    /// The conversation called `name`, created empty when there is none.
    /// Safe when another process creates it at the same moment.
    async fn load_or_create(&self, name: &str) -> Result<Conversation, StoreError> {
        if let Some(conversation) = self.load(name).await? {
            return Ok(conversation);
        }
        match self.create(name).await {
            Ok(meta) => Ok(Conversation {
                meta,
                messages: Vec::new(),
                repairs: 0,
            }),
            Err(StoreError::Conflict { .. }) => self.load(name).await?.ok_or_else(|| StoreError::not_found(name)),
            Err(error) => Err(error),
        }
    }
}

/// Checks a conversation name: 1 to [`MAX_CONVERSATION_NAME_LEN`] ASCII
/// letters, digits, `-`, `_` or `.`, not starting with `.` (so a name is
/// also a safe file name, as the JSON session files of `agentry` use).
pub fn validate_conversation_name(name: &str) -> Result<(), StoreError> {
    let reason = if name.is_empty() {
        "it is empty".to_owned()
    } else if name.len() > MAX_CONVERSATION_NAME_LEN {
        format!("it is longer than {MAX_CONVERSATION_NAME_LEN} bytes")
    } else if name.starts_with('.') {
        "it starts with '.'".to_owned()
    } else if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        format!("{bad:?} is not allowed; use letters, digits, '-', '_' or '.'")
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidName {
        name: name.to_owned(),
        reason,
    })
}

/// Makes `messages` sendable, as every [`ConversationStore::load`] does:
/// each tool call of an assistant message gets a result among the tool
/// messages directly after it (an error result saying [`LOST_RESULT`],
/// placed after the results that exist, when it has none), and tool results
/// that answer no call of that assistant message, or answer one twice, are
/// left out. Deterministic and idempotent; returns how many messages were
/// added or left out.
pub fn make_sendable(messages: &mut Vec<Message>) -> usize {
    close_tool_calls(messages, LOST_RESULT)
}

/// The repair of [`make_sendable`], with `missing` as the content of the
/// error result given to each call that has none (the runner says the call
/// was interrupted; a store says its result was lost). Returns how many
/// messages were added or left out.
pub fn close_tool_calls(messages: &mut Vec<Message>, missing: &str) -> usize {
    let original = std::mem::take(messages);
    let mut repairs = 0;
    let mut out = Vec::with_capacity(original.len() + 1);
    // Calls of the last assistant message, and the ids answered so far.
    let mut open: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    for message in original {
        if let Message::Tool(result) = &message {
            let belongs = open.iter().any(|(id, _)| *id == result.call_id);
            if belongs && answered.insert(result.call_id.clone()) {
                out.push(message);
            } else {
                repairs += 1;
            }
            continue;
        }
        repairs += close_open_calls(&mut open, &mut answered, &mut out, missing);
        if let Message::Assistant(assistant) = &message {
            open.extend(
                assistant
                    .tool_calls
                    .iter()
                    .map(|call| (call.id.clone(), call.name.clone())),
            );
        }
        out.push(message);
    }
    repairs += close_open_calls(&mut open, &mut answered, &mut out, missing);
    *messages = out;
    repairs
}

/// Adds a `missing` error for every open call without a result; returns
/// how many it added.
fn close_open_calls(
    open: &mut Vec<(String, String)>,
    answered: &mut HashSet<String>,
    out: &mut Vec<Message>,
    missing: &str,
) -> usize {
    let mut added = 0;
    for (id, name) in open.drain(..) {
        if !answered.contains(&id) {
            out.push(Message::Tool(ToolResult::error(id, name, missing)));
            added += 1;
        }
    }
    answered.clear();
    added
}

/// How many of `messages` are user messages.
pub fn count_user_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .filter(|message| matches!(message, Message::User { .. }))
        .count() as u64
}

/// `time` as RFC 3339 in UTC with milliseconds (`2026-01-31T12:00:00.000Z`),
/// the timestamp format of [`ConversationMeta`]. Such timestamps sort
/// chronologically as text. Times before 1970 are written as 1970.
pub fn utc_timestamp(time: SystemTime) -> String {
    let time = time.max(UNIX_EPOCH);
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::{AssistantMessage, ToolCall};

    fn calls(ids: &[&str]) -> Message {
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            ids.iter().map(|id| ToolCall::new(*id, "lookup", json!({}))).collect(),
        ))
    }

    fn result(id: &str) -> Message {
        Message::tool(ToolResult::success(id, "lookup", "ok"))
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let time = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(utc_timestamp(time), "2023-11-14T22:13:20.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(utc_timestamp(leap), "2000-02-29T00:00:00.000Z");
        let end_of_year = UNIX_EPOCH + Duration::from_secs(1_767_225_599);
        assert_eq!(utc_timestamp(end_of_year), "2025-12-31T23:59:59.000Z");
    }

    #[test]
    fn names_are_safe_file_names() {
        for bad in ["", "../etc", ".hidden", "a/b", "a b", "é", &"x".repeat(65)] {
            assert!(
                matches!(validate_conversation_name(bad), Err(StoreError::InvalidName { .. })),
                "{bad:?}"
            );
        }
        assert!(validate_conversation_name("trip-2026.v1_a").is_ok());
        assert!(validate_conversation_name(&"x".repeat(64)).is_ok());
        let message = validate_conversation_name("a b").err().map(|e| e.to_string());
        assert_eq!(
            message.as_deref(),
            Some("invalid conversation name \"a b\": ' ' is not allowed; use letters, digits, '-', '_' or '.'")
        );
    }

    #[test]
    fn a_dangling_call_gets_a_lost_result_after_the_results_that_arrived() {
        let mut messages = vec![Message::user("go"), calls(&["a", "b", "c"]), result("b")];
        assert_eq!(make_sendable(&mut messages), 2);
        let ids: Vec<(&str, bool)> = messages[2..]
            .iter()
            .filter_map(Message::as_tool_result)
            .map(|r| (r.call_id.as_str(), r.is_error))
            .collect();
        assert_eq!(ids, [("b", false), ("a", true), ("c", true)]);
        assert_eq!(
            messages[3].as_tool_result().map(|r| r.content.as_str()),
            Some(LOST_RESULT)
        );
        let again = messages.clone();
        assert_eq!(make_sendable(&mut messages), 0, "idempotent");
        assert_eq!(messages, again);
    }

    #[test]
    fn calls_in_the_middle_are_closed_and_orphans_and_duplicates_left_out() {
        let mut messages = vec![
            Message::user("go"),
            calls(&["a"]),
            Message::user("hello?"),
            result("a"),
            calls(&["b"]),
            result("b"),
            result("b"),
            Message::assistant("done"),
        ];
        assert_eq!(make_sendable(&mut messages), 3);
        let expected = vec![
            Message::user("go"),
            calls(&["a"]),
            Message::tool(ToolResult::error("a", "lookup", LOST_RESULT)),
            Message::user("hello?"),
            calls(&["b"]),
            result("b"),
            Message::assistant("done"),
        ];
        assert_eq!(messages, expected);
    }

    #[test]
    fn record_turn_adds_totals_and_keeps_unnamed_provider() {
        let mut meta = ConversationMeta::new("trip", "t0");
        meta.record_turn(
            &[Message::user("hi"), Message::assistant("hello")],
            &TurnMeta::new("openai", "gpt-4o-mini", Usage::new(10, 2), 0.5),
            "t1",
        );
        meta.record_turn(&[Message::user("again")], &TurnMeta::default(), "t2");
        assert_eq!((meta.message_count, meta.user_turns), (3, 2));
        assert_eq!((meta.provider.as_str(), meta.model.as_str()), ("openai", "gpt-4o-mini"));
        assert_eq!(meta.usage, Usage::new(10, 2));
        assert!((meta.cost_usd - 0.5).abs() < f64::EPSILON);
        assert_eq!((meta.created_at.as_str(), meta.updated_at.as_str()), ("t0", "t2"));
    }
}
