//! What a turn or an import does to a conversation's [`ConversationMeta`].

use agent_core::{Conversation, ConversationMeta, Message, StoreError, TurnMeta, validate_conversation_name};

/// Adds one appended turn (`messages` and `delta`) to the totals of `meta`,
/// sets its `updated_at` to `now` and clears `has_checkpoint` (an appended
/// turn ends the run its checkpoint belongs to): what
/// [`ConversationStore::append`](agent_core::ConversationStore::append)
/// does to the metadata.
pub fn record_turn(meta: &mut ConversationMeta, messages: &[Message], delta: &TurnMeta, now: impl Into<String>) {
    meta.message_count += messages.len() as u64;
    meta.user_turns += count_user_messages(messages);
    if let Some(provider) = &delta.provider {
        provider.clone_into(&mut meta.provider);
    }
    if let Some(model) = &delta.model {
        model.clone_into(&mut meta.model);
    }
    meta.usage += delta.usage;
    meta.cost_usd += delta.cost_usd;
    meta.updated_at = now.into();
    meta.has_checkpoint = false;
}

/// The metadata [`ConversationStore::import`](agent_core::ConversationStore::import)
/// stores for `conversation`: its own, with the message counts recomputed
/// and no checkpoint. Checks the name, and refuses (a
/// [`StoreError::Conflict`]) a compacted context, whose summarised messages
/// are not in it.
pub fn imported_meta(conversation: &Conversation) -> Result<ConversationMeta, StoreError> {
    let name = conversation.meta.name.as_str();
    validate_conversation_name(name)?;
    if conversation.summarised != 0 {
        return Err(StoreError::conflict(
            name,
            format!(
                "cannot import a compacted context: its summary stands for {} messages that are not in it; \
                 import the conversation's transcript instead",
                conversation.summarised
            ),
        ));
    }
    let mut meta = conversation.meta.clone();
    meta.message_count = conversation.messages.len() as u64;
    meta.user_turns = count_user_messages(&conversation.messages);
    meta.has_checkpoint = false;
    Ok(meta)
}

/// How many of `messages` are user messages (what
/// [`ConversationMeta::user_turns`] counts).
pub fn count_user_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .filter(|message| matches!(message, Message::User { .. }))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use agent_core::Usage;

    use super::*;

    #[test]
    fn record_turn_adds_totals_and_keeps_unnamed_provider() {
        let mut meta = ConversationMeta::new("trip", "t0");
        meta.has_checkpoint = true;
        record_turn(
            &mut meta,
            &[Message::user("hi"), Message::assistant("hello")],
            &TurnMeta::new("openai", "gpt-4o-mini", Usage::new(10, 2), 0.5),
            "t1",
        );
        record_turn(&mut meta, &[Message::user("again")], &TurnMeta::default(), "t2");
        assert_eq!((meta.message_count, meta.user_turns), (3, 2));
        assert_eq!((meta.provider.as_str(), meta.model.as_str()), ("openai", "gpt-4o-mini"));
        assert_eq!(meta.usage, Usage::new(10, 2));
        assert!((meta.cost_usd - 0.5).abs() < f64::EPSILON);
        assert_eq!((meta.created_at.as_str(), meta.updated_at.as_str()), ("t0", "t2"));
        assert!(!meta.has_checkpoint, "a turn ends the run its checkpoint belongs to");
    }

    #[test]
    fn an_import_recounts_and_refuses_a_compacted_context() {
        let mut meta = ConversationMeta::new("trip", "t0");
        meta.message_count = 99;
        meta.has_checkpoint = true;
        let mut conversation = Conversation::new(meta, vec![Message::user("hi"), Message::assistant("hello")]);
        let imported = imported_meta(&conversation).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((imported.message_count, imported.user_turns), (2, 1));
        assert!(!imported.has_checkpoint);
        conversation.summarised = 3;
        assert!(matches!(imported_meta(&conversation), Err(StoreError::Conflict { .. })));
        conversation.meta.name = "../x".into();
        assert!(matches!(
            imported_meta(&conversation),
            Err(StoreError::InvalidName { .. })
        ));
    }
}
