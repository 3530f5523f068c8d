//! What a tripped guardrail leaves in a run's record.
//!
//! Guardrails (agent-runner's `guardrails` module) check what enters and
//! leaves a run: the user's message, the final answer, a tool call's
//! arguments and its result. One that trips ends the run with
//! [`RunEnd::Guardrail`](crate::RunEnd::Guardrail); the record's
//! [`AgentRunResult::guardrail`](crate::AgentRunResult::guardrail) says
//! which, where and why.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where in a run a guardrail checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailStage {
    /// The user's message, before the first model call.
    Input,
    /// The final answer, before the user sees it.
    Output,
    /// A tool call's arguments, before it runs.
    ToolCall,
    /// A tool call's result, before the model sees it.
    ToolResult,
}

impl GuardrailStage {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Output => "output",
            Self::ToolCall => "tool_call",
            Self::ToolResult => "tool_result",
        }
    }
}

impl fmt::Display for GuardrailStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The guardrail that ended a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardrailTrip {
    /// The guardrail's name.
    pub name: String,
    /// What it checked.
    pub stage: GuardrailStage,
    /// Why it tripped, in its words.
    pub reason: String,
    /// The tool call it checked (the tool stages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl fmt::Display for GuardrailTrip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the {} guardrail `{}` tripped", self.stage, self.name)?;
        if let Some(call_id) = &self.call_id {
            write!(f, " on call `{call_id}`")?;
        }
        write!(f, ": {}", self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trip_reads_as_a_sentence_and_serialises_in_snake_case() {
        let trip = GuardrailTrip {
            name: "deny".into(),
            stage: GuardrailStage::ToolCall,
            reason: "`rm -rf` is denied".into(),
            call_id: Some("call_1".into()),
        };
        assert_eq!(
            trip.to_string(),
            "the tool_call guardrail `deny` tripped on call `call_1`: `rm -rf` is denied"
        );
        let json = serde_json::to_value(&trip).expect("a trip serialises");
        assert_eq!(json["stage"], "tool_call");
        assert_eq!(
            serde_json::from_value::<GuardrailTrip>(json).expect("and reads back"),
            trip
        );
    }
}
