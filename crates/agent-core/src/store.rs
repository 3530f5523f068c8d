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
//! implementation therefore passes what it loads through `make_sendable`
//! (in `agent-store`, with the other helpers implementations share):
//! each tool call left without a result gets an error result saying
//! [`LOST_RESULT`], inserted right after the results that did arrive, and a
//! tool result that answers no call of the assistant message before it is
//! left out. The stored rows are not changed, so loading is deterministic:
//! every load shows the same repaired conversation, and
//! [`Conversation::repairs`] says how many messages were added or left out.
//!
//! # Compaction: a summary replaces the oldest messages
//!
//! A long conversation outgrows the model's context window, so the runner
//! can summarise its oldest messages. [`ConversationStore::compact`] makes
//! that last: the first `replaced` messages of what
//! [`load`](ConversationStore::load) returns are replaced, atomically, by one
//! [`Message::System`] holding the summary. Nothing is deleted:
//!
//! - [`load`](ConversationStore::load) returns the *context*, what the next
//!   run sends: the summary, then the messages stored after the ones it
//!   stands for. [`Conversation::summarised`] says how many stored messages
//!   the summary hides.
//! - [`transcript`](ConversationStore::transcript) returns every stored
//!   message and no summary, for display and export.
//! - A later compaction replaces the summary too when it is among the
//!   `replaced` messages (always the case: it is the first message): the new
//!   summary supersedes it and `summarised` grows by the stored messages the
//!   new one adds.
//!
//! The cut must leave a valid conversation: the first message kept may not
//! be a tool result (it would be separated from its call), and the replaced
//! messages may not include one that `make_sendable` added or left out
//! (the summary would stand for messages that are not the stored ones).
//! Every refusal is a [`StoreError::Conflict`] saying why.
//!
//! # Run checkpoints: resumable runs
//!
//! A program that runs an agent may save the run's serialisable state after
//! every step with [`ConversationStore::save_checkpoint`] (opaque JSON; one
//! per conversation, each save replacing the last). After a crash or an
//! interruption, [`ConversationStore::checkpoint`] gives it back so the run
//! can resume, and [`ConversationMeta::has_checkpoint`] lets a listing show
//! which conversations have an interrupted run. Appending a turn ends the run
//! it belongs to, so [`append`](ConversationStore::append) clears the
//! checkpoint in the same atomic operation: a crash never leaves both the
//! stored turn and a checkpoint that would run it again.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Message, Usage};

/// The longest conversation name, in bytes.
pub const MAX_CONVERSATION_NAME_LEN: usize = 64;

/// The content of the error result a load gives a tool call whose result
/// was never stored: every store repairs what it loads so that each tool
/// call has a result (`agent_store::make_sendable`).
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
    /// Messages stored (before any repair on load), including
    /// those a summary hides from the context
    /// ([`ConversationStore::compact`]).
    #[serde(default)]
    pub message_count: u64,
    /// User messages stored: the turns a person sees (summarised ones
    /// included).
    #[serde(default)]
    pub user_turns: u64,
    /// Whether a run checkpoint is stored
    /// ([`ConversationStore::save_checkpoint`]): a run of this conversation
    /// was interrupted and can be resumed.
    #[serde(default)]
    pub has_checkpoint: bool,
}

impl ConversationMeta {
    /// The metadata of a new, empty conversation created at `now`
    /// (RFC 3339, UTC, milliseconds: `agent_store::utc_now`).
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
            has_checkpoint: false,
        }
    }
}

/// A stored conversation, ready to continue: its context
/// ([`ConversationStore::load`]) or its transcript
/// ([`ConversationStore::transcript`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// Its metadata.
    pub meta: ConversationMeta,
    /// The messages, in the order they were appended, made sendable. In a
    /// context whose oldest messages were summarised, the first message is
    /// the summary (a [`Message::System`]) and the summarised messages are
    /// left out.
    pub messages: Vec<Message>,
    /// How many messages the repair on load added or left out;
    /// 0 for a conversation whose every tool call got its result.
    #[serde(default)]
    pub repairs: usize,
    /// How many stored messages the summary at the start of `messages`
    /// stands for (they are not in `messages`; the transcript has them).
    /// 0 when there is no summary, and always 0 in a transcript.
    #[serde(default)]
    pub summarised: u64,
}

impl Conversation {
    /// A conversation of `messages` as they are: no repair, no summary.
    pub fn new(meta: ConversationMeta, messages: Vec<Message>) -> Self {
        Self {
            meta,
            messages,
            repairs: 0,
            summarised: 0,
        }
    }
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

