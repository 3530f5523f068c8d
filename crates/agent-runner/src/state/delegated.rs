//! Usage of tools' own model calls (a handed-off sub-agent's run), added to
//! the run's totals.

use agent_core::DelegatedUsage;

use super::RunState;

impl RunState {
    /// Adds what the call just recorded reported of its own model calls to
    /// the run's usage and cost (an unknown cost of some tokens makes the
    /// run's cost unknown), and keeps it on the call's record.
    pub(super) fn attach_delegated(&mut self, delegated: Option<DelegatedUsage>) {
        let Some(delegated) = delegated else { return };
        self.usage += delegated.usage;
        self.cost_usd = match (self.cost_usd, delegated.cost_usd) {
            (Some(total), Some(cost)) => Some(total + cost),
            (Some(total), None) if delegated.usage.is_empty() => Some(total),
            _ => None,
        };
        if let Some(record) = self.tool_calls.last_mut() {
            record.delegated_usage = Some(delegated);
        }
    }
}
