//! The agent the server and resume targets run: a model that answers at
//! once and one tool.

use std::sync::Arc;

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, LlmClient, LlmError, ToolContext, ToolError,
};
use agent_runner::Agent;
use agent_tools::{ToolBox, ToolSet, TypedTool};
use async_trait::async_trait;

/// The fuzz agent's name, provider and model: a saved run must name them
/// to be resumed.
pub(crate) const AGENT: &str = "fuzz";
pub(crate) const PROVIDER: &str = "fuzz";
pub(crate) const MODEL: &str = "fuzz-model";

/// A model that answers every request with the same short text.
#[derive(Debug)]
struct Answering;

#[async_trait]
impl LlmClient for Answering {
    fn provider(&self) -> &'static str {
        PROVIDER
    }
    fn model(&self) -> &'static str {
        MODEL
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_tools: true,
            parallel_tool_calls: true,
            streaming: true,
            ..Capabilities::default()
        }
    }
    async fn complete(&self, _: &ChatRequest, _: &CancellationToken) -> Result<ChatResponse, LlmError> {
        Ok(agent_testing::response::text("It is done."))
    }
}

/// Arguments of the `note` tool.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct NoteArgs {
    /// What to note.
    text: String,
}

/// The fuzz agent: [`Answering`] with a `note` tool.
pub(crate) fn agent() -> Agent {
    let tool = TypedTool::new("note", "Notes a text.", |args: NoteArgs, _: ToolContext| async move {
        Ok::<_, ToolError>(format!("noted {} characters", args.text.chars().count()))
    });
    let tools = ToolBox::new();
    if let Err(error) = tools.register(Arc::new(ToolSet::new("notes", "Notes").tool(tool)), true) {
        panic!("the fuzz agent's tool could not be registered: {error}");
    }
    Agent::builder(Arc::new(Answering))
        .name(AGENT)
        .system_prompt("You note things.")
        .tools(Arc::new(tools))
        .build()
}
