//! [`ChatSession`]: one conversation with an agent over many runs.

use agent_core::{AgentRunResult, Message, RunEnd, ToolContext, Usage};
use serde::{Deserialize, Serialize};

use crate::{Agent, RunError};

/// A conversation with an agent over many user turns: the history the next
/// turn continues, and what the turns used and cost so far.
///
/// Each turn runs on the history so far; a finished turn's messages become
/// the history, a failed one leaves it as it was (the message can be sent
/// again), and its usage counts either way.
///
/// ```
/// use std::sync::Arc;
/// use agent_core::ToolContext;
/// use agent_runner::{Agent, ChatSession};
/// use agent_testing::{ScriptedClient, response};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = ScriptedClient::new()
///     .respond(response::text("Hello, Ada."))
///     .respond(response::text("Your name is Ada."));
/// let agent = Agent::builder(Arc::new(client)).build();
/// let mut chat = ChatSession::new();
/// chat.send(&agent, "I am Ada.", &ToolContext::new()).await?;
/// let answer = chat.send(&agent, "Who am I?", &ToolContext::new()).await?;
/// assert_eq!(answer.response, "Your name is Ada.");
/// assert_eq!((chat.turns(), chat.runs), (2, 2));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatSession {
    /// The history the next turn continues.
    pub messages: Vec<Message>,
    /// Tokens used by the runs since the start (or the last
    /// [`reset`](Self::reset)).
    pub usage: Usage,
    /// Estimated cost, in USD, of the runs whose model had a price.
    pub cost_usd: f64,
    /// Runs whose model had no price in the catalog (their cost is unknown).
    pub unpriced_runs: u32,
    /// Runs made, failed ones included.
    pub runs: u32,
}

impl ChatSession {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// A conversation continuing `messages` (a stored session), with nothing
    /// used yet.
    pub fn with_history(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// User turns in the history.
    pub fn turns(&self) -> usize {
        self.messages
            .iter()
            .filter(|message| matches!(message, Message::User { .. }))
            .count()
    }

    /// Takes in a finished run of the next turn: its usage and cost always,
    /// its messages as the new history unless it failed
    /// ([`RunEnd::Error`]). Returns whether the history moved on.
    pub fn record(&mut self, result: &AgentRunResult) -> bool {
        self.runs += 1;
        self.usage += result.usage;
        match result.cost_usd {
            Some(cost) => self.cost_usd += cost,
            None => self.unpriced_runs += 1,
        }
        if result.stop_reason == RunEnd::Error {
            return false;
        }
        self.messages.clone_from(&result.messages);
        true
    }

    /// Runs `user_message` on `agent` as the next turn and
    /// [records](Self::record) it.
    ///
    /// # Errors
    ///
    /// The run's [`RunError`]; its partial record's usage is counted, the
    /// history is left as it was.
    pub async fn send(
        &mut self,
        agent: &Agent,
        user_message: impl Into<String>,
        context: &ToolContext,
    ) -> Result<AgentRunResult, RunError> {
        match agent
            .run(user_message)
            .history(self.messages.clone())
            .context(context.clone())
            .await
        {
            Ok(result) => {
                self.record(&result);
                Ok(result)
            }
            Err(error) => {
                self.record(&error.result);
                Err(error)
            }
        }
    }

    /// Starts over: no history, nothing used.
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agent_testing::{ScriptedClient, response};

    use super::*;

    fn result(stop: RunEnd, messages: Vec<Message>, cost: Option<f64>) -> AgentRunResult {
        AgentRunResult {
            response: String::new(),
            stop_reason: stop,
            stop_detail: None,
            iterations: 1,
            tool_calls: Vec::new(),
            model_calls: Vec::new(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
            cost_usd: cost,
            provider: "p".to_owned(),
            model: "m".to_owned(),
            messages,
            compactions: Vec::new(),
            pending_approvals: Vec::new(),
            scene: None,
            grounding: None,
            guardrail: None,
        }
    }

    #[test]
    fn a_finished_turn_moves_the_history_on_and_adds_its_cost() {
        let mut chat = ChatSession::new();
        let history = vec![Message::user("hi"), Message::assistant("hello")];
        assert!(chat.record(&result(RunEnd::Completed, history.clone(), Some(0.25))));
        assert!(chat.record(&result(RunEnd::MaxIterations, history.clone(), None)));
        assert_eq!(chat.messages, history);
        assert_eq!(chat.turns(), 1);
        assert_eq!((chat.runs, chat.unpriced_runs), (2, 1));
        assert!((chat.cost_usd - 0.25).abs() < f64::EPSILON);
        assert_eq!(chat.usage.total_tokens(), 30);
    }

    #[test]
    fn a_failed_turn_counts_its_usage_and_keeps_the_history() {
        let mut chat = ChatSession::with_history(vec![Message::user("before")]);
        assert!(!chat.record(&result(RunEnd::Error, vec![Message::user("lost")], Some(0.5))));
        assert_eq!(chat.messages, vec![Message::user("before")]);
        assert_eq!(chat.runs, 1);
        assert_eq!(chat.usage.total_tokens(), 15);
        chat.reset();
        assert_eq!(chat, ChatSession::default());
    }

    #[tokio::test]
    async fn send_continues_the_history() {
        let client = Arc::new(
            ScriptedClient::new()
                .respond(response::text("one"))
                .respond(response::text("two")),
        );
        let agent = Agent::builder(client.clone()).build();
        let mut chat = ChatSession::new();
        let context = ToolContext::new();
        let first = chat.send(&agent, "first", &context).await.map(|r| r.response);
        let second = chat.send(&agent, "second", &context).await.map(|r| r.response);
        assert_eq!(
            (first.ok().as_deref(), second.ok().as_deref()),
            (Some("one"), Some("two"))
        );
        let requests = client.requests();
        assert_eq!(requests.len(), 2);
        // The second request carries the first turn.
        assert_eq!(requests[1].messages.len(), requests[0].messages.len() + 2);
        assert_eq!(chat.turns(), 2);
    }
}
