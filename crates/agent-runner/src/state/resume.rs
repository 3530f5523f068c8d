//! A saved run resumed under today's policy.
//!
//! A state read back from a store says which tools need approval, which
//! tools the run offers, how far its budgets go and whose run it is. None of
//! that is trusted when the run goes on: the configuration may have been
//! tightened since, and whoever can write the store can write the state.
//! [`RunState::restrict_to`] holds the state to a [`ResumePolicy`] (the
//! resuming agent's, [`Agent::resume_policy`](crate::Agent::resume_policy)):
//! the stricter of the two wins, field by field, and a state that is not
//! the agent's run, or does not agree with itself, is refused
//! ([`ResumeError`]).

use std::collections::BTreeSet;
use std::time::Duration;

use agent_core::ToolError;

use super::budgets::deadline_from_now;
use super::{Phase, RunState};
use crate::batch::Batch;
use crate::config::Budget;
use crate::forced::ForcedReason;
use crate::protocol::Protocol;
use crate::step::{RunIdentity, ToolOutcome};

/// What an agent allows today, which a saved run resumed by it is held to
/// ([`RunState::restrict_to`]). Build it with
/// [`Agent::resume_policy`](crate::Agent::resume_policy), or by hand with
/// [`ResumePolicy::new`] and its fields.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResumePolicy {
    /// Whose runs may be resumed: the agent's name, provider and model.
    pub identity: RunIdentity,
    /// Tools whose calls wait for the user's approval.
    pub approval_required: BTreeSet<String>,
    /// Which of their calls ask, by their arguments (unset: all of them).
    pub approval_check: super::ApprovalCheck,
    /// The tools the agent offers (its enabled tools). A call of any other
    /// tool is answered with an error and never runs.
    pub tools: BTreeSet<String>,
    /// Model calls before the answer is forced.
    pub max_iterations: u32,
    /// Budgets; the deadline counts from when the policy is applied.
    pub budget: Budget,
    /// The most tokens one model call may generate (`None`: no limit).
    pub max_tokens: Option<u32>,
}

impl ResumePolicy {
    /// The policy of `identity` that requires no approval, offers no tool,
    /// and sets no budget and the default iteration limit: fill in the
    /// fields that apply.
    pub fn new(identity: RunIdentity) -> Self {
        Self {
            identity,
            approval_required: BTreeSet::new(),
            approval_check: super::ApprovalCheck::default(),
            tools: BTreeSet::new(),
            max_iterations: crate::RunConfig::default().max_iterations,
            budget: Budget::default(),
            max_tokens: None,
        }
    }
}

/// Why a saved run cannot be resumed by an agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The state is the run of another agent, provider or model.
    #[error(
        "the saved run belongs to agent `{}` on {}/{}, not to agent `{}` on {}/{}",
        saved.agent, saved.provider, saved.model, resuming.agent, resuming.provider, resuming.model
    )]
    OtherRun {
        /// Whose run the state says it is.
        saved: Box<RunIdentity>,
        /// The agent that was to resume it.
        resuming: Box<RunIdentity>,
    },
    /// The state contradicts itself (say, its request names another model
    /// than its run's): it was not written by a run.
    #[error("the saved run is inconsistent: {0}")]
    Inconsistent(String),
}

/// Whether a state was read back (deserialised) and has not been held to a
/// policy since. Not part of the state's value: states compare equal
/// whatever it says.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReadBack(pub(super) bool);

impl PartialEq for ReadBack {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A state being deserialised was read back.
pub(super) fn read_back() -> ReadBack {
    ReadBack(true)
}

impl RunState {
    /// Holds the run to `policy` before it goes on: whichever of the state
    /// and the policy is stricter wins.
    ///
    /// - Approval: calls of the tools either requires approval for wait for
    ///   it; a batch the state was about to run waits again for every such
    ///   call not decided in this process (a decision is not trusted from
    ///   the store: [`decide`](Self::decide) after this).
    /// - Tools: those both offer. A call of any other tool (in the batch
    ///   about to run, or asked for later) is answered with an error and
    ///   never runs; the requests no longer list it.
    /// - Budgets, per field the smaller: tokens, cost, tool calls, model
    ///   calls (a run already at the limit is made to answer), the most
    ///   tokens of one call, and the deadline (the earlier of the saved one
    ///   and now plus the policy's limit).
    ///
    /// Applying a policy twice changes nothing more.
    ///
    /// # Errors
    ///
    /// [`ResumeError::OtherRun`] when the state's identity (agent name,
    /// provider, model) is not the policy's; [`ResumeError::Inconsistent`]
    /// when its request names another model than its identity. The state is
    /// unchanged then.
    pub fn restrict_to(&mut self, policy: &ResumePolicy) -> Result<(), ResumeError> {
        if self.identity != policy.identity {
            return Err(ResumeError::OtherRun {
                saved: Box::new(self.identity.clone()),
                resuming: Box::new(policy.identity.clone()),
            });
        }
        if let Some(model) = self
            .request
            .model
            .as_ref()
            .filter(|model| **model != self.identity.model)
        {
            return Err(ResumeError::Inconsistent(format!(
                "its request names the model `{model}`, its run `{}`",
                self.identity.model
            )));
        }
        self.restrict_budgets(policy);
        self.restrict_tools(&policy.tools);
        self.approval.required.extend(policy.approval_required.iter().cloned());
        if policy.approval_check.is_set() {
            self.approval.check = policy.approval_check.clone();
        }
        self.hold_batch_again();
        self.read_back = ReadBack(false);
        Ok(())
    }

