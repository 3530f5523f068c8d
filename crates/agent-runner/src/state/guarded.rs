//! What guardrails, hooks and approvers change in a run: a call's
//! arguments, the user's message, the final answer, and a run ended by a
//! tripped guardrail ([`crate::guardrails`]).
//!
//! The checks themselves run in the driver (they may be async); these are
//! the state's side of them, plain data changes that keep the record and
//! the history agreeing.

use std::sync::Arc;

use agent_core::{GuardrailStage, GuardrailTrip, Message, RunEnd, ToolCall};
use serde_json::Value;

use super::{Phase, RunState};
use crate::batch::Slot;
use crate::prompts;

impl RunState {
    /// Runs the waiting call `call_id` of the batch about to run with
    /// `arguments` instead of the model's: the call that runs, its record,
    /// its entry in the waiting list and the reply in the history all show
    /// them. `false` (nothing changed) when no such call is still to run.
    ///
    /// With a text protocol the reply's text keeps the model's arguments;
    /// the record and the tool get the new ones.
    pub fn rewrite_call(&mut self, call_id: &str, arguments: Value) -> bool {
        let Phase::NeedsTools { batch } = &mut self.phase else {
            return false;
        };
        let Some(index) = batch.to_run.iter().position(|call| call.id == call_id) else {
            return false;
        };
        if batch.finished(index).is_some() {
            return false;
        }
        let mut call = (*batch.to_run[index]).clone();
        call.arguments = arguments;
        call.raw_arguments = None;
        let call = Arc::new(call);
        for (entry, slot) in &mut batch.entries {
            if matches!(slot, Slot::Run { index: at } if *at == index) {
                *entry = Arc::clone(&call);
            }
        }
        for pending in &mut self.approval.pending {
            if pending.id == call_id {
                pending.clone_from(&call);
            }
        }
        if let Some(Message::Assistant(reply)) = self
            .request
            .messages
            .iter_mut()
            .rev()
            .find(|message| matches!(message, Message::Assistant(reply) if has_call(&reply.tool_calls, call_id)))
            && let Some(in_history) = reply.tool_calls.iter_mut().find(|candidate| candidate.id == call_id)
        {
            in_history.clone_from(&call);
        }
        batch.to_run[index] = call;
        true
    }

    /// The calls of the batch about to run (or waiting for approval) that
    /// have no outcome yet; empty unless the run waits for tools.
    pub fn calls_to_run(&self) -> Vec<ToolCall> {
        let Phase::NeedsTools { batch } = &self.phase else {
            return Vec::new();
        };
        batch
            .to_run
            .iter()
            .enumerate()
            .filter(|(index, _)| batch.finished(*index).is_none())
            .map(|(_, call)| (**call).clone())
            .collect()
    }

    /// The user's message the run answers (the last user message before
    /// its first model call).
    pub fn user_message(&self) -> Option<&str> {
        self.request.messages.iter().rev().find_map(|message| match message {
            Message::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
    }

    /// Replaces the user's message before the first model call (an input
    /// guardrail rewrote it).
    pub fn rewrite_user_message(&mut self, text: String) {
        if let Some(content) = self
            .request
            .messages
            .iter_mut()
            .rev()
            .find_map(|message| match message {
                Message::User { content, .. } => Some(content),
                _ => None,
            })
        {
            *content = text;
        }
    }

    /// The final answer, once the run is over: what the user is told.
    pub fn answer(&self) -> &str {
        &self.response
    }

    /// Replaces the final answer (an output guardrail rewrote it), in the
    /// record and in the history.
    pub fn rewrite_answer(&mut self, text: String) {
        if let Some(Message::Assistant(reply)) = self.request.messages.last_mut()
            && reply.content == self.response
        {
            reply.content.clone_from(&text);
        }
        self.response = text;
    }

    /// Ends the run because `trip` tripped: nothing it blocked goes on.
    ///
    /// - An input trip leaves the user's message out of the history (no
    ///   model call was made).
    /// - An output trip withholds the answer: the user gets none, the
    ///   history keeps a note in its place.
    /// - A tool trip answers every call of the batch that did not run with
    ///   a note naming the guardrail (a tool result the guardrail blocked
    ///   was replaced by the driver before it reached the state).
    pub fn trip_guardrail(&mut self, trip: GuardrailTrip) {
        let detail = trip.to_string();
        match trip.stage {
            GuardrailStage::Input => {
                if self.iteration == 0
                    && let Some(at) = self
                        .request
                        .messages
                        .iter()
                        .rposition(|message| matches!(message, Message::User { .. }))
                {
                    self.request.messages.remove(at);
                }
                self.response.clear();
            }
            GuardrailStage::Output => {
                let note = prompts::withheld_answer(&trip.name);
                if let Some(Message::Assistant(reply)) = self.request.messages.last_mut()
                    && reply.content == self.response
                {
                    reply.content = note;
                }
                self.response.clear();
            }
            GuardrailStage::ToolCall | GuardrailStage::ToolResult => {
                self.approval.take_pending();
                self.approval.take_denied();
                if let Phase::NeedsTools { batch } =
                    std::mem::replace(&mut self.phase, Phase::NeedsModel { forced: None })
                {
                    let reason = format!("the guardrail `{}` stopped the run", trip.name);
                    self.abandon(batch, &reason);
                }
                self.response.clear();
            }
        }
        self.guardrail = Some(trip);
        self.finish(RunEnd::Guardrail, Some(detail));
    }

    /// The guardrail that ended the run, if one did.
    pub fn guardrail_trip(&self) -> Option<&GuardrailTrip> {
        self.guardrail.as_ref()
    }

    /// Whether the user's message still has its input check to pass (a
    /// new run before its first model call).
    pub fn input_unchecked(&self) -> bool {
        !self.input_checked && self.iteration == 0
    }

    /// The input check of the user's message was made.
    pub fn mark_input_checked(&mut self) {
        self.input_checked = true;
    }
}

fn has_call(calls: &[ToolCall], id: &str) -> bool {
    calls.iter().any(|call| call.id == id)
}
