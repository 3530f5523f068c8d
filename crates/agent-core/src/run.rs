//! The record of an agent run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Message, StopReason, Usage};

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCause {
    /// The model gave a final answer.
    Completed,
    /// The iteration limit was reached; the answer was forced.
    MaxIterations,
    /// The model repeated the same calls (or went round a cycle of them); the answer was forced.
    LoopDetected,
    /// A token, cost, tool-call or time budget ran out.
    BudgetExceeded,
    /// The caller cancelled the run.
    Cancelled,
    /// The run failed (model error, repeated tool failures).
    Error,
}

impl StopCause {
    /// The snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxIterations => "max_iterations",
            Self::LoopDetected => "loop_detected",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Cancelled => "cancelled",
            Self::Error => "error",
        }
    }
}

/// One tool call made during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments as the model sent them.
    pub arguments: Value,
    /// What the model was told.
    pub result: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// How long it took (0 for calls answered from an identical call of the
    /// same reply or from the tool-result cache).
    pub duration_ms: u64,
    /// The iteration (1-based) in which the model asked for it.
    pub iteration: u32,
    /// Set when an identical call earlier in the same reply (this id) ran
    /// instead: the call was collapsed onto it, is not in the history, and
    /// carries that call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// Set when the tool did not run: the result was reused from an earlier
    /// call with the same arguments (the tool declares a
    /// [`CachePolicy`](crate::CachePolicy)); the duration is 0.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cached: bool,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(value: &bool) -> bool {
    !*value
}

/// One model call made during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCallRecord {
    /// The iteration (1-based); the forced final answer has its own.
    pub iteration: u32,
    /// The model that answered.
    pub model: String,
    /// Tokens used.
    pub usage: Usage,
    /// Estimated cost in USD, when the model's price is known.
    pub cost_usd: Option<f64>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Wall-clock time of the call.
    pub duration_ms: u64,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRunResult {
    /// The final answer.
    pub response: String,
    /// Why the run ended.
    pub stop_reason: StopCause,
    /// Details on the stop (which budget, what error), when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_detail: Option<String>,
    /// Model calls made.
    pub iterations: u32,
    /// Every tool call, in the order the model asked for them.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Every model call with its usage and cost.
    pub model_calls: Vec<ModelCallRecord>,
    /// Total tokens.
    pub usage: Usage,
    /// Total estimated cost in USD, when every model's price is known.
    pub cost_usd: Option<f64>,
    /// The provider used.
    pub provider: String,
    /// The model used.
    pub model: String,
    /// The whole conversation (without the system prompt), ready to continue.
    pub messages: Vec<Message>,
}
