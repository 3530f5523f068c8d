//! Watching a reply's calls as they are written, so that generation ends as
//! soon as the reply has nothing more to add (issue: no runaway replies).
//!
//! Small models under the call grammar write one call per line. Once they
//! repeat a line they go on repeating it until `max_tokens`: minutes of
//! generation on a CPU, for calls that are never run. A reply ends at the
//! first of:
//! - a call line written twice in the reply;
//! - a call that repeats one already answered in the turn
//!   ([`AnsweredCalls`]: the same arguments, the same required ones, or a
//!   tool fed its own result back);
//! - the reply's calls reaching the request's
//!   [`max_tool_calls`](agent_core::ChatRequest::max_tool_calls).
//!
//! The reply keeps the line that ended it: the runner decides what a
//! repeat means.

use std::collections::HashSet;
use std::sync::Arc;

use agent_core::AnsweredCalls;
use agent_parse::ToolCallParser;

/// The shortest line worth comparing: shorter ones (`[`, `}`, a fence)
/// repeat in any reply.
const MIN_LINE_BYTES: usize = 12;

/// Why a reply was ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallStop {
    /// A call line was written twice in the reply.
    RepeatedLine,
    /// A call repeats one answered already in the turn.
    AnsweredCall,
    /// The reply's calls reached the cap.
    Cap,
}

/// What a reply's calls are checked against.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallLimits {
    /// The names of the tools the reply may call.
    pub tools: Vec<String>,
    /// The calls answered in the turn so far.
    pub answered: Arc<AnsweredCalls>,
    /// At most this many calls (none: no cap).
    pub max_calls: Option<usize>,
}

/// Watches a reply's text line by line.
#[derive(Debug)]
pub(crate) struct CallWatch {
    limits: CallLimits,
    parser: ToolCallParser,
    /// The current, unfinished line.
    line: Vec<u8>,
    /// Hashes of the finished call lines so far.
    seen: HashSet<u64>,
    /// Calls written so far.
    calls: usize,
}

impl CallWatch {
    pub(crate) fn new(limits: CallLimits) -> Self {
        let parser = ToolCallParser::new().known_tools(limits.tools.iter().cloned());
        Self {
            limits,
            parser,
            line: Vec::new(),
            seen: HashSet::new(),
            calls: 0,
        }
    }

    /// Adds a piece of the reply; `Some` when it finishes a line after
    /// which the reply should end.
    pub(crate) fn push(&mut self, piece: &[u8]) -> Option<CallStop> {
        let mut stop = None;
        for &byte in piece {
            if byte == b'\n' {
                stop = stop.or(self.finish_line());
            } else {
                self.line.push(byte);
            }
        }
        stop
    }

    fn finish_line(&mut self) -> Option<CallStop> {
        let line = std::mem::take(&mut self.line);
        let text = line.trim_ascii();
        if text.len() < MIN_LINE_BYTES || !text.starts_with(b"{") {
            return None;
        }
        if !self.seen.insert(hash(text)) {
            return Some(CallStop::RepeatedLine);
        }
        let parsed = self.parser.parse(&String::from_utf8_lossy(text));
        if parsed.calls.is_empty() {
            return None;
        }
        self.calls += parsed.calls.len();
        if parsed
            .calls
            .iter()
            .any(|call| self.limits.answered.repeats(&call.name, &call.arguments))
        {
            return Some(CallStop::AnsweredCall);
        }
        match self.limits.max_calls {
            Some(max) if self.calls >= max => Some(CallStop::Cap),
            _ => None,
        }
    }
}

fn hash(bytes: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ChatRequest, Message, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

    const CALL: &str = r#"{"name": "calculator", "arguments": {"expression": "17 * 23"}}"#;
    const OTHER: &str = r#"{"name": "calculator", "arguments": {"expression": "17 * 24"}}"#;

    fn limits(max_calls: Option<usize>) -> CallLimits {
        CallLimits {
            tools: vec!["calculator".to_owned(), "get_weather".to_owned()],
            answered: Arc::default(),
            max_calls,
        }
    }

    /// The index of the piece that ends the reply, and why.
    fn first_stop(limits: CallLimits, pieces: &[&str]) -> Option<(usize, CallStop)> {
        let mut watch = CallWatch::new(limits);
        pieces
            .iter()
            .enumerate()
            .find_map(|(index, piece)| watch.push(piece.as_bytes()).map(|stop| (index, stop)))
    }

    #[test]
    fn the_second_copy_of_a_call_line_ends_the_reply_when_its_line_ends() {
        let pieces = ["```json\n", CALL, "\n", CALL, "\n", CALL];
        assert_eq!(first_stop(limits(None), &pieces), Some((4, CallStop::RepeatedLine)));
        let tagged = [
            "<tool_call>\n",
            CALL,
            "\n</tool_call>\n<tool_call>\n",
            " ",
            CALL,
            "  \n",
        ];
        assert_eq!(first_stop(limits(None), &tagged), Some((5, CallStop::RepeatedLine)));
    }

    #[test]
    fn different_calls_short_lines_and_prose_go_on() {
        assert_eq!(first_stop(limits(None), &[CALL, "\n", OTHER, "\n"]), None);
        let short = ["[\n", "]\n", "[\n", "]\n", "```\n", "```\n"];
        assert_eq!(first_stop(limits(None), &short), None);
        let prose = "It is sunny today in Lisbon, as it was.\n";
        assert_eq!(first_stop(limits(None), &[prose, prose]), None);
    }

    #[test]
    fn a_line_split_across_pieces_is_one_line() {
        let (head, tail) = CALL.split_at(20);
        let pieces = [head, tail, "\n", head, tail, "\n"];
        assert_eq!(first_stop(limits(None), &pieces), Some((5, CallStop::RepeatedLine)));
    }

    #[test]
    fn the_reply_ends_when_its_calls_reach_the_cap() {
        let third = r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#;
        let pieces = [CALL, "\n", OTHER, "\n", third, "\n"];
        assert_eq!(first_stop(limits(Some(2)), &pieces), Some((3, CallStop::Cap)));
        assert_eq!(first_stop(limits(Some(3)), &pieces), Some((5, CallStop::Cap)));
        assert_eq!(first_stop(limits(None), &pieces), None);
        // JSON that calls no offered tool is not a call.
        let data = r#"{"city": "Oslo", "temperature_c": 3}"#;
        assert_eq!(first_stop(limits(Some(1)), &[data, "\n"]), None);
    }

    #[test]
    fn a_call_answered_already_in_the_turn_ends_the_reply() {
        let request = ChatRequest::new(vec![
            Message::user("17 * 23 and the weather in Oslo?"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("c1", "calculator", json!({"expression": "17 * 23"}))],
            )),
            Message::tool(ToolResult::success("c1", "calculator", r#"{"result": 391}"#)),
        ]);
        let answered = CallLimits {
            answered: Arc::new(AnsweredCalls::in_request(&request)),
            ..limits(Some(16))
        };
        let weather = r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#;
        assert_eq!(first_stop(answered.clone(), &[weather, "\n"]), None);
        assert_eq!(
            first_stop(answered.clone(), &[weather, "\n", CALL, "\n"]),
            Some((3, CallStop::AnsweredCall))
        );
        let fed_back = r#"{"name": "calculator", "arguments": {"expression": "391"}}"#;
        assert_eq!(
            first_stop(answered, &[fed_back, "\n"]),
            Some((1, CallStop::AnsweredCall))
        );
    }
}