    /// The error for an operation that contradicts what is stored, saying why.
    pub fn conflict(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Conflict {
            name: name.into(),
            reason: reason.into(),
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

    /// The context of the conversation called `name`, what its next run
    /// sends: the summary (when its oldest messages were
    /// [compacted](Self::compact)) followed by the messages stored after the
    /// summarised ones, made sendable (each tool call has a result, a
    /// [`LOST_RESULT`] error when its own was never stored; a result that
    /// answers no call is left out). `None` when there is no such
    /// conversation.
    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError>;

    /// Every stored message of `name`, in order and without any summary,
    /// made sendable so that it is a valid conversation: for display and
    /// export. Its [`Conversation::summarised`] is 0. `None` when there is no
    /// such conversation.
    async fn transcript(&self, name: &str) -> Result<Option<Conversation>, StoreError>;

    /// What is known about the conversation `name` (its
    /// [`ConversationMeta`]), without reading its messages; `None` when
    /// there is none. The default loads the whole conversation; stores
    /// answer it with one small read.
    async fn meta(&self, name: &str) -> Result<Option<ConversationMeta>, StoreError> {
        Ok(self.load(name).await?.map(|conversation| conversation.meta))
    }

    /// Appends one turn to `name` and adds `delta` to its metadata, as one
    /// atomic operation: after a crash either all of it is stored or none.
    /// The same operation clears the conversation's run checkpoint
    /// ([`save_checkpoint`](Self::save_checkpoint)): a stored turn ends the
    /// run it belongs to, so a crash can never leave both the turn and a
    /// checkpoint that would run it again. Turns appended concurrently (by
    /// several tasks or processes) are stored one after the other, never
    /// interleaved. Returns the updated metadata; a [`StoreError::NotFound`]
    /// when `name` does not exist.
    async fn append(&self, name: &str, turn: &[Message], delta: &TurnMeta) -> Result<ConversationMeta, StoreError>;

    /// Replaces the first `replaced` messages of what [`load`](Self::load)
    /// returns now by one [`Message::System`] whose content is `summary`, as
    /// one atomic operation. A summary already at the start of the context
    /// is one of the `replaced` messages: the new summary supersedes it. The
    /// stored messages are kept: [`transcript`](Self::transcript) still
    /// returns every one of them. Timestamps and totals do not change.
    ///
    /// A [`StoreError::Conflict`] saying why, and nothing changes, when
    /// `summary` is empty or blank, `replaced` is 0 or more than the
    /// context's length, the first message left would be a tool result
    /// (separated from its call), or one of the replaced messages was added
    /// or left out by the repair on load (`agent_store::compaction_cut`); a
    /// [`StoreError::NotFound`] when `name` does not exist. `replaced`
    /// counts the messages of the current context: compact right after
    /// loading, while no other run changes the conversation.
    async fn compact(&self, name: &str, replaced: usize, summary: &str) -> Result<ConversationMeta, StoreError>;

    /// Every conversation's metadata, most recently updated first (ties by name).
    async fn list(&self) -> Result<Vec<ConversationMeta>, StoreError>;

    /// Deletes `name`, its messages, its summaries and its checkpoint; a
    /// [`StoreError::NotFound`] when there is none.
    async fn delete(&self, name: &str) -> Result<(), StoreError>;

    /// Stores a whole conversation as it is, metadata included (its
    /// timestamps, provider, model and totals are kept; the message counts
    /// are recomputed), e.g. one imported from another store. The stored
    /// conversation has no summary and no checkpoint. A
    /// [`StoreError::Conflict`] when one of that name exists, or when
    /// `conversation` is a compacted context (`summarised` is not 0: the
    /// messages its summary stands for are not in it; import the
    /// [`transcript`](Self::transcript) instead).
    async fn import(&self, conversation: &Conversation) -> Result<ConversationMeta, StoreError>;

    /// Stores `checkpoint`, the serialisable state of a run of `name` in
    /// progress, replacing any previous one, durably and in one atomic
    /// operation. The store keeps it as opaque JSON until the next
    /// [`append`](Self::append) to `name`, [`clear_checkpoint`](Self::clear_checkpoint)
    /// or [`delete`](Self::delete). A [`StoreError::NotFound`] when `name`
    /// does not exist.
    async fn save_checkpoint(&self, name: &str, checkpoint: &serde_json::Value) -> Result<(), StoreError>;

    /// The checkpoint of `name` ([`save_checkpoint`](Self::save_checkpoint)),
    /// exactly as saved; `None` when there is none. A
    /// [`StoreError::NotFound`] when `name` does not exist.
    async fn checkpoint(&self, name: &str) -> Result<Option<serde_json::Value>, StoreError>;

    /// Removes the checkpoint of `name`, if it has one (no error when it has
    /// none). A [`StoreError::NotFound`] when `name` does not exist.
    async fn clear_checkpoint(&self, name: &str) -> Result<(), StoreError>;

    /// The conversation called `name` ([`load`](Self::load)), created empty
    /// when there is none. Safe when another process creates it at the same
    /// moment.
    async fn load_or_create(&self, name: &str) -> Result<Conversation, StoreError> {
        if let Some(conversation) = self.load(name).await? {
            return Ok(conversation);
        }
        match self.create(name).await {
            Ok(meta) => Ok(Conversation::new(meta, Vec::new())),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
