//! [`TurnRunner`]: what a chat runs each turn with, an [`Agent`] or a
//! [`SceneRouter`].

use std::sync::Arc;

use agent_core::{AgentEvent, LlmClient, Message, ToolContext, ToolRegistry};
use agent_runner::Agent;
use agent_runner::scenes::SceneRouter;
use futures::stream::BoxStream;

/// What a chat runs a turn with: an agent, or a scene router.
pub trait TurnRunner: Send + Sync {
    /// The model client.
    fn client(&self) -> &Arc<dyn LlmClient>;

    /// The tools (for a router: every scene's).
    fn registry(&self) -> &Arc<dyn ToolRegistry>;

    /// One turn as a stream of events ending with `RunFinished`.
    fn run_stream(
        &self,
        history: Vec<Message>,
        user_message: &str,
        context: ToolContext,
    ) -> BoxStream<'static, AgentEvent>;
}

impl TurnRunner for Agent {
    fn client(&self) -> &Arc<dyn LlmClient> {
        Agent::client(self)
    }

    fn registry(&self) -> &Arc<dyn ToolRegistry> {
        Agent::registry(self)
    }

    fn run_stream(
        &self,
        history: Vec<Message>,
        user_message: &str,
        context: ToolContext,
    ) -> BoxStream<'static, AgentEvent> {
        Box::pin(self.run(user_message).history(history).context(context).stream())
    }
}

impl TurnRunner for SceneRouter {
    fn client(&self) -> &Arc<dyn LlmClient> {
        SceneRouter::client(self)
    }

    fn registry(&self) -> &Arc<dyn ToolRegistry> {
        SceneRouter::registry(self)
    }

    fn run_stream(
        &self,
        history: Vec<Message>,
        user_message: &str,
        context: ToolContext,
    ) -> BoxStream<'static, AgentEvent> {
        Box::pin(SceneRouter::run_stream(self, history, user_message, context))
    }
}
