//! Budgets: what model calls cost (usage, cost and the record of each
//! call), the budget check before the next one, and the deadline.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_core::{AgentEvent, CallPurpose, ChatResponse, ModelCallRecord, RunEnd, Usage};

use super::{Phase, RunState};
use crate::budget::{self, Estimate};
use crate::context;

impl RunState {
    /// When the run must end, set from the budget's deadline when it started
    /// and kept when the state is saved and resumed.
    pub fn deadline(&self) -> Option<SystemTime> {
        self.deadline_unix_ms
            .and_then(|ms| UNIX_EPOCH.checked_add(Duration::from_millis(ms)))
    }

    /// The deadline, set from now for a state saved before deadlines were
    /// kept in it.
    pub(crate) fn start_deadline(&mut self) -> Option<SystemTime> {
        if self.deadline_unix_ms.is_none() {
            self.deadline_unix_ms = self.config.budget.deadline.map(deadline_from_now);
        }
        self.deadline()
    }

    /// Adds a response's usage and cost to the run's and records the call
    /// (a chat call as iteration `self.iteration`, a summary as the
    /// iteration it is made for).
    /// `model` is the one the response names (taken out of it by a caller
    /// done with the response); empty, the run's is recorded.
    /// What `usage` costs at the run's price, in US dollars; `None` when
    /// the model's price is unknown.
    pub(crate) fn price_of(&self, usage: &Usage) -> Option<f64> {
        self.pricing.map(|pricing| pricing.cost(usage))
    }

    pub(super) fn account(&mut self, response: &ChatResponse, model: String, duration: Duration, purpose: CallPurpose) {
        let cost = self.price_of(&response.usage);
        self.usage += response.usage;
        self.cost_usd = match (self.cost_usd, cost) {
            (Some(total), Some(cost)) => Some(total + cost),
            _ => None,
        };
        let model = if model.is_empty() {
            self.identity.model.clone()
        } else {
            model
        };
        let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let iteration = match purpose {
            CallPurpose::Chat => self.iteration,
            CallPurpose::Summary | CallPurpose::Routing => self.iteration + 1,
        };
        self.model_calls.push(ModelCallRecord {
            iteration,
            model,
            usage: response.usage,
            cost_usd: cost,
            stop_reason: response.stop_reason,
            duration_ms,
            purpose,
            route: response.route.clone(),
        });
        if purpose == CallPurpose::Chat {
            self.emit(AgentEvent::ModelRequestFinished {
                iteration,
                usage: response.usage,
                cost_usd: cost,
                stop_reason: response.stop_reason,
                duration_ms,
            });
        }
    }

    /// Ends the run before a model call that would exceed a token or cost
    /// budget (see [`crate::budget`] for the estimate; a summary request is
    /// estimated whole).
    pub(super) fn check_next_call(&mut self) {
        let estimate = match &self.phase {
            Phase::NeedsModel { .. } => {
                let new_messages = self.request.messages.get(self.sent_messages..).unwrap_or_default();
                Estimate::next_call(self.last_input_tokens, new_messages, self.request.max_tokens)
            }
            Phase::Summarising { summary } => Estimate {
                input_tokens: context::scale(context::estimate_tokens(&summary.request), self.context.ratio),
                max_output_tokens: summary.request.max_tokens.map(u64::from),
            },
            _ => return,
        };
        let over = budget::next_call_over(
            &self.config.budget,
            self.usage,
            self.cost_usd,
            self.pricing.as_ref(),
            estimate,
        );
        if let Some(detail) = over {
            self.interrupt(RunEnd::BudgetExceeded, detail);
        }
    }
}

/// Unix epoch milliseconds of now plus `limit` (saturating).
pub(super) fn deadline_from_now(limit: Duration) -> u64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since_epoch.saturating_add(limit).as_millis()).unwrap_or(u64::MAX)
}
