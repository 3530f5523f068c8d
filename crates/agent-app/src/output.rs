//! The `agentry run --json` output: a contract scripts rely on, so it is a
//! dedicated type rather than a serialisation of the runner's record.
//!
//! ```json
//! {
//!   "response": "...",
//!   "stop_reason": "completed",
//!   "iterations": 2,
//!   "tool_calls": [
//!     {"id": "call_1", "name": "get_weather", "arguments": {"location": "Tokyo"},
//!      "result": "{...}", "is_error": false, "duration_ms": 3}
//!   ],
//!   "usage": {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 0,
//!             "cache_write_tokens": 0, "total_tokens": 150, "cost_usd": 0.000036},
//!   "provider": "openai",
//!   "model": "gpt-4o-mini"
//! }
//! ```
//!
//! `stop_reason` is one of `completed`, `max_iterations`, `loop_detected`,
//! `budget_exceeded`, `cancelled`, `error`, `awaiting_approval`,
//! `guardrail`. A run a guardrail ended (`guardrail`, exit status 1) has
//! one more key, `guardrail`: `{"name": "deny_list", "stage": "input",
//! "reason": "..."}` (and `call_id` at the tool stages); nothing it
//! blocked is in `response`. A run that
//! paused for the user's approval (`awaiting_approval`) has one more key,
//! `pending_approvals`: the calls waiting (`id`, `name`, `arguments`), which
//! `agentry resume NAME --approve ID` or `--deny ID` decides; its
//! `tool_calls` list the calls of that reply as not run. `cost_usd` is `null` when the
//! model's price is not in the catalog. `provider` is the configured
//! provider (`agent.provider`, e.g. `azure-openai`); `model` the model the
//! requests went to. With `[scenes]` configured it has one more key,
//! `scene`: the scene that ran (see the `scenes` module). With `run --schema FILE` the object has one more key,
//! `output`: the validated JSON answer. With grounding on (`agent.grounding`,
//! the default of the `llama` provider) it has one more key, `grounding`:
//! `{"checked": true, "ungrounded": ["22 °C"], "faults": ["ungrounded_figures"],
//! "actions": ["reasked_for_call"]}`, the figures found in no user message or
//! tool result and what the runner did (`reasked_for_call`,
//! `reasked_with_results`, `replaced`); the empty lists are left out.

use std::io::{self, Write as _};

use agent_core::{AgentRunResult, GroundingRecord, GuardrailTrip, ModelCallRecord, RunEnd, ToolCallRecord};
use serde::Serialize;
use serde_json::Value;

use crate::error::{AppError, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK};

/// Writes `text` and a newline to stdout, flushed.
pub fn stdout_line(text: &str) -> Result<(), AppError> {
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|error| AppError::io("writing to stdout", error))
}

/// The object `run --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutput {
    /// The final answer.
    pub response: String,
    /// Why the run ended.
    pub stop_reason: &'static str,
    /// Model calls made.
    pub iterations: u32,
    /// Every tool call, in the order the model asked for them.
    pub tool_calls: Vec<ToolCallOutput>,
    /// Tokens and cost.
    pub usage: UsageOutput,
    /// The provider, as configured (`llama`, `openai`, `azure-openai`, ...).
    pub provider: String,
    /// The model.
    pub model: String,
    /// With `run --schema`: the validated JSON answer. Absent otherwise
    /// (and when the answer did not validate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The calls waiting for the user's approval (`awaiting_approval`
    /// only; absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_approvals: Vec<PendingApprovalOutput>,
    /// The guardrail that ended the run (`guardrail` only; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrail: Option<GuardrailTrip>,
    /// The scene that ran the request, when `[scenes]` is configured
    /// (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scene: Option<String>,
    /// The grounding check of the answer, when grounding is on (absent
    /// otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grounding: Option<GroundingRecord>,
    /// The model calls a provider of `[agent] fallback` answered, each
    /// with its `route`: who answered, who failed first (absent when none
    /// fell back).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<ModelCallRecord>,
}

