//! Handoffs: an agent offered to another agent as a tool.

use agent_core::{RunEnd, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolProvider};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::routing::function_name;
use crate::Agent;

/// The domain name of an [`AgentTool`] unless set otherwise.
pub const HANDOFF_DOMAIN: &str = "handoff";

/// An [`Agent`] as a tool of another agent: the tool takes a `task` (the
/// text the sub-agent gets as its user message; it does not see the
/// calling conversation) and returns the sub-agent's answer.
///
/// The sub-agent's tokens and cost are reported through
/// [`ToolContext::report_usage`]: the calling run adds them to its usage
/// and cost and keeps them on the call's record
/// ([`ToolCallRecord::delegated_usage`](agent_core::ToolCallRecord)).
/// The sub-agent runs with the caller's context (user, roles, what the user
/// said, the approver) and stops when the calling run is cancelled. A
/// sub-run that fails, is cancelled, runs out of budget or waits for an
/// approval is a failed tool call whose message says so; its usage still
/// counts.
pub struct AgentTool {
    agent: Agent,
    domain: String,
    tool_name: String,
    description: String,
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("agent", &self.agent.name())
            .field("domain", &self.domain)
            .field("tool_name", &self.tool_name)
            .finish_non_exhaustive()
    }
}

impl AgentTool {
    /// `agent` as a tool named after it (letters, digits, `_` and `-`),
    /// described by its description, in the domain [`HANDOFF_DOMAIN`].
    pub fn new(agent: Agent) -> Self {
        let tool_name = function_name(agent.name());
        let description = if agent.description().is_empty() {
            format!("Hands a task to the agent `{}` and returns its answer.", agent.name())
        } else {
            format!(
                "{} Hands it a task and returns its answer.",
                agent.description().trim_end()
            )
        };
        Self {
            agent,
            domain: HANDOFF_DOMAIN.to_owned(),
            tool_name,
            description,
        }
    }

    /// The tool's name.
    #[must_use]
    pub fn tool_name(mut self, name: impl Into<String>) -> Self {
        self.tool_name = name.into();
        self
    }

    /// The tool's description, for the calling model.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The domain (provider name) the tool is enabled by.
    #[must_use]
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = domain.into();
        self
    }

    /// The wrapped agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }
}

#[async_trait]
impl ToolProvider for AgentTool {
    fn name(&self) -> &str {
        &self.domain
    }

    fn description(&self) -> &'static str {
        "Agents that take over a task"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![ToolDefinition::new(
            self.tool_name.clone(),
            self.description.clone(),
            json!({
                "type": "object",
                "properties": {
                    "task": {
                        "type": "string",
                        "description": "The task, with every detail the agent needs: it does not see this conversation."
                    }
                },
                "required": ["task"]
            }),
        )]
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        if tool != self.tool_name {
            return Err(ToolError::UnknownTool {
                name: tool.to_owned(),
                available: vec![self.tool_name.clone()],
            });
        }
        let Some(task) = arguments
            .get("task")
            .and_then(Value::as_str)
            .filter(|task| !task.trim().is_empty())
        else {
            return Err(ToolError::InvalidArguments {
                tool: tool.to_owned(),
                problems: vec!["\"task\": a non-empty string is required".to_owned()],
            });
        };
        // The sub-run's tool calls get their own sinks from its driver.
        let sub_context = ToolContext {
            call_id: None,
            usage_sink: None,
            ..context.clone()
        };
        let name = self.agent.name();
        let result = match self.agent.run(task).context(sub_context.clone()).await {
            Ok(result) => result,
            Err(error) => {
                context.report_usage(error.result.usage, error.result.cost_usd);
                let detail = error.result.stop_detail.as_deref().unwrap_or("unknown error");
                return Err(ToolError::failed(format!("the agent `{name}` failed: {detail}")));
            }
        };
        context.report_usage(result.usage, result.cost_usd);
        match result.stop_reason {
            RunEnd::Completed | RunEnd::MaxIterations | RunEnd::LoopDetected => Ok(ToolOutput::Text(result.response)),
            RunEnd::Cancelled => Err(ToolError::Cancelled),
            other => {
                let detail = result.stop_detail.as_deref().unwrap_or("no detail");
                Err(ToolError::failed(format!(
                    "the agent `{name}` stopped ({}): {detail}",
                    other.as_str()
                )))
            }
        }
    }
}
