//! Keeping a conversation sendable, and comparing tool calls.

use agent_core::{Message, ToolCall};
use serde_json::Value;

/// The content of a result synthesised for a call that never got one.
pub use crate::prompts::INTERRUPTED_RESULT;

/// `content` cut to at most `max` bytes (at a character boundary) plus a
/// marker saying how much was left out; unchanged when it fits or `max` is 0.
pub fn cap_tool_result(content: String, max: usize) -> String {
    if max == 0 || content.len() <= max {
        return content;
    }
    let mut end = max;
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let total = content.len();
    let mut capped = content;
    capped.truncate(end);
    capped.push_str(&crate::prompts::truncation_marker(total, end));
    capped
}

/// Makes `messages` sendable: every tool call of an assistant message gets a
/// result in the tool messages that directly follow it (a synthesised
/// "interrupted" error where it has none), and tool results that answer no
/// call of the preceding assistant message are dropped. Idempotent; returns
/// whether anything changed.
pub fn repair_history(messages: &mut Vec<Message>) -> bool {
    !is_sendable(messages) && agent_store::close_tool_calls(messages, INTERRUPTED_RESULT) > 0
}

/// Whether every tool call is answered right after its assistant message and
/// every tool result answers a call of the preceding assistant message.
pub fn is_sendable(messages: &[Message]) -> bool {
    let mut open: &[ToolCall] = &[];
    let mut answered = Answered::default();
    for message in messages {
        match message {
            Message::Tool(result) => {
                let Some(index) = open.iter().position(|call| call.id == result.call_id) else {
                    return false;
                };
                if !answered.insert(index) {
                    return false;
                }
            }
            other => {
                if answered.count != open.len() {
                    return false;
                }
                open = match other {
                    Message::Assistant(assistant) => &assistant.tool_calls,
                    _ => &[],
                };
                answered.clear();
            }
        }
    }
    answered.count == open.len()
}

/// Which calls of one assistant message have their result, by index: the
/// first 64 in a bit set, any further ones in a list (so that checking the
/// usual history allocates nothing).
#[derive(Default)]
struct Answered {
    low: u64,
    high: Vec<usize>,
    count: usize,
}

impl Answered {
    /// Marks call `index` answered; `false` when it already was.
    fn insert(&mut self, index: usize) -> bool {
        let fresh = if index < 64 {
            let bit = 1u64 << index;
            let fresh = self.low & bit == 0;
            self.low |= bit;
            fresh
        } else if self.high.contains(&index) {
            false
        } else {
            self.high.push(index);
            true
        };
        self.count += usize::from(fresh);
        fresh
    }

    fn clear(&mut self) {
        self.low = 0;
        self.high.clear();
        self.count = 0;
    }
}

/// A canonical text form of a call (name + arguments with object keys
/// sorted), so that calls differing only in key order compare equal.
pub fn call_key(call: &ToolCall) -> String {
    let mut key = Vec::with_capacity(call.name.len() + 64);
    key.extend_from_slice(call.name.as_bytes());
    key.push(0);
    match &call.raw_arguments {
        Some(raw) => key.extend_from_slice(raw.as_bytes()),
        None => write_canonical(&call.arguments, &mut key),
    }
    into_string(key)
}

/// `value` as compact JSON with object keys sorted at every level, whatever
/// order the map keeps them in.
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    into_string(out)
}

