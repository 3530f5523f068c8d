//! A reply that only repeats calls already answered in the run
//! ([`RunConfig::reask_repeated_calls`](crate::RunConfig)).
//!
//! Given a result, a small model often makes the same call again (in other
//! units, or with the result fed back) instead of the next call the request
//! needs, or the answer. Such a reply (other than exactly the previous
//! round's calls again, which the loop detection forces an answer to, as
//! ARCHITECTURE.md's behaviour 5 says) is not run and does not enter the
//! history:
//! 1. the first time in a run, the model is asked once more, with the calls
//!    already made and the user's question restated after the results (a
//!    transient message, gone once the reply arrives);
//! 2. the second time, the answer is forced, as for a loop.
//!
//! One mechanism for every provider; which calls count as answered is
//! [`AnsweredCalls`]'s rule.

use agent_core::{AgentEvent, AnsweredCalls, Message, ToolCall};

use super::{Phase, RunState};
use crate::forced::ForcedReason;
use crate::loops::Cycle;
use crate::prompts;

impl RunState {
    /// Handles a reply of `text` and `calls` that only repeats answered
    /// calls: `true` when it did (the run goes on with a re-ask or a forced
    /// answer), `false` when the reply is to be taken as usual.
    pub(super) fn reask_on_repeat(&mut self, text: &str, calls: &[ToolCall]) -> bool {
        if !self.config.reask_repeated_calls || !text.trim().is_empty() || calls.is_empty() {
            return false;
        }
        let answered = AnsweredCalls::in_request(&self.request);
        if !calls.iter().all(|call| answered.repeats(&call.name, &call.arguments)) {
            return false;
        }
        let mut signature = crate::loops::signature(calls);
        if self.config.deduplicate_calls {
            signature.dedup();
        }
        if self.loops.is_last_round(&signature) {
            return false;
        }
        let repeated: Vec<String> = calls.iter().map(|call| call.name.clone()).collect();
        self.response.clear();
        self.prepared = false;
        if std::mem::replace(&mut self.reasked_on_repeat, true) {
            self.emit(AgentEvent::LoopDetected {
                iteration: self.iteration,
            });
            self.force_answer(ForcedReason::LoopDetected, Some(Cycle::of_calls(calls)));
            return true;
        }
        if self.iteration >= self.config.max_iterations {
            // No room for another try: the answer is forced, as at the limit.
            self.force_answer(ForcedReason::MaxIterations, None);
            return true;
        }
        self.emit(AgentEvent::CallsRepeated {
            iteration: self.iteration,
            tools: repeated,
        });
        let made: Vec<String> = answered
            .calls()
            .map(|(name, arguments)| format!("{name}({arguments})"))
            .collect();
        let question = self.request.messages.iter().rev().find_map(|message| match message {
            Message::User { content, .. } if !content.trim().is_empty() => Some(content.as_str()),
            _ => None,
        });
        let reminder = prompts::repeated_calls_reminder(&made, question.unwrap_or_default());
        self.push_transient(reminder);
        self.phase = Phase::NeedsModel { forced: None };
        true
    }
}
