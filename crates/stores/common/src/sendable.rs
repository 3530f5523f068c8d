//! The repair every load applies: tool calls without results get an error
//! result, and results that answer no call are left out.

use std::collections::HashSet;

use agent_core::{LOST_RESULT, Message, ToolResult};

/// Makes `messages` sendable, as every
/// [`ConversationStore::load`](agent_core::ConversationStore::load) does:
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use agent_core::{AssistantMessage, ToolCall};

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
}
