//! What passes between a [`RunState`] and whoever drives it: the next step,
//! the outcome of a tool, a report out of phase, who the run is for.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{ChatRequest, ToolCall};
use serde::{Deserialize, Serialize};

#[cfg(doc)]
use crate::RunState;

/// What the driver must do next.
#[derive(Debug)]
pub enum Step<'a> {
    /// Send this request to the model. While the run compacts its
    /// conversation ([`RunState::is_compacting`]) it is a summary request:
    /// its reply goes to [`RunState::on_model_response`] like any other, but
    /// its text is not the run's answer.
    CallModel(&'a ChatRequest),
    /// Run these tool calls (already deduplicated) and report their outcomes
    /// in the same order. A call that already has an outcome
    /// ([`RunState::finished_tool_outcome`]: it finished before the state was
    /// saved, or the user denied it) must not run: its outcome stands,
    /// whatever is reported for it. The calls are shared with the state
    /// (`Arc`): a driver that must own them while it reports outcomes
    /// clones the `Arc`s, not the calls.
    RunTools(&'a [Arc<ToolCall>]),
    /// These calls of the batch need the user's approval before any tool of
    /// the batch runs: report each decision with
    /// [`RunState::decide`]. A driver that cannot ask anybody stops here;
    /// the run's record then says [`RunEnd::AwaitingApproval`], and its
    /// saved state can be decided and resumed later.
    ///
    /// [`RunEnd::AwaitingApproval`]: agent_core::RunEnd::AwaitingApproval
    AwaitApproval(&'a [ToolCall]),
    /// The run is over; take the result with [`RunState::into_result`].
    Finished,
}

/// The outcome of one tool execution, as reported by the driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    /// What the model will be told.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// How long it ran (0 when answered from the cache).
    pub duration: Duration,
    /// The tool did not run: the result came from the
    /// [`ToolResultCache`](crate::ToolResultCache).
    #[serde(default, skip_serializing_if = "is_false")]
    pub cached: bool,
    /// What the tool reported of its own model calls (a handed-off
    /// sub-agent's run, [`ToolContext::report_usage`](agent_core::ToolContext::report_usage));
    /// the run adds it to its usage and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegated_usage: Option<agent_core::DelegatedUsage>,
    /// Media the tool returned with its text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<agent_core::Attachment>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(value: &bool) -> bool {
    !*value
}

/// A report that does not fit the phase the run is in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the run {expected}, but got {got}")]
pub struct StepError {
    expected: &'static str,
    got: &'static str,
}

impl StepError {
    /// The run `expected` (what its phase waits for) but `got` this report.
    pub(crate) fn new(expected: &'static str, got: &'static str) -> Self {
        Self { expected, got }
    }
}

/// Who the run is for, as reported in events and the result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunIdentity {
    /// The agent's name.
    pub agent: String,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
}

impl RunIdentity {
    /// Whether `client` talks to this run's provider and model: only then
    /// can it go on with the run's saved state.
    pub fn is_served_by(&self, client: &dyn agent_core::LlmClient) -> bool {
        self.provider == client.provider() && self.model == client.model()
    }
}

#[cfg(test)]
mod tests {
    use agent_testing::ScriptedClient;

    use super::RunIdentity;

    #[test]
    fn a_saved_run_goes_on_only_with_its_own_provider_and_model() {
        let client = ScriptedClient::new().with_model("small-1");
        let identity = |provider: &str, model: &str| RunIdentity {
            agent: "agent".into(),
            provider: provider.into(),
            model: model.into(),
        };
        let provider = agent_core::LlmClient::provider(&client).to_owned();
        assert!(identity(&provider, "small-1").is_served_by(&client));
        assert!(!identity(&provider, "large-2").is_served_by(&client));
        assert!(!identity("elsewhere", "small-1").is_served_by(&client));
    }
}
