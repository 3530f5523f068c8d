//! Usage a tool caused by calling a model itself (a sub-agent it handed a
//! task to), reported so that the run that called the tool counts it.

use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::Usage;

/// Tokens and cost spent inside one tool call on the tool's own model calls
/// (a handed-off sub-agent's run). The runner adds them to the run's
/// [`usage`](crate::AgentRunResult::usage) and
/// [`cost_usd`](crate::AgentRunResult::cost_usd), and keeps them on the
/// call's [`ToolCallRecord`](crate::ToolCallRecord).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DelegatedUsage {
    /// The tokens.
    pub usage: Usage,
    /// Their estimated cost in USD; `None` when a price was unknown.
    pub cost_usd: Option<f64>,
}

impl DelegatedUsage {
    /// `usage` costing `cost_usd`.
    pub fn new(usage: Usage, cost_usd: Option<f64>) -> Self {
        Self { usage, cost_usd }
    }

    /// Both reports together: tokens summed, cost summed when both are
    /// known (a report without tokens has nothing to price).
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            usage: self.usage + other.usage,
            cost_usd: add_costs(self.cost_usd, &self.usage, other.cost_usd, &other.usage),
        }
    }
}

/// `a + b` where an unknown cost of no tokens counts as zero and any other
/// unknown cost makes the sum unknown.
pub(crate) fn add_costs(a: Option<f64>, a_usage: &Usage, b: Option<f64>, b_usage: &Usage) -> Option<f64> {
    let a = a.or_else(|| a_usage.is_empty().then_some(0.0));
    let b = b.or_else(|| b_usage.is_empty().then_some(0.0));
    Some(a? + b?)
}

/// Where a tool reports the usage of its own model calls while it runs
/// ([`ToolContext::report_usage`](crate::ToolContext::report_usage)). The
/// runner gives each call a fresh one and reads it when the call is over.
/// Clones share the same total.
#[derive(Debug, Clone, Default)]
pub struct UsageSink {
    total: Arc<Mutex<Option<DelegatedUsage>>>,
}

impl UsageSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `report` to what was reported so far.
    pub fn report(&self, report: DelegatedUsage) {
        let mut total = self.total.lock().unwrap_or_else(PoisonError::into_inner);
        *total = Some(match *total {
            Some(sum) => sum.plus(report),
            None => report,
        });
    }

    /// Everything reported so far (`None`: nothing was).
    pub fn total(&self) -> Option<DelegatedUsage> {
        *self.total.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_add_up_and_an_unknown_price_makes_the_cost_unknown() {
        let sink = UsageSink::new();
        assert_eq!(sink.total(), None);
        sink.report(DelegatedUsage::new(Usage::new(10, 5), Some(0.5)));
        sink.clone().report(DelegatedUsage::new(Usage::new(1, 1), Some(0.25)));
        assert_eq!(sink.total(), Some(DelegatedUsage::new(Usage::new(11, 6), Some(0.75))));
        sink.report(DelegatedUsage::new(Usage::default(), None));
        assert_eq!(sink.total().and_then(|total| total.cost_usd), Some(0.75));
        sink.report(DelegatedUsage::new(Usage::new(1, 0), None));
        assert_eq!(sink.total().and_then(|total| total.cost_usd), None);
        assert_eq!(sink.total().map(|total| total.usage), Some(Usage::new(12, 6)));
    }
}
