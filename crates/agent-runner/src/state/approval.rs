//! Calls that wait for the user's approval before the batch runs.
//!
//! When a reply asks for calls of tools that require approval, the batch
//! does not run until each of them is decided: [`Step::AwaitApproval`]
//! lists them, [`RunState::decide`] takes each decision. A denied call gets
//! its error result at once (it is never run); once nothing is pending,
//! [`Step::RunTools`] runs the rest. A run left waiting (nobody decides, as
//! when the driver has no [`ToolApprover`](agent_core::ToolApprover)) ends
//! with [`RunEnd::AwaitingApproval`] in its record, while its saved state
//! can still be decided and resumed.
//!
//! [`Step::AwaitApproval`]: crate::Step::AwaitApproval
//! [`Step::RunTools`]: crate::Step::RunTools
//! [`RunEnd::AwaitingApproval`]: agent_core::RunEnd::AwaitingApproval

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentEvent, ApprovalDecision, ToolCall};
use serde::{Deserialize, Serialize};

use super::{Phase, RunState};
use crate::batch::Batch;
use crate::step::ToolOutcome;

/// Which tools need approval, and the calls of the current batch that
/// still wait for a decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct ApprovalGate {
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(super) required: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) pending: Vec<ToolCall>,
    /// Calls of the current batch that never run (the user denied them, or
    /// their tool is not offered), so they do not count against the
    /// tool-call budget.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) denied: usize,
    /// Ids of the calls of the current batch the user approved in this
    /// process. Never saved: an approval read back from a store is not
    /// trusted, the call waits again ([`RunState::restrict_to`]).
    #[serde(skip)]
    approved: BTreeSet<String>,
    /// Which calls of the `required` tools ask, by their arguments; not
    /// saved (a state read back gets the resuming agent's).
    #[serde(skip)]
    pub(super) check: ApprovalCheck,
}

/// Which calls of a tool that needs approval ask for it, by their
/// arguments ([`ToolRegistry::approval_needed`](agent_core::ToolRegistry::approval_needed)).
/// Unset, every call of such a tool asks. Compares equal to any other:
/// it is a function, the state's data is the rest.
#[derive(Clone, Default)]
pub struct ApprovalCheck(Option<Arc<NeedsApproval>>);

/// Whether a call asks for approval.
type NeedsApproval = dyn Fn(&ToolCall) -> bool + Send + Sync;

impl ApprovalCheck {
    /// Asks for the calls `needed` says need approval.
    pub fn new(needed: impl Fn(&ToolCall) -> bool + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(needed)))
    }

    /// Whether `call` (of a tool that needs approval) asks.
    pub fn needed(&self, call: &ToolCall) -> bool {
        self.0.as_ref().is_none_or(|needed| needed(call))
    }

    /// Whether a check is set.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

impl fmt::Debug for ApprovalCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "ApprovalCheck(set)"
        } else {
            "ApprovalCheck(unset)"
        })
    }
}

impl PartialEq for ApprovalCheck {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl ApprovalGate {
    /// The calls still waiting.
    pub(super) fn pending(&self) -> &[ToolCall] {
        &self.pending
    }

    /// Forgets the waiting calls and the approved ones (the batch ended);
    /// returns the waiting ones.
    pub(super) fn take_pending(&mut self) -> Vec<ToolCall> {
        self.approved.clear();
        std::mem::take(&mut self.pending)
    }

    /// How many calls of the batch were denied; starts the count again.
    pub(super) fn take_denied(&mut self) -> usize {
        std::mem::take(&mut self.denied)
    }
}

/// A decision about a call that is not waiting for one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no call `{call_id}` is waiting for approval; waiting: {}", waiting_list(.waiting))]
pub struct ApprovalError {
    /// The id given.
    pub call_id: String,
    /// The ids of the calls that are waiting.
    pub waiting: Vec<String>,
}

fn waiting_list(waiting: &[String]) -> String {
    if waiting.is_empty() {
        "none".to_owned()
    } else {
        waiting.join(", ")
    }
}

impl RunState {
    /// Calls of these tools wait for the user's approval before they run.
    /// [`Agent`](crate::Agent) sets it from its registry
    /// ([`ToolRegistry::requires_approval`](agent_core::ToolRegistry::requires_approval)).
    pub fn with_approval_required<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.approval.required.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Of the calls of those tools, only those `check` says need it wait
    /// (by their arguments); without a check every call waits.
    /// [`Agent`](crate::Agent) sets it from its registry.
    pub fn with_approval_check(mut self, check: ApprovalCheck) -> Self {
        self.approval.check = check;
        self
    }

