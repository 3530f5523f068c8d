//! What is sent to a model and what comes back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AssistantMessage, Message, ToolDefinition, Usage};

/// Whether and how the model may call tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The model must answer in text and call no tool.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool {
        /// Name of the tool to call.
        name: String,
    },
}

/// A structured-output constraint: the reply must be JSON matching `schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// A short name for the schema (some providers require one).
    pub name: String,
    /// The JSON Schema the reply must satisfy.
    pub schema: Value,
    /// Ask the provider to enforce the schema strictly where it can.
    #[serde(default)]
    pub strict: bool,
}

/// One request to a chat model, independent of any provider's wire format.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Overrides the client's configured model for this request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call, in a stable order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Whether and how the model may call tools.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one turn (provider default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Upper bound on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Sequences that end generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Structured-output constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Mark the stable prefix (system prompt, tools) as cacheable where the
    /// provider supports explicit prompt caching.
    #[serde(default)]
    pub prompt_caching: bool,
}

impl ChatRequest {
    /// A request with these messages and default settings.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Sets the system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Sets the tools.
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// Whether the history holds tool calls or tool results. Some providers
    /// (Anthropic, Bedrock) reject such a history when no tools are defined.
    pub fn has_tool_blocks(&self) -> bool {
        self.messages.iter().any(|message| match message {
            Message::Assistant(assistant) => !assistant.tool_calls.is_empty(),
            Message::Tool(_) => true,
            _ => false,
        })
    }
}

/// Why the model stopped generating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its turn.
    #[default]
    EndTurn,
    /// The model wants tools to run.
    ToolUse,
    /// The token limit was reached.
    MaxTokens,
    /// A stop sequence was produced.
    StopSequence,
    /// The provider withheld or cut the output (safety filter, refusal).
    ContentFilter,
}

/// A model's complete reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// What the model said.
    pub message: AssistantMessage,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Tokens used (normalised, see [`Usage`]).
    pub usage: Usage,
    /// The model that answered, as reported by the provider.
    #[serde(default)]
    pub model: String,
    /// The provider's response id, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}
