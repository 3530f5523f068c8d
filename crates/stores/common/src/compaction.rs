//! Compaction for store implementations: the context a summary leaves, and
//! where a new summary cuts the stored messages.

use agent_core::{Message, StoreError};

use crate::make_sendable;

/// The context [`ConversationStore::load`](agent_core::ConversationStore::load)
/// returns: `summary` (when there is one) as a [`Message::System`], then
/// `rows`, the messages stored after the summarised ones, all made sendable
/// ([`make_sendable`]). Returns the messages and how many were added or left
/// out.
pub fn context_with_summary(summary: Option<&str>, rows: Vec<Message>) -> (Vec<Message>, usize) {
    let mut messages = match summary {
        Some(summary) => {
            let mut messages = Vec::with_capacity(rows.len() + 1);
            messages.push(Message::system(summary));
            messages.extend(rows);
            messages
        }
        None => rows,
    };
    let repairs = make_sendable(&mut messages);
    (messages, repairs)
}

/// Where [`ConversationStore::compact`](agent_core::ConversationStore::compact)
/// cuts: how many of `rows` a summary replacing the first `replaced`
/// messages of the current context hides, in addition to the stored
/// messages an existing summary hides already.
///
/// `rows` are the messages stored after the summarised ones, as stored (not
/// made sendable); `has_summary` says whether the context starts with a
/// summary. The context is [`context_with_summary`] of them.
///
/// [`make_sendable`] adds and leaves out tool results only, so the context
/// maps onto the stored messages through the other messages: the first
/// message kept, which may not be a tool result, is a stored message, and
/// everything stored before it is hidden. A [`StoreError::Conflict`] naming
/// `name` when `summary` is blank, `replaced` is 0 or more than the
/// context's length, the first message kept would be a tool result, or
/// [`make_sendable`] added or left out a message among the replaced ones
/// (the summary would stand for messages other than the stored ones).
pub fn compaction_cut(
    name: &str,
    has_summary: bool,
    rows: &[Message],
    replaced: usize,
    summary: &str,
) -> Result<usize, StoreError> {
    let refuse = |reason: String| {
        StoreError::conflict(
            name,
            format!("cannot replace {replaced} messages of its context by a summary: {reason}"),
        )
    };
    if summary.trim().is_empty() {
        return Err(refuse("the summary is empty".into()));
    }
    if replaced == 0 {
        return Err(refuse("a summary must replace at least one message".into()));
    }
    let (context, _) = context_with_summary(has_summary.then_some(""), rows.to_vec());
    if replaced > context.len() {
        return Err(refuse(format!("the context has only {} messages", context.len())));
    }
    let cut = match context.get(replaced) {
        None => rows.len(),
        Some(Message::Tool(result)) => {
            return Err(refuse(format!(
                "the first message kept would be the result of tool call `{}`, separated from its call; \
                 cut before the assistant message that made the call or after its last result",
                result.call_id
            )));
        }
        Some(_) => {
            let start = usize::from(has_summary);
            let kept_before = context[start..replaced].iter().filter(|m| !is_tool(m)).count();
            rows.iter()
                .enumerate()
                .filter(|(_, message)| !is_tool(message))
                .nth(kept_before)
                .map(|(index, _)| index)
                .ok_or_else(|| {
                    StoreError::corrupt(format!(
                        "the context of conversation `{name}` does not match its stored messages"
                    ))
                })?
        }
    };
    let mut hidden = rows[..cut].to_vec();
    let repairs = make_sendable(&mut hidden);
    if repairs != 0 {
        return Err(refuse(format!(
            "{repairs} of them were added or left out when loading (tool results lost or orphaned), \
             so they are not the stored messages; keep them in the context"
        )));
    }
    Ok(cut)
}

fn is_tool(message: &Message) -> bool {
    matches!(message, Message::Tool(_))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use agent_core::{AssistantMessage, ToolCall, ToolResult};

    fn call(id: &str) -> Message {
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new(id, "lookup", json!({}))],
        ))
    }

    fn result(id: &str) -> Message {
        Message::tool(ToolResult::success(id, "lookup", "ok"))
    }

    fn reason(error: StoreError) -> String {
        match error {
            StoreError::Conflict { name, reason } => {
                assert_eq!(name, "trip");
                reason
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    #[test]
    fn the_cut_maps_context_positions_to_stored_rows() {
        let rows = vec![
            Message::user("a"),
            call("c1"),
            result("c1"),
            Message::assistant("done"),
            Message::user("b"),
        ];
        assert_eq!(compaction_cut("trip", false, &rows, 1, "s").unwrap(), 1);
        assert_eq!(compaction_cut("trip", false, &rows, 4, "s").unwrap(), 4);
        assert_eq!(compaction_cut("trip", false, &rows, 5, "s").unwrap(), 5);
        // With a summary first, the summary is position 0 and hides no row.
        assert_eq!(compaction_cut("trip", true, &rows, 1, "s").unwrap(), 0);
        assert_eq!(compaction_cut("trip", true, &rows, 2, "s").unwrap(), 1);
        assert_eq!(compaction_cut("trip", true, &rows, 6, "s").unwrap(), 5);
    }

    #[test]
    fn a_repair_after_the_cut_does_not_prevent_it_but_one_before_does() {
        // c1's result was lost: the context has a LOST result at position 2,
        // and an orphan result (left out) follows the user message.
        let rows = vec![
            Message::user("a"),
            call("c1"),
            Message::user("b"),
            result("zz"),
            Message::assistant("ok"),
        ];
        let (context, repairs) = context_with_summary(None, rows.clone());
        assert_eq!((context.len(), repairs), (5, 2));
        assert_eq!(compaction_cut("trip", false, &rows, 1, "s").unwrap(), 1);
        let error = compaction_cut("trip", false, &rows, 3, "s").unwrap_err();
        assert!(reason(error).contains("1 of them were added or left out"));
        let error = compaction_cut("trip", false, &rows, 4, "s").unwrap_err();
        assert!(reason(error).contains("2 of them were added or left out"));
    }

    #[test]
    fn refusals_say_why() {
        let rows = vec![Message::user("a"), call("c1"), result("c1"), Message::assistant("done")];
        assert!(reason(compaction_cut("trip", false, &rows, 0, "s").unwrap_err()).contains("at least one"));
        assert!(reason(compaction_cut("trip", false, &rows, 5, "s").unwrap_err()).contains("only 4 messages"));
        assert!(reason(compaction_cut("trip", true, &rows, 6, "s").unwrap_err()).contains("only 5 messages"));
        assert!(reason(compaction_cut("trip", false, &rows, 2, "s").unwrap_err()).contains("tool call `c1`"));
        assert!(reason(compaction_cut("trip", false, &rows, 1, " \n").unwrap_err()).contains("summary is empty"));
    }
}
