//! [`TurnRunner`]: what a chat runs each turn with, an [`Agent`] or a
//! [`SceneRouter`].

use std::sync::Arc;

use agent_core::{AgentEvent, Attachment, LlmClient, Message, ToolContext, ToolRegistry};
use agent_runner::Agent;
use agent_runner::scenes::SceneRouter;
use futures::stream::BoxStream;

/// What a chat runs a turn with: an agent, or a scene router.
pub trait TurnRunner: Send + Sync {
    /// The model client.
    fn client(&self) -> &Arc<dyn LlmClient>;

    /// The tools (for a router: every scene's).
    fn registry(&self) -> &Arc<dyn ToolRegistry>;

    /// One turn, the user's message with what they attached, as a stream
    /// of events ending with `RunFinished`.
    fn run_stream(
        &self,
        history: Vec<Message>,
        user_message: &str,
        attachments: Vec<Attachment>,
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
        attachments: Vec<Attachment>,
        context: ToolContext,
    ) -> BoxStream<'static, AgentEvent> {
        let request = self.run(user_message).attach(attachments).history(history);
        Box::pin(request.context(context).stream())
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
        attachments: Vec<Attachment>,
        context: ToolContext,
    ) -> BoxStream<'static, AgentEvent> {
        Box::pin(SceneRouter::run_stream_attached(
            self,
            history,
            user_message,
            attachments,
            context,
        ))
    }
}
