//! Saving a run between steps, so that a crash or an interruption does not
//! lose it.
//!
//! A driver given [`RunCheckpoints`] hands it the [`RunState`] after every
//! step: each model reply and each tool call that finishes (a batch's
//! finished calls are kept in the state, so a resumed run does not run them
//! again). Resume a saved state with
//! [`Agent::resume_with_checkpoints`](crate::Agent::resume_with_checkpoints)
//! or [`Agent::stream_from`](crate::Agent::stream_from). The run's deadline
//! is stored in the state as a wall-clock time, so a resumed run keeps it.

use agent_core::StoreError;
use async_trait::async_trait;

use crate::RunState;

/// Where a run's state is saved after every step (a conversation store, a
/// file, ...). A failed save is logged as a warning and the run goes on: it
/// only costs the ability to resume from that step.
#[async_trait]
pub trait RunCheckpoints: Send + Sync {
    /// Saves `state`, replacing the previous save of the run.
    async fn save(&self, state: &RunState) -> Result<(), StoreError>;
}
