//! Human approval of tool calls: which calls wait for it, and who decides.
//!
//! A tool may require approval ([`ToolProvider::requires_approval`], or a
//! registry's own list). A run that reaches calls of such tools pauses
//! before running any of them: the [`ToolApprover`] of the run's
//! [`ToolContext`] decides each, or, without one, the run ends with
//! [`RunEnd::AwaitingApproval`] and lists the calls in
//! [`AgentRunResult::pending_approvals`]; its saved state continues once the
//! calls are approved or denied. A denied call is not run: the model gets
//! an error result saying the user refused it.
//!
//! [`ToolProvider::requires_approval`]: crate::ToolProvider::requires_approval
//! [`ToolContext`]: crate::ToolContext
//! [`RunEnd::AwaitingApproval`]: crate::RunEnd::AwaitingApproval
//! [`AgentRunResult::pending_approvals`]: crate::AgentRunResult::pending_approvals

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::ToolCall;

/// What the user decided about one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run the call.
    Approve,
    /// Do not run it; the model is told, with the reason when there is one.
    Deny {
        /// Why, in the user's words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Run it with these arguments instead of the model's (checked against
    /// the tool's schema like the model's are); the record and the
    /// history show the arguments that ran.
    Edit {
        /// The arguments to run the call with.
        arguments: serde_json::Value,
    },
}

impl ApprovalDecision {
    /// A denial without a reason.
    pub fn deny() -> Self {
        Self::Deny { reason: None }
    }

    /// The result the model gets for a call denied with `reason`.
    pub fn denied_result(tool: &str, reason: Option<&str>) -> String {
        match reason.map(str::trim).filter(|reason| !reason.is_empty()) {
            Some(reason) => format!(
                "Not run: the user did not approve this call of `{tool}` ({reason}). \
                 Do not retry it; tell the user or ask what to do instead."
            ),
            None => format!(
                "Not run: the user did not approve this call of `{tool}`. \
                 Do not retry it; tell the user or ask what to do instead."
            ),
        }
    }
}

/// Decides, while the run waits, whether calls that require approval run:
/// a terminal prompt, a chat message with buttons, a policy engine.
#[async_trait]
pub trait ToolApprover: Send + Sync {
    /// The decision about `call` (asked once per call, in the model's order).
    async fn decide(&self, call: &ToolCall) -> ApprovalDecision;
}