    /// The calls waiting for the user's approval (empty unless the next
    /// step is [`Step::AwaitApproval`](crate::Step::AwaitApproval)).
    pub fn pending_approvals(&self) -> &[ToolCall] {
        &self.approval.pending
    }

    /// Takes the user's decision about the waiting call `call_id`. A denied
    /// call gets its error result now and never runs; an approved one runs
    /// with the rest of its batch once no call is waiting.
    pub fn decide(&mut self, call_id: &str, decision: ApprovalDecision) -> Result<(), ApprovalError> {
        let position = self.approval.pending.iter().position(|call| call.id == call_id);
        let (Some(position), Phase::NeedsTools { .. }) = (position, &self.phase) else {
            return Err(ApprovalError {
                call_id: call_id.to_owned(),
                waiting: self.approval.pending.iter().map(|call| call.id.clone()).collect(),
            });
        };
        let call = self.approval.pending.remove(position);
        if let ApprovalDecision::Edit { arguments } = &decision {
            self.rewrite_call(&call.id, arguments.clone());
        }
        if matches!(decision, ApprovalDecision::Approve | ApprovalDecision::Edit { .. }) {
            self.approval.approved.insert(call.id.clone());
        }
        if let ApprovalDecision::Deny { reason } = decision {
            let index = match &self.phase {
                Phase::NeedsTools { batch } => batch.to_run.iter().position(|candidate| candidate.id == call.id),
                _ => None,
            };
            let outcome = ToolOutcome {
                content: ApprovalDecision::denied_result(&call.name, reason.as_deref()),
                is_error: true,
                duration: Duration::ZERO,
                cached: false,
                delegated_usage: None,
                attachments: Vec::new(),
            };
            if let Some(index) = index {
                // The phase was checked above and the index is in range.
                let _ = self.on_tool_outcome(index, outcome);
                self.approval.denied += 1;
            }
        }
        Ok(())
    }

    /// Approves the waiting call `call_id`.
    pub fn approve(&mut self, call_id: &str) -> Result<(), ApprovalError> {
        self.decide(call_id, ApprovalDecision::Approve)
    }

    /// Approves the waiting call `call_id` with `arguments` instead of the
    /// model's: the record and the history show the arguments that run.
    pub fn approve_edited(&mut self, call_id: &str, arguments: serde_json::Value) -> Result<(), ApprovalError> {
        self.decide(call_id, ApprovalDecision::Edit { arguments })
    }

    /// Denies the waiting call `call_id`: the model is told the user refused it.
    pub fn deny(&mut self, call_id: &str, reason: Option<String>) -> Result<(), ApprovalError> {
        self.decide(call_id, ApprovalDecision::Deny { reason })
    }

    /// Whether the run waits for decisions.
    pub fn is_awaiting_approval(&self) -> bool {
        !self.approval.pending.is_empty() && matches!(self.phase, Phase::NeedsTools { .. })
    }

    /// Marks the calls of `batch` that need approval as waiting, and says so.
    pub(super) fn hold_for_approval(&mut self, batch: &Batch) {
        if self.approval.required.is_empty() {
            return;
        }
        self.approval.pending = self.approval.waiting_in(batch);
        if !self.approval.pending.is_empty() {
            let calls = self.approval.pending.clone();
            self.emit(AgentEvent::ApprovalRequested {
                iteration: self.iteration,
                calls,
            });
        }
    }

    /// Marks again as waiting every call of the batch about to run that
    /// needs approval, has no outcome and was not approved in this process:
    /// what a state read back says is waiting (or not) does not count.
    pub(super) fn hold_batch_again(&mut self) {
        if let Phase::NeedsTools { batch } = &self.phase {
            self.approval.pending = self.approval.waiting_in(batch);
        }
    }
}

impl ApprovalGate {
    /// The calls of `batch` that wait for a decision: of a tool that needs
    /// one, without an outcome yet, and not approved.
    fn waiting_in(&self, batch: &Batch) -> Vec<ToolCall> {
        batch
            .to_run
            .iter()
            .enumerate()
            .filter(|(index, call)| {
                self.required.contains(&call.name)
                    && batch.finished(*index).is_none()
                    && !self.approved.contains(&call.id)
                    && self.check.needed(call)
            })
            .map(|(_, call)| (**call).clone())
            .collect()
    }
}
