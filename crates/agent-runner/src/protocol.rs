//! How tool calls travel between the model and the loop.
//!
//! - [`Protocol::Native`]: tool definitions in the request, structured calls
//!   in the reply, results as tool messages.
//! - [`Protocol::Text`]: tools described in the system prompt, calls parsed
//!   from the reply text (`<tool_call>` blocks, JSON, `Action:` lines, ...),
//!   results sent back as a user message of `<tool_response>` blocks.
//! - [`Protocol::React`]: Thought / Action / Action Input / Observation; one
//!   action per step, results sent back as `Observation:`.
//!
//! Everything else (dedup, parallel execution, loop detection, limits,
//! events, the record) is the same state machine for all three.

use std::fmt::Write as _;

use agent_core::{AssistantMessage, Message, ToolCall, ToolResult};
use agent_parse::{ReactKind, ToolCallParser, parse_react_step};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The tool-calling protocol of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "protocol", rename_all = "snake_case")]
pub enum Protocol {
    /// Structured tool calls.
    #[default]
    Native,
    /// Calls written in the reply text.
    Text {
        /// Names of the tools, so bare JSON naming another "tool" stays text.
        tool_names: Vec<String>,
    },
    /// ReAct steps.
    React,
}

/// A model reply as the loop sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    /// The reply as the model wrote it (native: with its structured calls).
    pub message: AssistantMessage,
    /// The text a person should see (calls and protocol markup removed),
    /// when it differs from `message.content`.
    pub visible: Option<String>,
    /// The calls to run, in order, when they were read out of the text
    /// (a native reply's are its message's: [`calls`](Self::calls)).
    pub calls: Vec<ToolCall>,
    /// The calls are the message's own structured calls.
    pub native: bool,
    /// Call attempts that could not be read, with the reason for the model.
    pub rejected: Vec<(ToolCall, String)>,
}

impl Turn {
    /// The calls to run, in order.
    pub(crate) fn calls(&self) -> &[ToolCall] {
        if self.native {
            &self.message.tool_calls
        } else {
            &self.calls
        }
    }

    /// The text a person should see.
    pub(crate) fn visible(&self) -> &str {
        self.visible.as_deref().unwrap_or(&self.message.content)
    }
}

impl Protocol {
    /// Whether tool definitions travel in the request.
    pub fn sends_tool_definitions(&self) -> bool {
        matches!(self, Self::Native)
    }

    /// Reads the calls out of a reply. `iteration` makes synthesised call ids unique.
    pub(crate) fn interpret(&self, message: AssistantMessage, iteration: u32) -> Turn {
        match self {
            Self::Native => Turn {
                visible: None,
                calls: Vec::new(),
                native: true,
                rejected: Vec::new(),
                message,
            },
            // A text-protocol model that still returned structured calls
            // (some servers parse them for it) is taken at its word.
            Self::Text { .. } if !message.tool_calls.is_empty() => Self::Native.interpret(message, iteration),
            Self::Text { tool_names } => {
                let reply = ToolCallParser::new()
                    .known_tools(tool_names.iter().cloned())
                    .parse(&message.content);
                let calls = reply.tool_calls(&format!("call_{iteration}_"));
                let rejected = reply
                    .malformed
                    .into_iter()
                    .enumerate()
                    .map(|(index, malformed)| {
                        let mut call = ToolCall::new(format!("call_{iteration}_x{index}"), "tool_call", Value::Null);
                        call.raw_arguments = Some(malformed.raw);
                        (call, format!("{} Write the call again.", malformed.reason))
                    })
                    .collect();
                Turn {
                    visible: Some(reply.text),
                    calls,
                    native: false,
                    rejected,
                    message,
                }
            }
            Self::React => {
                let step = parse_react_step(&message.content);
                let thought = step.thought.unwrap_or_default();
                let (visible, calls, rejected, cleaned) = match step.kind {
                    ReactKind::FinalAnswer(answer) => {
                        let cleaned = format!("{}Final Answer: {answer}", thought_line(&thought));
                        (answer, Vec::new(), Vec::new(), cleaned)
                    }
                    ReactKind::Action { tool, input } => {
                        let cleaned = format!("{}Action: {tool}\nAction Input: {input}", thought_line(&thought));
                        let call = ToolCall::new(format!("call_{iteration}_0"), tool, input);
                        (thought, vec![call], Vec::new(), cleaned)
                    }
                    ReactKind::Malformed(reason) => {
                        let call = ToolCall::new(format!("call_{iteration}_x0"), "react_step", Value::Null);
                        let correction = format!(
                            "{reason} Reply with `Thought:`, then either `Action:` and `Action Input:` \
                             (a JSON object), or `Final Answer:`."
                        );
                        let cleaned = message.content.trim().to_owned();
                        (thought, Vec::new(), vec![(call, correction)], cleaned)
                    }
                };
                Turn {
                    // The model's own Observation (if it wrote one) is dropped.
                    message: AssistantMessage::text(cleaned),
                    visible: Some(visible),
                    calls,
                    native: false,
                    rejected,
                }
            }
        }
    }

