//! A forced final answer: one last request with `tool_choice = none`, sent
//! when the iteration limit is reached or the model is caught in a loop.

use std::fmt::Write as _;

use agent_core::RunEnd;
use serde::{Deserialize, Serialize};

use crate::loops::Cycle;

/// Why the answer is forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ForcedReason {
    /// `max_iterations` was reached.
    MaxIterations,
    /// The model went round the same calls.
    LoopDetected,
}

impl ForcedReason {
    /// The stop cause of a run whose answer was forced for this reason.
    pub(crate) fn cause(self) -> RunEnd {
        match self {
            Self::MaxIterations => RunEnd::MaxIterations,
            Self::LoopDetected => RunEnd::LoopDetected,
        }
    }
}

/// A forced answer under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Forced {
    /// Why.
    pub reason: ForcedReason,
    /// Position of the transient instruction message in the request.
    pub instruction_at: usize,
    /// The cycle of calls that made it a loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Cycle>,
}

impl Forced {
    /// The stop detail of the forced answer, `ignored` being the calls the
    /// model asked for anyway.
    pub(crate) fn detail(&self, max_iterations: u32, ignored: usize) -> String {
        let why = match (self.reason, &self.cycle) {
            (ForcedReason::MaxIterations, _) => {
                format!("reached the limit of {}", count(max_iterations as usize, "iteration"))
            }
            (ForcedReason::LoopDetected, Some(cycle)) => cycle.describe(),
            (ForcedReason::LoopDetected, None) => "the model repeated the same tool calls".to_owned(),
        };
        let mut detail = format!("{why}; the answer was forced");
        if ignored > 0 {
            let _ = write!(
                detail,
                "; {} requested afterwards {} not run",
                count(ignored, "tool call"),
                if ignored == 1 { "was" } else { "were" }
            );
        }
        detail
    }
}

/// "1 iteration", "3 iterations".
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
