//! The ReAct agent: Thought / Action / Action Input / Observation / Final
//! Answer, on the same loop, client and registry as every other agent.

use agent_core::{AgentRunResult, Message, ToolContext};
use agent_parse::{ReactKind, parse_react_step};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Agent, AgentBuilder, RunError, ToolProtocol};

/// One step of a ReAct run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReactStepRecord {
    /// What the model thought.
    pub thought: Option<String>,
    /// The tool it chose (`None` for the final answer).
    pub action: Option<String>,
    /// The tool's input.
    pub arguments: Option<Value>,
    /// What the tool returned, or the correction sent for a malformed step.
    pub observation: Option<String>,
    /// Whether the observation is an error.
    pub is_error: bool,
    /// The final answer, on the last step.
    pub final_answer: Option<String>,
}

/// A finished ReAct run: its steps and the full run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReactOutcome {
    /// Every step, in order.
    pub steps: Vec<ReactStepRecord>,
    /// The run record (answer, stop cause, usage, history).
    pub result: AgentRunResult,
}

/// An agent that reasons in ReAct steps. Stop sequences keep the model from
/// writing its own observations; one that does anyway has it discarded; a
/// step that cannot be read gets a corrective observation; the iteration
/// limit ends the run with a forced final answer.
///
/// ```
/// use std::sync::Arc;
/// use agent_core::{RunEnd, ToolContext, ToolRegistry};
/// use agent_runner::{Agent, ReactAgent};
/// use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = ScriptedClient::new()
///     .respond(response::text("Thought: I should look it up.\nAction: lookup\nAction Input: {\"q\": \"capital of France\"}"))
///     .respond(response::text("Thought: I know it now.\nFinal Answer: Paris"));
/// let registry = agent_tools::ToolBox::new();
/// registry.register(Arc::new(TestTools::new("kb").with(TestTool::new("lookup", ToolBehaviour::Reply("Paris".into())))), true).unwrap();
/// let agent = ReactAgent::new(Agent::builder(Arc::new(client)).tools(Arc::new(registry)));
/// let outcome = agent.run(vec![], "What is the capital of France?", &ToolContext::new()).await.unwrap();
/// assert_eq!(outcome.result.response, "Paris");
/// assert_eq!(outcome.steps[0].action.as_deref(), Some("lookup"));
/// assert_eq!(outcome.steps[0].observation.as_deref(), Some("Paris"));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ReactAgent {
    agent: Agent,
}

impl ReactAgent {
    /// A ReAct agent from a configured builder (its tools, limits, prompt).
    pub fn new(builder: AgentBuilder) -> Self {
        Self {
            agent: builder.tool_protocol(ToolProtocol::React).build(),
        }
    }

    /// The underlying agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Answers `question`, continuing `history`.
    pub async fn run(
        &self,
        history: Vec<Message>,
        question: impl Into<String>,
        context: &ToolContext,
    ) -> Result<ReactOutcome, RunError> {
        let history_len = history.len();
        match self.agent.run(question).history(history).context(context.clone()).await {
            Ok(result) => {
                // The steps follow the question, wherever compaction left it.
                let question_at = result.added_messages_start(history_len).unwrap_or(history_len);
                Ok(ReactOutcome {
                    steps: steps(&result, question_at + 1),
                    result,
                })
            }
            Err(error) => Err(error),
        }
    }
}

/// The steps of a run whose own messages start at `start`.
fn steps(result: &AgentRunResult, start: usize) -> Vec<ReactStepRecord> {
    let mut calls = result.tool_calls.iter();
    let messages = result.messages.get(start..).unwrap_or_default();
    messages
        .iter()
        .filter_map(Message::as_assistant)
        .map(|message| {
            let step = parse_react_step(&message.content);
            if let ReactKind::FinalAnswer(answer) = step.kind {
                return ReactStepRecord {
                    thought: step.thought,
                    action: None,
                    arguments: None,
                    observation: None,
                    is_error: false,
                    final_answer: Some(answer),
                };
            }
            let call = calls.next();
            ReactStepRecord {
                thought: step.thought,
                action: call.map(|c| c.name.clone()),
                arguments: call.map(|c| c.arguments.clone()),
                observation: call.map(|c| c.result.clone()),
                is_error: call.is_some_and(|c| c.is_error),
                final_answer: None,
            }
        })
        .collect()
}
