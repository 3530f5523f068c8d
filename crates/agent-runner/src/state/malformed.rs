//! A reply whose tool call the provider could not use
//! ([`LlmErrorKind::MalformedToolCall`](agent_core::LlmErrorKind::MalformedToolCall),
//! e.g. Gemini's `MALFORMED_FUNCTION_CALL`), or a reply with a call that has
//! no name (which every provider refuses in the history): a fault of the
//! model's output, which the model can put right, not a failure of the
//! request. An unnamed call's reply is counted (iteration, usage) but not
//! kept.
//!
//! There is no reply to keep (nothing enters the history, so no call is
//! left without a result):
//! 1. the model is asked again with the same request and a transient user
//!    message naming the problem in the provider's words (gone once the
//!    reply arrives, like the other re-asks);
//! 2. if that reply is malformed too, the run ends with the error, as any
//!    model error ends it.
//!
//! A usable reply clears the mark, so a later malformed reply is corrected
//! again: the run's iteration limit still bounds the model calls. One
//! mechanism for every provider that reports the fault with this kind.

use agent_core::{AssistantMessage, LlmError};

use super::RunState;
use crate::prompts;

impl RunState {
    /// Handles a malformed-call `error` of a chat call: `true` when the
    /// model is asked again (the pending call is readied anew with the
    /// correction), `false` when the run is to end with the error (the
    /// previous reply was malformed too).
    pub(super) fn reask_after_malformed_call(&mut self, error: &LlmError) -> bool {
        if std::mem::replace(&mut self.reasked_on_malformed_call, true) {
            return false;
        }
        // A re-ask's own transient message gives way to the correction.
        self.drop_restatement();
        self.push_transient(prompts::malformed_call_correction(&error.message));
        self.prepared = false;
        true
    }
}

/// The error that stands for a reply's first call without a name (blank
/// counts as none), if it has one.
pub(super) fn unnamed_call(message: &AssistantMessage) -> Option<LlmError> {
    let call = message.tool_calls.iter().find(|call| call.name.trim().is_empty())?;
    Some(LlmError::malformed_tool_call(format!(
        "the tool call `{}` has no name; name one of the tools offered",
        call.id
    )))
}
