//! Conversation turns: what is said by whom, including tool calls and their results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Attachment;

/// The author of a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the application.
    System,
    /// The person (or program) talking to the agent.
    User,
    /// The model.
    Assistant,
    /// The result of a tool the model called.
    Tool,
}

/// One turn of a conversation.
///
/// Serialised with a `role` tag, e.g. `{"role":"user","content":"hi"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions from the application (in addition to [`crate::ChatRequest::system`]).
    System {
        /// The instruction text.
        content: String,
    },
    /// A user turn.
    User {
        /// What the user said.
        content: String,
        /// Images, documents and audio sent with it, in order (not written
        /// in JSON when there are none: a text message reads as before).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// A model turn: text, tool calls and opaque reasoning.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolResult),
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
            attachments: Vec::new(),
        }
    }

    /// A user message with images, documents or audio.
    pub fn user_with(content: impl Into<String>, attachments: Vec<Attachment>) -> Self {
        Self::User {
            content: content.into(),
            attachments,
        }
    }

    /// The attachments of a user message or a tool result; none for the
    /// others.
    pub fn attachments(&self) -> &[Attachment] {
        match self {
            Self::User { attachments, .. } => attachments,
            Self::Tool(result) => &result.attachments,
            _ => &[],
        }
    }

    /// The attachments, to change (a session store swaps their bytes for a
    /// reference and back); none for system and assistant messages.
    pub fn attachments_mut(&mut self) -> Option<&mut Vec<Attachment>> {
        match self {
            Self::User { attachments, .. } => Some(attachments),
            Self::Tool(result) => Some(&mut result.attachments),
            _ => None,
        }
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant(AssistantMessage::text(text))
    }

    /// A tool-result message.
    pub fn tool(result: ToolResult) -> Self {
        Self::Tool(result)
    }

    /// Who wrote this message.
    pub fn role(&self) -> Role {
        match self {
            Self::System { .. } => Role::System,
            Self::User { .. } => Role::User,
            Self::Assistant(_) => Role::Assistant,
            Self::Tool(_) => Role::Tool,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Self::Assistant(message) => Some(message),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResult> {
        match self {
            Self::Tool(result) => Some(result),
            _ => None,
        }
    }
}

/// What the model said in one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Visible text (may be empty when the model only calls tools).
    #[serde(default)]
    pub content: String,
    /// Tools the model asked to run, in the order it emitted them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning/thinking blocks, kept so they can be sent back unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<ReasoningBlock>,
}

impl AssistantMessage {
    /// An assistant message with text only.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// An assistant message that calls tools (with optional text before the calls).
    pub fn with_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            content: content.into(),
            tool_calls,
            reasoning: Vec::new(),
        }
    }
}

/// A provider's reasoning ("thinking") output. Agentry never interprets it; it
/// only keeps it so that it can be echoed back to the provider that produced it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningBlock {
    /// Readable reasoning text, when the provider returns any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Provider-issued signature that must be returned with the block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Any other opaque payload (e.g. redacted or encrypted reasoning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The provider that produced the block (its
    /// [`LlmClient::provider`](crate::LlmClient::provider) name), set by the
    /// agent loop when the reply enters the history. Providers send back only
    /// their own blocks (or untagged ones): a signature from one provider
    /// means nothing to another, which would reject the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

impl ReasoningBlock {
    /// Whether the provider called `provider` may receive this block back:
    /// it produced it, or the block does not say who did.
    pub fn is_from(&self, provider: &str) -> bool {
        self.provider.as_deref().is_none_or(|own| own == provider)
    }
}

/// A model's request to run one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Identifier chosen by the provider (or synthesised); results refer to it.
    pub id: String,
    /// Name of the tool to run.
    pub name: String,
    /// Arguments as JSON (an object for well-formed calls).
    pub arguments: Value,
    /// The raw argument text when the model produced something that is not
    /// valid JSON. `arguments` is then `null`; the runner reports the problem
    /// to the model instead of running the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl ToolCall {
    /// A well-formed tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            raw_arguments: None,
        }
    }

    /// Builds a call from argument text as it arrives on the wire: valid JSON
    /// becomes `arguments`, anything else is kept in `raw_arguments`. Empty
    /// text means "no arguments" (`{}`).
    pub fn from_argument_text(id: impl Into<String>, name: impl Into<String>, text: &str) -> Self {
        let (arguments, raw_arguments) = Self::parse_arguments(text);
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            raw_arguments,
        }
    }

    /// Argument text as [`from_argument_text`](Self::from_argument_text)
    /// reads it: `(arguments, raw_arguments)`, the JSON value and `None`,
    /// or `Null` and the text when it is not JSON; empty text is `{}`. For a
    /// decoder that sees the text only while it parses (an escaped string).
    pub fn parse_arguments(text: &str) -> (Value, Option<String>) {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return (Value::Object(serde_json::Map::new()), None);
        }
        match serde_json::from_str(trimmed) {
            Ok(value) => (value, None),
            Err(_) => (Value::Null, Some(text.to_owned())),
        }
    }

    /// The arguments as the model sent them, as text: the raw text when they
    /// were malformed, otherwise compact JSON.
    pub fn arguments_text(&self) -> String {
        match &self.raw_arguments {
            Some(raw) => raw.clone(),
            None => self.arguments.to_string(),
        }
    }
}

/// The outcome of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    /// Name of the tool that was called (some providers need it).
    pub name: String,
    /// The result text (JSON text for structured results).
    pub content: String,
    /// Whether the call failed; `content` then explains why.
    #[serde(default)]
    pub is_error: bool,
    /// Images, documents or audio the tool returned with its text (not
    /// written in JSON when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

impl ToolResult {
    /// A successful result.
    pub fn success(call_id: impl Into<String>, name: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: false,
            attachments: Vec::new(),
        }
    }

    /// A failed result whose content tells the model what went wrong.
    pub fn error(call_id: impl Into<String>, name: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: true,
            attachments: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_goes_back_only_to_its_own_provider_or_anyone_when_untagged() {
        let untagged = ReasoningBlock {
            signature: Some("sig".into()),
            ..ReasoningBlock::default()
        };
        assert!(untagged.is_from("anthropic") && untagged.is_from("gcp.gemini"));
        let tagged = ReasoningBlock {
            provider: Some("anthropic".into()),
            ..untagged
        };
        assert!(tagged.is_from("anthropic"));
        assert!(!tagged.is_from("gcp.gemini"));
        let json = serde_json::to_value(&tagged).unwrap_or_default();
        assert_eq!(json["provider"], "anthropic");
        let back: ReasoningBlock = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, tagged);
    }
}