    /// Whether the state was read back from storage (deserialised) and not
    /// held to a policy since: [`Agent`](crate::Agent) holds such a state to
    /// its own before driving it. A state made in this process
    /// ([`Agent::start`](crate::Agent::start), [`RunState::new`]) is the
    /// caller's and is driven as it is.
    pub fn is_read_back(&self) -> bool {
        self.read_back.0
    }

    /// The tools the run offers: those the policy was applied with, else
    /// what the state's request or protocol lists (`None` when it does not
    /// say: a ReAct prompt, or a request whose tools were dropped for a
    /// forced answer).
    fn saved_offer(&self) -> Option<BTreeSet<String>> {
        if let Some(offered) = &self.offered_tools {
            return Some(offered.clone());
        }
        match &self.protocol {
            Protocol::Native if !self.request.tools.is_empty() => {
                Some(self.request.tools.iter().map(|tool| tool.name.clone()).collect())
            }
            Protocol::Text { tool_names } => Some(tool_names.iter().cloned().collect()),
            Protocol::Native | Protocol::React => None,
        }
    }

    fn restrict_tools(&mut self, allowed_now: &BTreeSet<String>) {
        let offered: BTreeSet<String> = match self.saved_offer() {
            Some(saved) => saved.intersection(allowed_now).cloned().collect(),
            None => allowed_now.clone(),
        };
        if self.request.tools.iter().any(|tool| !offered.contains(&tool.name)) {
            self.request.tools = self
                .request
                .tools
                .iter()
                .filter(|tool| offered.contains(&tool.name))
                .cloned()
                .collect();
        }
        self.offered_tools = Some(offered);
        if let Phase::NeedsTools { batch } = std::mem::replace(&mut self.phase, Phase::NeedsModel { forced: None }) {
            let mut batch = batch;
            self.refuse_unoffered(&mut batch);
            self.phase = Phase::NeedsTools { batch };
        }
    }

    /// Answers the calls of `batch` of tools the run does not offer with an
    /// error, so they never run (nothing happens when the run does not
    /// restrict its tools).
    pub(super) fn refuse_unoffered(&mut self, batch: &mut Batch) {
        let Some(offered) = &self.offered_tools else { return };
        let refused: Vec<(usize, String)> = batch
            .to_run
            .iter()
            .enumerate()
            .filter(|(index, call)| !offered.contains(&call.name) && batch.finished(*index).is_none())
            .map(|(index, call)| (index, call.name.clone()))
            .collect();
        if refused.is_empty() {
            return;
        }
        let available: Vec<String> = offered.iter().cloned().collect();
        if batch.finished.len() < batch.to_run.len() {
            batch.finished.resize(batch.to_run.len(), None);
        }
        for (index, name) in refused {
            let error = ToolError::UnknownTool {
                name,
                available: available.clone(),
            };
            batch.finished[index] = Some(ToolOutcome {
                content: error.to_string(),
                is_error: true,
                duration: Duration::ZERO,
                cached: false,
                delegated_usage: None,
                attachments: Vec::new(),
            });
            // It never runs: it does not count against the tool-call budget.
            self.approval.denied += 1;
        }
    }

