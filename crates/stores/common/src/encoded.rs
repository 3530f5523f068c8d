//! Turns encoded for a database: each message as its role and JSON text,
//! with the counts and the metadata delta an append adds. The SQLite and
//! PostgreSQL stores write these; loading decodes the JSON back into the
//! same [`Message`]s.

use agent_core::{Message, Role, StoreError, TurnMeta, Usage};

use crate::count_user_messages;

/// A message ready to be stored: its role, its JSON text (inline media
/// written as references to their hash) and the media themselves, which
/// the store keeps once each.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedMessage {
    /// The role, as in the message's JSON.
    pub role: &'static str,
    /// The message as JSON.
    pub body: String,
    /// The inline media of the message, each content once.
    pub media: Vec<crate::MediaBlob>,
}

impl EncodedMessage {
    /// Encodes `message`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when it cannot be written as JSON.
    pub fn new(message: &Message) -> Result<Self, StoreError> {
        let role = match message.role() {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let (stored, media) = match crate::media::externalise(message) {
            Some((stored, media)) => (Some(stored), media),
            None => (None, Vec::new()),
        };
        let body = serde_json::to_string(stored.as_ref().unwrap_or(message))
            .map_err(|error| StoreError::backend(format!("could not encode a {role} message: {error}")))?;
        Ok(Self { role, body, media })
    }

    /// Encodes every message, in order.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), for the first that fails.
    pub fn all(messages: &[Message]) -> Result<Vec<Self>, StoreError> {
        messages.iter().map(Self::new).collect()
    }
}

/// A turn ready to be appended.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedTurn {
    /// Its messages.
    pub messages: Vec<EncodedMessage>,
    /// How many of them are user messages.
    pub user_messages: u64,
    /// The provider to record, if any.
    pub provider: Option<String>,
    /// The model to record, if any.
    pub model: Option<String>,
    /// Usage to add.
    pub usage: Usage,
    /// Cost to add.
    pub cost_usd: f64,
}

impl EncodedTurn {
    /// Encodes the messages of `turn` with its metadata `delta`.
    ///
    /// # Errors
    ///
    /// As [`EncodedMessage::new`].
    pub fn new(turn: &[Message], delta: &TurnMeta) -> Result<Self, StoreError> {
        Ok(Self {
            messages: EncodedMessage::all(turn)?,
            user_messages: count_user_messages(turn),
            provider: delta.provider.clone(),
            model: delta.model.clone(),
            usage: delta.usage,
            cost_usd: delta.cost_usd,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_encoded_as_roles_and_json_with_its_counts_and_delta() {
        let turn = [
            Message::user("Weather?"),
            Message::assistant("Sunny."),
            Message::user("Thanks"),
        ];
        let delta = TurnMeta::new("openai", "gpt-4o-mini", Usage::new(10, 2), 0.5);
        let encoded = EncodedTurn::new(&turn, &delta).unwrap_or_else(|e| panic!("{e}"));
        let roles: Vec<&str> = encoded.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        let decoded: Message = serde_json::from_str(&encoded.messages[1].body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decoded, turn[1]);
        assert_eq!(encoded.user_messages, 2);
        assert_eq!(
            (
                encoded.provider.as_deref(),
                encoded.model.as_deref(),
                encoded.usage,
                encoded.cost_usd
            ),
            (Some("openai"), Some("gpt-4o-mini"), Usage::new(10, 2), 0.5)
        );
    }
}