/// Writes `value` into `out`; keys and strings are escaped as serde_json
/// escapes them, straight into `out`. A map whose keys are already in order
/// (the common case) is written without sorting a copy of it.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            out.push(b'{');
            if map.keys().is_sorted() {
                write_entries(map.iter(), out);
            } else {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                write_entries(entries.into_iter(), out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        // Writing into a Vec cannot fail.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

fn write_entries<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut Vec<u8>) {
    for (position, (key, value)) in entries.enumerate() {
        if position > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
        write_canonical(value, out);
    }
}

/// The text of bytes written from `str`s and serde_json: always UTF-8, so
/// the buffer becomes the string without a copy.
fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ToolResult};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_long_result_is_cut_at_a_character_boundary_with_a_marker() {
        let content = "é".repeat(10); // 20 bytes
        let capped = cap_tool_result(content.clone(), 7);
        assert_eq!(
            capped,
            "ééé\n[truncated: the result was 20 bytes; only the first 6 are shown]"
        );
        assert_eq!(
            cap_tool_result(content.clone(), 20),
            content,
            "a result that fits is unchanged"
        );
        assert_eq!(cap_tool_result(content.clone(), 0), content, "0 means no limit");
    }

    fn assistant_calling(ids: &[&str]) -> Message {
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            ids.iter().map(|id| ToolCall::new(*id, "t", json!({}))).collect(),
        ))
    }

    #[test]
    fn dangling_calls_get_interrupted_results_and_orphans_are_dropped() {
        let mut messages = vec![
            Message::user("hi"),
            assistant_calling(&["a", "b"]),
            Message::tool(ToolResult::success("a", "t", "ok")),
            Message::tool(ToolResult::success("zzz", "t", "orphan")),
            Message::user("next"),
            Message::tool(ToolResult::success("a", "t", "late duplicate")),
        ];
        assert!(!is_sendable(&messages));
        assert!(repair_history(&mut messages));
        assert!(is_sendable(&messages));
        let results: Vec<_> = messages
            .iter()
            .filter_map(Message::as_tool_result)
            .map(|r| (r.call_id.as_str(), r.is_error))
            .collect();
        assert_eq!(results, [("a", false), ("b", true)]);
        assert_eq!(messages.len(), 5);
    }

    #[test]
    fn repairing_twice_changes_nothing() {
        let mut messages = vec![Message::user("hi"), assistant_calling(&["a"])];
        assert!(repair_history(&mut messages));
        let once = messages.clone();
        assert!(!repair_history(&mut messages));
        assert_eq!(messages, once);
    }

    #[test]
    fn a_duplicate_result_for_one_call_is_not_sendable() {
        let messages = vec![
            assistant_calling(&["a", "b"]),
            Message::tool(ToolResult::success("a", "t", "1")),
            Message::tool(ToolResult::success("a", "t", "2")),
        ];
        assert!(!is_sendable(&messages));
    }

    #[test]
    fn a_reply_of_more_than_64_calls_is_checked_call_by_call() {
        let ids: Vec<String> = (0..70).map(|index| format!("c{index}")).collect();
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let result = |id: &str| Message::tool(ToolResult::success(id, "t", "ok"));
        let mut messages = vec![assistant_calling(&id_refs)];
        messages.extend(ids.iter().rev().map(|id| result(id)));
        assert!(is_sendable(&messages), "every call answered, in any order");
        messages.push(result("c66"));
        assert!(!is_sendable(&messages), "call 66 answered twice");
        messages.pop();
        messages.remove(1);
        assert!(!is_sendable(&messages), "call 69 unanswered");
        messages.push(result("c3"));
        assert!(!is_sendable(&messages), "call 3, below the first 64, answered twice");
    }

    #[test]
    fn canonical_json_is_compact_sorted_and_escaped_like_serde_json() {
        let value = json!({"b": "line\nbreak \"quoted\" é", "a": [1, 2.5, null, false], "c\u{1}": {"z": 1, "y": {}}});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":[1,2.5,null,false],"b":"line\nbreak \"quoted\" é","c\u0001":{"y":{},"z":1}}"#
        );
        let sorted = json!({"a": 1, "b": {"c": "d"}});
        assert_eq!(canonical_json(&sorted), sorted.to_string());
    }

    #[test]
    fn call_keys_ignore_object_key_order() {
        let a = ToolCall::new("1", "t", json!({"x": 1, "y": {"b": [1, {"d": 1, "c": 2}], "a": null}}));
        let b = ToolCall::new("2", "t", json!({"y": {"a": null, "b": [1, {"c": 2, "d": 1}]}, "x": 1}));
        let c = ToolCall::new("3", "t", json!({"x": 2}));
        assert_eq!(call_key(&a), call_key(&b));
        assert_ne!(call_key(&a), call_key(&c));
    }
}
