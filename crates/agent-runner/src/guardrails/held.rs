//! Requested tool calls shown only once the tool-call guardrails checked
//! them: a watcher of the run's events never sees arguments a guardrail
//! blocked, and sees rewritten ones as they will run.

use agent_core::{AgentEvent, ToolCall};

use super::Guardrails;
use crate::state::RunState;

/// The events from a batch's first [`AgentEvent::ToolCallRequested`] on,
/// kept (in order) until the batch's calls are checked.
#[derive(Debug, Default)]
pub(crate) struct HeldCalls {
    holding: bool,
    events: Vec<AgentEvent>,
}

impl HeldCalls {
    /// Holds requested calls when `guardrails` check calls; else holds nothing.
    pub(crate) fn new(guardrails: &Guardrails) -> Self {
        Self {
            holding: !guardrails.tool_calls.is_empty(),
            events: Vec::new(),
        }
    }

    /// `event`, when it may go out now.
    pub(crate) fn pass(&mut self, event: AgentEvent) -> Option<AgentEvent> {
        if self.holding && (!self.events.is_empty() || matches!(event, AgentEvent::ToolCallRequested { .. })) {
            self.events.push(event);
            return None;
        }
        Some(event)
    }

    /// The events held, once the guardrails checked the calls of `state`:
    /// the calls with the arguments that will run. When a check ended the
    /// run, the calls of the blocked batch are left out (requested and
    /// waiting for approval alike).
    pub(crate) fn release(&mut self, state: &RunState) -> Vec<AgentEvent> {
        if self.events.is_empty() {
            return Vec::new();
        }
        let events = std::mem::take(&mut self.events);
        let blocked = state.is_finished();
        let checked = state.calls_to_run();
        let as_checked = |call: ToolCall| {
            checked
                .iter()
                .find(|candidate| candidate.id == call.id)
                .cloned()
                .unwrap_or(call)
        };
        events
            .into_iter()
            .filter_map(|event| match event {
                AgentEvent::ToolCallRequested { .. } | AgentEvent::ApprovalRequested { .. } if blocked => None,
                AgentEvent::ToolCallRequested { iteration, call } => Some(AgentEvent::ToolCallRequested {
                    iteration,
                    call: as_checked(call),
                }),
                AgentEvent::ApprovalRequested { iteration, calls } => Some(AgentEvent::ApprovalRequested {
                    iteration,
                    calls: calls.into_iter().map(as_checked).collect(),
                }),
                other => Some(other),
            })
            .collect()
    }
}
