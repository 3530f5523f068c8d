//! Saved runs resumed by an [`Agent`] under its policy of today
//! ([`Agent::resume_policy`], [`Agent::restore`]).

use std::collections::BTreeSet;

use agent_core::RunEnd;

use crate::agent::{Agent, RunError};
use crate::state::{ResumeError, ResumePolicy, RunState};
use crate::step::RunIdentity;

impl Agent {
    /// What this agent allows today, which a saved run it resumes is held
    /// to ([`RunState::restrict_to`]): its name, provider and model, the
    /// tools it offers (its registry's enabled tools) and those of them
    /// that require approval, its iteration limit, budgets and per-call
    /// `max_tokens`.
    pub fn resume_policy(&self) -> ResumePolicy {
        let registry = self.registry();
        let tools: BTreeSet<String> = registry.definitions().into_iter().map(|tool| tool.name).collect();
        let approval_required = tools
            .iter()
            .filter(|tool| registry.requires_approval(tool))
            .cloned()
            .collect();
        let client = self.client();
        let mut policy = ResumePolicy::new(RunIdentity {
            agent: self.name().to_owned(),
            provider: client.provider().to_owned(),
            model: client.model().to_owned(),
        });
        policy.approval_required = approval_required;
        policy.approval_check = crate::agent::approval_check(registry);
        policy.tools = tools;
        policy.max_iterations = self.config().max_iterations;
        policy.budget = self.config().budget;
        policy.max_tokens = self.agent_config().request.max_tokens;
        policy
    }

    /// A saved run's `state` (read back from a store), held to this agent's
    /// [policy](Self::resume_policy), ready to be decided
    /// ([`RunState::decide`]) and driven ([`resume`](Self::resume),
    /// [`stream_from`](Self::stream_from)). Those hold a state read back to
    /// the policy themselves; call this first to get the refusal as a
    /// [`ResumeError`] before anything runs, and before deciding: an
    /// approval given before the policy applies is asked again.
    ///
    /// # Errors
    ///
    /// [`ResumeError`] when the state is not this agent's run (another
    /// agent name, provider or model) or contradicts itself.
    pub fn restore(&self, mut state: RunState) -> Result<RunState, ResumeError> {
        state.restrict_to(&self.resume_policy())?;
        Ok(state)
    }

    /// `state` as this agent drives it: a state read back from storage is
    /// held to the agent's policy (one made in this process is the
    /// caller's, driven as it is); a refused one is a failed run that did
    /// nothing.
    pub(crate) fn held_to_policy(&self, state: RunState) -> Result<RunState, RunError> {
        if !state.is_read_back() {
            return Ok(state);
        }
        let mut state = state;
        match state.restrict_to(&self.resume_policy()) {
            Ok(()) => Ok(state),
            Err(error) => {
                tracing::warn!(agent = %self.name(), %error, "a saved run was refused");
                state.interrupt(RunEnd::Error, error.to_string());
                Err(RunError {
                    result: Box::new(state.into_result()),
                    source_error: None,
                    store_error: None,
                })
            }
        }
    }
}
