//! What is sent to a model and what comes back.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AssistantMessage, LlmError, Message, ToolDefinition, Usage};

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
    /// Tools the model may call, in a stable order; shared, so that every
    /// request of a run (and every run of an agent) offers the registry's
    /// definitions without copying them.
    #[serde(default, skip_serializing_if = "no_tools")]
    pub tools: Arc<[ToolDefinition]>,
    /// Whether and how the model may call tools.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one turn (provider default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// At most this many tool calls are wanted in the reply: a provider
    /// that generates locally stops writing there; the others ignore it
    /// (the runner caps the calls it runs either way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
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

fn no_tools(tools: &Arc<[ToolDefinition]>) -> bool {
    tools.is_empty()
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

    /// Sets the tools (a `Vec`, or definitions already shared).
    pub fn with_tools(mut self, tools: impl Into<Arc<[ToolDefinition]>>) -> Self {
        self.tools = tools.into();
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

impl ChatRequest {
    /// The tools the model may call under [`ChatRequest::tool_choice`]: none
    /// for `None`, every one for `Auto` and `Required`, the named one for
    /// `Tool`. A named tool that is not offered is an invalid-request error
    /// naming the offered ones. For providers that cannot express a tool
    /// choice and narrow the offered tools instead.
    pub fn callable_tools(&self) -> Result<Vec<&ToolDefinition>, LlmError> {
        match &self.tool_choice {
            ToolChoice::None => Ok(Vec::new()),
            ToolChoice::Auto | ToolChoice::Required => Ok(self.tools.iter().collect()),
            ToolChoice::Tool { name } => match self.tools.iter().find(|tool| tool.name == *name) {
                Some(tool) => Ok(vec![tool]),
                None => Err(LlmError::invalid_request(format!(
                    "tool_choice names the tool `{name}`, which is not among the request's tools ({})",
                    self.tools
                        .iter()
                        .map(|tool| tool.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            },
        }
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
    /// Which provider answered and which failed first, when the client
    /// routes between several ([`Route`](crate::Route)); none from a
    /// client of one provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<crate::Route>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn names(request: &ChatRequest) -> Result<Vec<&str>, LlmError> {
        Ok(request
            .callable_tools()?
            .iter()
            .map(|tool| tool.name.as_str())
            .collect())
    }

    #[test]
    fn callable_tools_follow_the_tool_choice() -> Result<(), LlmError> {
        let tool = |name: &str| ToolDefinition::new(name, "", json!({"type": "object"}));
        let mut request = ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![tool("a"), tool("b")]);
        assert_eq!(names(&request)?, ["a", "b"]);
        request.tool_choice = ToolChoice::Required;
        assert_eq!(names(&request)?, ["a", "b"]);
        request.tool_choice = ToolChoice::None;
        assert!(names(&request)?.is_empty());
        request.tool_choice = ToolChoice::Tool { name: "b".into() };
        assert_eq!(names(&request)?, ["b"]);
        request.tool_choice = ToolChoice::Tool { name: "c".into() };
        let error = request.callable_tools().expect_err("c is not offered");
        assert!(
            error.message.contains("`c`") && error.message.contains("a, b"),
            "{error}"
        );
        Ok(())
    }
}