    /// The history entry for a turn (its message is moved out); `keep_calls`
    /// is false for a forced final answer, whose calls are not run.
    pub(crate) fn history_message(&self, turn: &mut Turn, keep_calls: bool) -> Message {
        let structured = !turn.message.tool_calls.is_empty();
        match self {
            Self::Native => {}
            Self::Text { .. } | Self::React if structured => {}
            Self::Text { .. } | Self::React => {
                let text = if keep_calls || (turn.calls().is_empty() && turn.rejected.is_empty()) {
                    std::mem::take(&mut turn.message.content)
                } else {
                    turn.visible().to_owned()
                };
                return Message::Assistant(AssistantMessage::text(text));
            }
        }
        let mut message = std::mem::take(&mut turn.message);
        if !keep_calls {
            message.tool_calls.clear();
        }
        Message::Assistant(message)
    }

    /// The messages that carry one batch of results back to the model.
    pub(crate) fn result_messages(&self, results: Vec<ToolResult>, structured: bool) -> Vec<Message> {
        if results.is_empty() {
            return Vec::new();
        }
        match self {
            _ if structured => results.into_iter().map(Message::Tool).collect(),
            Self::Native => results.into_iter().map(Message::Tool).collect(),
            Self::Text { .. } => {
                let mut text = String::new();
                for result in &results {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    let error = if result.is_error { " error=\"true\"" } else { "" };
                    let _ = write!(
                        text,
                        "<tool_response name=\"{}\"{error}>\n{}\n</tool_response>",
                        result.name, result.content
                    );
                }
                vec![Message::user(text)]
            }
            Self::React => {
                let mut text = String::from("Observation: ");
                for (index, result) in results.iter().enumerate() {
                    if index > 0 {
                        text.push('\n');
                    }
                    if result.is_error {
                        text.push_str("Error: ");
                    }
                    text.push_str(&result.content);
                }
                vec![Message::user(text)]
            }
        }
    }
}

fn thought_line(thought: &str) -> String {
    if thought.is_empty() {
        String::new()
    } else {
        format!("Thought: {thought}\n")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_protocol_reads_tagged_calls_and_keeps_the_prose() {
        let protocol = Protocol::Text {
            tool_names: vec!["calculator".into()],
        };
        let raw = "I'll compute it.\n<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"15+27\"}}</tool_call>";
        let mut turn = protocol.interpret(AssistantMessage::text(raw), 1);
        assert_eq!(turn.visible(), "I'll compute it.");
        assert_eq!(turn.calls().len(), 1);
        assert_eq!(turn.calls()[0].id, "call_1_0");
        assert_eq!(turn.calls()[0].arguments, json!({"expression": "15+27"}));
        assert_eq!(
            protocol.history_message(&mut turn.clone(), true),
            Message::assistant(raw),
            "the history keeps what the model wrote"
        );
        assert_eq!(
            protocol.history_message(&mut turn, false),
            Message::assistant("I'll compute it.")
        );
    }

    #[test]
    fn text_protocol_results_are_one_user_message_of_tool_responses() {
        let protocol = Protocol::Text { tool_names: vec![] };
        let messages = protocol.result_messages(
            vec![
                ToolResult::success("a", "calculator", "42"),
                ToolResult::error("b", "weather", "unknown city"),
            ],
            false,
        );
        assert_eq!(
            messages,
            [Message::user(
                "<tool_response name=\"calculator\">\n42\n</tool_response>\n<tool_response name=\"weather\" error=\"true\">\nunknown city\n</tool_response>"
            )]
        );
    }

    #[test]
    fn react_drops_a_made_up_observation_and_reports_malformed_steps() {
        let turn = Protocol::React.interpret(
            AssistantMessage::text(
                "Thought: add\nAction: calculator\nAction Input: {\"expression\": \"1+1\"}\nObservation: 3",
            ),
            2,
        );
        assert_eq!(turn.calls()[0].name, "calculator");
        assert!(!turn.message.content.contains("Observation"));
        let turn = Protocol::React.interpret(AssistantMessage::text("I am not sure what to do."), 3);
        assert!(turn.calls().is_empty());
        assert_eq!(turn.rejected.len(), 1);
        assert!(turn.rejected[0].1.contains("Final Answer"));
    }
}