    fn restrict_budgets(&mut self, policy: &ResumePolicy) {
        let budget = &mut self.config.budget;
        budget.max_total_tokens = stricter(budget.max_total_tokens, policy.budget.max_total_tokens);
        budget.max_cost_usd = stricter(budget.max_cost_usd, policy.budget.max_cost_usd);
        budget.max_tool_calls = stricter(budget.max_tool_calls, policy.budget.max_tool_calls);
        budget.deadline = stricter(budget.deadline, policy.budget.deadline);
        self.request.max_tokens = stricter(self.request.max_tokens, policy.max_tokens);
        // A state saved before deadlines were kept in it starts its own now.
        let saved_deadline = self
            .deadline_unix_ms
            .or_else(|| self.config.budget.deadline.map(deadline_from_now));
        let now_plus_limit = policy.budget.deadline.map(deadline_from_now);
        self.deadline_unix_ms = stricter(saved_deadline, now_plus_limit);
        self.config.max_iterations = self.config.max_iterations.min(policy.max_iterations);
        if self.iteration > 0
            && self.iteration >= self.config.max_iterations
            && matches!(self.phase, Phase::NeedsModel { forced: None })
        {
            self.force_answer(ForcedReason::MaxIterations, None);
        }
        // The next call is checked again, against these limits.
        self.prepared = false;
    }
}

/// The stricter of two limits, `None` being none.
fn stricter<T: PartialOrd>(saved: Option<T>, now: Option<T>) -> Option<T> {
    match (saved, now) {
        (Some(saved), Some(now)) => Some(if now < saved { now } else { saved }),
        (saved, now) => saved.or(now),
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{ChatRequest, Message, ToolDefinition};
    use serde_json::json;

    use super::*;
    use crate::RunConfig;

    fn identity() -> RunIdentity {
        RunIdentity {
            agent: "agent".into(),
            provider: "scripted".into(),
            model: "small-1".into(),
        }
    }

    fn state(config: RunConfig) -> RunState {
        let tools: Vec<ToolDefinition> = ["lookup", "book"]
            .into_iter()
            .map(|name| ToolDefinition::new(name, name, json!({"type": "object"})))
            .collect();
        let request = ChatRequest::new(vec![Message::user("hi")]).with_tools(tools);
        RunState::new(identity(), config, request, None)
    }

    #[test]
    fn every_budget_is_the_smaller_of_the_saved_and_the_current_one() {
        let mut saved = state(RunConfig {
            max_iterations: 4,
            budget: Budget {
                max_total_tokens: Some(1_000),
                max_cost_usd: None,
                max_tool_calls: Some(2),
                deadline: Some(Duration::from_secs(3_600)),
            },
            ..RunConfig::default()
        });
        saved.request.max_tokens = Some(900);
        let mut policy = ResumePolicy::new(identity());
        policy.max_iterations = 10;
        policy.budget = Budget {
            max_total_tokens: Some(500),
            max_cost_usd: Some(0.25),
            max_tool_calls: Some(8),
            deadline: Some(Duration::from_secs(60)),
        };
        policy.max_tokens = Some(300);
        let latest = deadline_from_now(Duration::from_secs(60));
        saved.restrict_to(&policy).unwrap_or_else(|e| panic!("{e}"));

        let budget = saved.config.budget;
        assert_eq!(budget.max_total_tokens, Some(500));
        assert_eq!(budget.max_cost_usd, Some(0.25));
        assert_eq!(budget.max_tool_calls, Some(2));
        assert_eq!(budget.deadline, Some(Duration::from_secs(60)));
        assert_eq!(saved.config.max_iterations, 4);
        assert_eq!(saved.request.max_tokens, Some(300));
        let deadline = saved.deadline_unix_ms.unwrap_or(u64::MAX);
        assert!(deadline <= latest + 1_000, "{deadline} vs {latest}");

        // Applied again, nothing changes.
        let once = saved.clone();
        saved.restrict_to(&policy).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(saved.config, once.config);
        assert!(saved.deadline_unix_ms <= once.deadline_unix_ms);
    }

    #[test]
    fn a_state_saved_without_its_deadline_gets_the_shorter_limit_from_now() {
        let mut saved = state(RunConfig {
            budget: Budget {
                deadline: Some(Duration::from_secs(1)),
                ..Budget::default()
            },
            ..RunConfig::default()
        });
        saved.deadline_unix_ms = None;
        let mut policy = ResumePolicy::new(identity());
        policy.budget.deadline = Some(Duration::from_secs(3_600));
        saved.restrict_to(&policy).unwrap_or_else(|e| panic!("{e}"));
        let latest = deadline_from_now(Duration::from_secs(1));
        assert!(saved.deadline_unix_ms.is_some_and(|deadline| deadline <= latest));
    }

    #[test]
    fn a_policy_without_a_limit_keeps_the_saved_one() {
        let mut saved = state(RunConfig {
            budget: Budget {
                max_tool_calls: Some(3),
                ..Budget::default()
            },
            ..RunConfig::default()
        });
        let mut policy = ResumePolicy::new(identity());
        policy.tools = ["lookup".to_owned(), "book".to_owned()].into();
        saved.restrict_to(&policy).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(saved.config.budget.max_tool_calls, Some(3));
        assert_eq!(saved.request.tools.len(), 2);
    }

    #[test]
    fn the_tools_are_those_both_the_state_and_the_policy_offer() {
        let mut saved = state(RunConfig::default());
        let mut policy = ResumePolicy::new(identity());
        policy.tools = ["book".to_owned(), "pay".to_owned()].into();
        saved.restrict_to(&policy).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = saved.request.tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["book"]);
        assert_eq!(saved.offered_tools, Some(["book".to_owned()].into()));
    }

    #[test]
    fn a_state_of_another_run_or_at_odds_with_itself_is_refused_unchanged() {
        let saved = state(RunConfig::default());
        let mut other = identity();
        other.model = "large-2".into();
        let mut refused = saved.clone();
        let Err(error) = refused.restrict_to(&ResumePolicy::new(other)) else {
            panic!("another run's state was taken");
        };
        assert!(matches!(error, ResumeError::OtherRun { .. }), "{error}");
        assert!(
            error.to_string().contains("small-1") && error.to_string().contains("large-2"),
            "{error}"
        );
        assert_eq!(refused, saved);

        let mut odd = saved;
        odd.request.model = Some("large-2".into());
        let Err(error) = odd.restrict_to(&ResumePolicy::new(identity())) else {
            panic!("an inconsistent state was taken");
        };
        assert!(matches!(error, ResumeError::Inconsistent(_)), "{error}");
        assert!(error.to_string().contains("large-2"), "{error}");
    }
}
