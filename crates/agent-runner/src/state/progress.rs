//! Outcomes reported one call at a time, as they finish, so that a state
//! saved in the middle of a batch keeps them.

use super::{Phase, RunState};
use crate::step::{StepError, ToolOutcome};

impl RunState {
    /// Takes the outcome of call `index` of [`Step::RunTools`](crate::Step)
    /// as soon as it finishes, before the rest of the batch. Saved with the
    /// state, it is not run again when the run is resumed
    /// ([`finished_tool_outcome`](Self::finished_tool_outcome)); an
    /// interrupted batch keeps it in the history. Report the whole batch with
    /// [`on_tool_results`](Self::on_tool_results) as usual: an outcome
    /// missing there is taken from here.
    pub fn on_tool_outcome(&mut self, index: usize, outcome: ToolOutcome) -> Result<(), StepError> {
        let Phase::NeedsTools { batch } = &mut self.phase else {
            return Err(self.unexpected("a tool outcome"));
        };
        if index >= batch.to_run.len() {
            return Err(StepError::new(
                "is waiting for tool results",
                "an outcome for a call it did not ask for",
            ));
        }
        if batch.finished.len() < batch.to_run.len() {
            batch.finished.resize(batch.to_run.len(), None);
        }
        batch.finished[index] = Some(outcome);
        Ok(())
    }

    /// The outcome already taken for call `index` of
    /// [`Step::RunTools`](crate::Step), if it finished: a driver resuming a
    /// saved state does not run that call again.
    pub fn finished_tool_outcome(&self, index: usize) -> Option<&ToolOutcome> {
        match &self.phase {
            Phase::NeedsTools { batch } => batch.finished(index),
            _ => None,
        }
    }
}
