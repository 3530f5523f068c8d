//! # agent-store
//!
//! What implementations of `agent-core`'s
//! [`ConversationStore`](agent_core::ConversationStore) port share, so each
//! store behaves the same:
//!
//! - [`InMemoryStore`]: a complete store in memory, for tests and for
//!   applications that keep conversations only while they run
//!   (`agent-store-sqlite` and `agent-store-postgres` persist);
//! - the repair every load applies ([`make_sendable`], and
//!   [`close_tool_calls`] with a message of the caller's choosing);
//! - compaction: the context a summary leaves ([`context_with_summary`])
//!   and where a new summary cuts the stored messages ([`compaction_cut`]);
//! - turns encoded for a database ([`EncodedTurn`], [`EncodedMessage`]),
//!   their media kept once by content hash ([`MediaBlob`], [`restore_media`]);
//! - metadata bookkeeping ([`record_turn`], [`imported_meta`],
//!   [`count_user_messages`]) and the timestamp format
//!   ([`utc_timestamp`], [`utc_now`]).
//!
//! ```
//! use agent_core::{AssistantMessage, LOST_RESULT, Message, ToolCall};
//! use agent_store::{compaction_cut, context_with_summary, make_sendable};
//! use serde_json::json;
//!
//! // The process died after storing the model's tool call, before its result.
//! let call = ToolCall::new("c1", "get_weather", json!({"location": "Oslo"}));
//! let stored = vec![
//!     Message::user("Weather in Oslo?"),
//!     Message::Assistant(AssistantMessage::with_tool_calls("", vec![call])),
//! ];
//! let mut loaded = stored.clone();
//! assert_eq!(make_sendable(&mut loaded), 1);
//! assert_eq!(loaded[2].as_tool_result().map(|result| result.content.as_str()), Some(LOST_RESULT));
//!
//! // A summary may replace the first message, not the repaired call.
//! assert_eq!(compaction_cut("trip", false, &stored, 1, "The user asked about Oslo."), Ok(1));
//! assert!(compaction_cut("trip", false, &stored, 2, "The user asked about Oslo.").is_err());
//! let (context, repairs) = context_with_summary(Some("The user asked about Oslo."), stored[1..].to_vec());
//! assert_eq!((context.len(), repairs), (3, 1));
//! ```

mod compaction;
mod encoded;
mod media;
mod memory;
mod meta;
mod sendable;
mod time;

pub use compaction::{compaction_cut, context_with_summary};
pub use encoded::{EncodedMessage, EncodedTurn};
pub use media::{
    MediaBlob, content_hash, encode_checkpoint, externalise, externalise_value, restore_media, restore_value,
    stored_hashes, stored_hashes_in, verified,
};
pub use memory::InMemoryStore;
pub use meta::{count_user_messages, imported_meta, record_turn};
pub use sendable::{close_tool_calls, make_sendable};
pub use time::{utc_now, utc_timestamp};