/// A call of [`RunOutput::pending_approvals`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingApprovalOutput {
    /// The call id, for `agentry resume NAME --approve ID` or `--deny ID`.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments as the model sent them.
    pub arguments: Value,
}

/// One tool call of [`RunOutput`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallOutput {
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
    /// How long it ran.
    pub duration_ms: u64,
}

/// The usage of [`RunOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UsageOutput {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from a cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to a cache.
    pub cache_write_tokens: u64,
    /// Input plus output tokens.
    pub total_tokens: u64,
    /// Estimated cost in USD; `null` when the price is unknown.
    pub cost_usd: Option<f64>,
}

impl RunOutput {
    /// The output for a run's record.
    pub fn from_result(result: &AgentRunResult) -> Self {
        Self {
            response: result.response.clone(),
            stop_reason: result.stop_reason.as_str(),
            iterations: result.iterations,
            tool_calls: result.tool_calls.iter().map(ToolCallOutput::from_record).collect(),
            usage: UsageOutput {
                input_tokens: result.usage.input_tokens,
                output_tokens: result.usage.output_tokens,
                cache_read_tokens: result.usage.cache_read_tokens,
                cache_write_tokens: result.usage.cache_write_tokens,
                total_tokens: result.usage.total_tokens(),
                cost_usd: result.cost_usd,
            },
            provider: result.provider.clone(),
            model: result.model.clone(),
            output: None,
            pending_approvals: result
                .pending_approvals
                .iter()
                .map(|call| PendingApprovalOutput {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .collect(),
            scene: result.scene.clone(),
            grounding: result.grounding.clone(),
            guardrail: result.guardrail.clone(),
            fallbacks: result
                .model_calls
                .iter()
                .filter(|call| call.route.as_ref().is_some_and(|route| !route.failed.is_empty()))
                .cloned()
                .collect(),
        }
    }

    /// Compact JSON on one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|error| format!("{{\"error\":\"{error}\"}}"))
    }
}

impl ToolCallOutput {
    fn from_record(record: &ToolCallRecord) -> Self {
        Self {
            id: record.id.clone(),
            name: record.name.clone(),
            arguments: record.arguments.clone(),
            result: record.result.clone(),
            is_error: record.is_error,
            duration_ms: record.duration_ms,
        }
    }
}

/// Whether a run that stopped for `cause` counts as a success for the exit
/// status: it produced an answer (possibly forced by a limit), or paused,
/// as configured, for the user's approval.
pub fn is_success(cause: RunEnd) -> bool {
    matches!(
        cause,
        RunEnd::Completed | RunEnd::MaxTokens | RunEnd::MaxIterations | RunEnd::LoopDetected | RunEnd::AwaitingApproval
    )
}

/// The exit status of a printed run that stopped for `cause`: 0 for a
/// success ([`is_success`]), 130 for a run cancelled by an interrupt (the
/// shell's status for SIGINT), 1 for any other end.
pub fn exit_status(cause: RunEnd) -> u8 {
    match cause {
        RunEnd::Cancelled => EXIT_INTERRUPTED,
        cause if is_success(cause) => EXIT_OK,
        _ => EXIT_FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{Message, Usage};
    use serde_json::json;

    use super::*;

    fn record() -> AgentRunResult {
        AgentRunResult {
            response: "It is sunny in Tokyo.".into(),
            stop_reason: RunEnd::Completed,
            stop_detail: None,
            iterations: 2,
            tool_calls: vec![ToolCallRecord {
                id: "call_1".into(),
                name: "get_weather".into(),
                arguments: json!({"location": "Tokyo"}),
                result: "{\"temperature\":21}".into(),
                is_error: false,
                duration_ms: 3,
                duplicate_of: None,
                cached: false,
                iteration: 1,
                delegated_usage: None,
            }],
            model_calls: Vec::new(),
            usage: Usage {
                input_tokens: 120,
                output_tokens: 30,
                cache_read_tokens: 20,
                cache_write_tokens: 0,
                reasoning_tokens: 5,
            },
            cost_usd: Some(0.000_036),
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
            messages: vec![Message::user("Weather in Tokyo?")],
            compactions: Vec::new(),
            pending_approvals: Vec::new(),
            scene: None,
            grounding: None,
            guardrail: None,
        }
    }

    #[test]
    fn the_json_contract_has_exactly_these_keys() {
        let output = serde_json::to_value(RunOutput::from_result(&record())).unwrap_or_default();
        insta::assert_json_snapshot!(output, @r#"
        {
          "response": "It is sunny in Tokyo.",
          "stop_reason": "completed",
          "iterations": 2,
          "tool_calls": [
            {
              "id": "call_1",
              "name": "get_weather",
              "arguments": {
                "location": "Tokyo"
              },
              "result": "{\"temperature\":21}",
              "is_error": false,
              "duration_ms": 3
            }
          ],
          "usage": {
            "input_tokens": 120,
            "output_tokens": 30,
            "cache_read_tokens": 20,
            "cache_write_tokens": 0,
            "total_tokens": 150,
            "cost_usd": 0.000036
          },
          "provider": "openai",
          "model": "gpt-4o-mini"
        }
        "#);
    }

    #[test]
    fn a_checked_answer_carries_its_grounding_record() {
        let mut result = record();
        result.grounding = Some(agent_core::GroundingRecord {
            checked: true,
            ungrounded: vec!["22 °C".into()],
            faults: vec![agent_core::GroundingFault::UngroundedFigures],
            actions: vec![agent_core::GroundingAction::ReaskedForCall],
        });
        let value: Value = serde_json::from_str(&RunOutput::from_result(&result).to_json()).unwrap_or_default();
        assert_eq!(
            value["grounding"],
            json!({"checked": true, "ungrounded": ["22 °C"], "faults": ["ungrounded_figures"], "actions": ["reasked_for_call"]})
        );
        result.grounding = Some(agent_core::GroundingRecord {
            checked: true,
            ..agent_core::GroundingRecord::default()
        });
        let value: Value = serde_json::from_str(&RunOutput::from_result(&result).to_json()).unwrap_or_default();
        assert_eq!(value["grounding"], json!({"checked": true}), "a grounded answer");
    }

    #[test]
    fn a_cancelled_run_exits_130_a_failed_one_1_and_a_successful_one_0() {
        let cases = [
            (RunEnd::Completed, 0),
            (RunEnd::MaxTokens, 0),
            (RunEnd::MaxIterations, 0),
            (RunEnd::LoopDetected, 0),
            (RunEnd::AwaitingApproval, 0),
            (RunEnd::Cancelled, 130),
            (RunEnd::BudgetExceeded, 1),
            (RunEnd::Error, 1),
            (RunEnd::Guardrail, 1),
        ];
        for (cause, status) in cases {
            assert_eq!(exit_status(cause), status, "{cause:?}");
        }
    }

    #[test]
    fn unknown_prices_are_null_and_every_stop_reason_is_named() {
        let mut result = record();
        result.cost_usd = None;
        for (cause, name) in [
            (RunEnd::Completed, "completed"),
            (RunEnd::MaxTokens, "max_tokens"),
            (RunEnd::MaxIterations, "max_iterations"),
            (RunEnd::LoopDetected, "loop_detected"),
            (RunEnd::BudgetExceeded, "budget_exceeded"),
            (RunEnd::Cancelled, "cancelled"),
            (RunEnd::Error, "error"),
            (RunEnd::Guardrail, "guardrail"),
        ] {
            result.stop_reason = cause;
            let value: Value = serde_json::from_str(&RunOutput::from_result(&result).to_json()).unwrap_or_default();
            assert_eq!(value["stop_reason"], name);
            assert_eq!(value["usage"]["cost_usd"], Value::Null);
        }
    }
}
