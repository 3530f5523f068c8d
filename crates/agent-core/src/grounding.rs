//! What the runner's grounding check found in an answer, and what it did.
//!
//! Before a final answer is accepted, a runner with grounding on looks for
//! each of the answer's figures (numbers, prices, dates, times,
//! temperatures...) in the turn's evidence: the user's messages, the system
//! prompt and the tool results. [`GroundingRecord`] is the outcome, kept in
//! the run's record ([`AgentRunResult::grounding`](crate::AgentRunResult::grounding)).

use serde::{Deserialize, Serialize};

/// What was wrong with an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroundingFault {
    /// It states figures that no user message, system prompt or tool result gave.
    UngroundedFigures,
    /// It repeats an instruction meant for the model (a tool's error telling
    /// it to call again, the runner's own request) as the answer.
    EchoedInstruction,
    /// Tools were called for the question and the answer mentions none of
    /// their results; or every call failed and the answer does not say so.
    IgnoredResults,
    /// It writes a tool call (call JSON or call markup) as, or inside, the
    /// answer: a call that will never run, shown to the user.
    WroteACall,
    /// It copies a tool result's raw data (its JSON, as the model was given
    /// it) instead of saying what the result means.
    RawResult,
    /// It says nothing: no word or figure outside code fences.
    NoAnswer,
    /// It leaves out what some of the calls made for it returned.
    OmittedResults,
}

/// What the runner did about a faulty answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroundingAction {
    /// Asked the model again, with a tool call required.
    ReaskedForCall,
    /// Asked the model again, with the turn's tool results restated.
    ReaskedWithResults,
    /// Replaced the answer with what the tools returned, or with "I could
    /// not look that up" when they returned nothing usable.
    Replaced,
    /// Kept the answer and added what the results it left out say.
    Completed,
}

/// The grounding check of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundingRecord {
    /// Whether the final answer was checked (false: grounding is off, or
    /// the run ended without an answer to check).
    pub checked: bool,
    /// Figures, as written, that were found in no evidence, over every
    /// answer checked in the run (the re-asked ones too), without repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ungrounded: Vec<String>,
    /// What was wrong, in the order found, without repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<GroundingFault>,
    /// What the runner did, in order; empty when the first answer was
    /// accepted as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<GroundingAction>,
}

impl GroundingRecord {
    /// Whether the answer the user got was replaced by the runner.
    pub fn replaced(&self) -> bool {
        self.actions.contains(&GroundingAction::Replaced)
    }

    /// Notes a checked answer's faults and ungrounded figures.
    pub fn note(&mut self, faults: &[GroundingFault], ungrounded: &[String]) {
        self.checked = true;
        for fault in faults {
            if !self.faults.contains(fault) {
                self.faults.push(*fault);
            }
        }
        for figure in ungrounded {
            if !self.ungrounded.contains(figure) {
                self.ungrounded.push(figure.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_keep_the_first_order_without_repeats_and_json_omits_empty_lists() {
        let mut record = GroundingRecord::default();
        record.note(&[GroundingFault::UngroundedFigures], &["22 °C".to_owned()]);
        record.note(
            &[GroundingFault::IgnoredResults, GroundingFault::UngroundedFigures],
            &["22 °C".to_owned(), "$100".to_owned()],
        );
        record.actions.push(GroundingAction::ReaskedForCall);
        assert!(record.checked && !record.replaced());
        assert_eq!(record.ungrounded, ["22 °C", "$100"]);
        assert_eq!(
            serde_json::to_value(&record).unwrap_or_default(),
            serde_json::json!({
                "checked": true,
                "ungrounded": ["22 °C", "$100"],
                "faults": ["ungrounded_figures", "ignored_results"],
                "actions": ["reasked_for_call"],
            })
        );
        let unchecked = serde_json::to_value(GroundingRecord::default()).unwrap_or_default();
        assert_eq!(unchecked, serde_json::json!({"checked": false}));
    }
}
