//! The record of an agent run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{GroundingRecord, Message, StopReason, ToolCall, Usage};

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnd {
    /// The model gave a final answer.
    Completed,
    /// The final answer was cut off at the reply's token limit
    /// (`max_tokens`): it is there, but incomplete.
    MaxTokens,
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
    /// The run paused before calls that need the user's approval; they are
    /// in [`AgentRunResult::pending_approvals`], and its saved state
    /// continues once they are approved or denied.
    AwaitingApproval,
    /// A guardrail tripped: what it blocked reached neither the model nor
    /// the user; [`AgentRunResult::guardrail`] says which and why.
    Guardrail,
}

impl RunEnd {
    /// The snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxTokens => "max_tokens",
            Self::MaxIterations => "max_iterations",
            Self::LoopDetected => "loop_detected",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Cancelled => "cancelled",
            Self::Error => "error",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Guardrail => "guardrail",
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
    /// Tokens and cost of the tool's own model calls (a handed-off
    /// sub-agent's run), counted in the run's usage and cost; `None` (not
    /// written in JSON) for tools that call no model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegated_usage: Option<crate::DelegatedUsage>,
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
    /// What the call was for: a turn of the conversation (the default,
    /// not written in JSON) or a summary made to compact it.
    #[serde(default, skip_serializing_if = "CallPurpose::is_chat")]
    pub purpose: CallPurpose,
    /// The provider that answered and the ones that failed before it, when
    /// the client routes between several (a fallback chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<crate::Route>,
}

/// What a model call of a run was for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    /// A turn of the conversation: the request with the tools and the history.
    #[default]
    Chat,
    /// A summary of the oldest messages, made to fit the conversation in the
    /// model's context window (see [`CompactionRecord`]). Not an iteration.
    Summary,
    /// The choice of the scene that runs the request (a scene router's
    /// call, made before the scene's run). Not an iteration.
    Routing,
}

impl CallPurpose {
    /// Whether this is [`CallPurpose::Chat`].
    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
    pub fn is_chat(&self) -> bool {
        *self == Self::Chat
    }
}

/// Why the conversation was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The next request's estimated size passed the configured share of the
    /// model's context window.
    Threshold,
    /// The provider refused a request as too long for the context window;
    /// the request was retried once after the compaction.
    ContextLengthError,
}

/// One compaction of the conversation, made before a model call so that the
/// request fits in the model's context window.
///
/// First, large tool results outside the most recent turns are *elided*: their
/// content is replaced by a marker saying how large it was (call id, tool and
/// error flag stay). Then, when that is not enough, the oldest turns are
/// *summarised*: the first [`replaced_messages`](Self::replaced_messages)
/// messages are replaced by one [`Message::System`] whose content is
/// [`summary`](Self::summary).
///
/// # Keeping a stored conversation in step
///
/// `replaced_messages` counts leading messages of the run's messages *as they
/// were when this compaction began*: the history the run was started with
/// (a summary at its start included) as changed by the earlier compactions of
/// the same run, which left their summary first. A compaction never cuts into
/// the run's own user message or anything after it, so the replaced messages
/// are always messages of that history (when it was sendable, as a
/// conversation store loads it). A caller that stores the conversation applies
/// each record in order, as
/// `ConversationStore::compact(name, record.replaced_messages, &summary)`, and
/// finds the messages the run added at
/// [`AgentRunResult::added_messages_start`]. Elided tool results are changed
/// in the run's messages only; the stored messages keep them whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// What started it.
    pub trigger: CompactionTrigger,
    /// The iteration (1-based) of the model call it was made for.
    pub iteration: u32,
    /// The estimated input tokens of that call's request before the compaction.
    pub estimated_tokens_before: u64,
    /// The estimated input tokens of that call's request after it.
    pub estimated_tokens_after: u64,
    /// Tool results whose content was replaced by a marker.
    pub elided_results: usize,
    /// The bytes of content those results had.
    pub elided_bytes: usize,
    /// Leading messages replaced by the summary message (0: none were).
    pub replaced_messages: usize,
    /// The content of the summary message (its fixed prefix and the model's
    /// summary), when messages were summarised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Model calls made to write the summary (a long history is summarised
    /// in several rounds, each summary folded into the next); they are in
    /// [`AgentRunResult::model_calls`] with [`CallPurpose::Summary`], and
    /// their usage and cost count in the run's totals and budgets.
    #[serde(default)]
    pub summary_calls: u32,
    /// The tokens those calls used.
    #[serde(default, skip_serializing_if = "Usage::is_empty")]
    pub summary_usage: Usage,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRunResult {
    /// The final answer.
    pub response: String,
    /// Why the run ended.
    pub stop_reason: RunEnd,
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
    /// After a [compaction](CompactionRecord) it starts with the summary.
    pub messages: Vec<Message>,
    /// Every compaction of the conversation, in order (none when it always
    /// fitted; not written in JSON then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<CompactionRecord>,
    /// The calls waiting for the user's approval when the run paused
    /// ([`RunEnd::AwaitingApproval`]; empty, and not written in JSON,
    /// otherwise). They are in [`tool_calls`](Self::tool_calls) and
    /// [`messages`](Self::messages) as not run, so the messages stay
    /// sendable; resuming the saved state runs or denies them instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_approvals: Vec<ToolCall>,
    /// The scene that ran the request, when a scene router chose one (not
    /// written in JSON otherwise). Its routing call is in
    /// [`model_calls`](Self::model_calls) as [`CallPurpose::Routing`] and
    /// counts in the usage and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scene: Option<String>,
    /// The grounding check of the answer, when the runner's grounding is
    /// on (not written in JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grounding: Option<GroundingRecord>,
    /// The guardrail that ended the run ([`RunEnd::Guardrail`]; not written
    /// in JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail: Option<crate::GuardrailTrip>,
}

impl AgentRunResult {
    /// Where the messages the run added (its user message and everything
    /// after it) start in [`messages`](Self::messages), for a run started
    /// with a sendable history of `history_len` messages: each summary
    /// replaced `replaced_messages` of them with one message. `None` when
    /// the compactions do not fit such a history.
    pub fn added_messages_start(&self, history_len: usize) -> Option<usize> {
        self.compactions
            .iter()
            .filter(|compaction| compaction.replaced_messages > 0)
            .try_fold(history_len, |start, compaction| {
                start.checked_sub(compaction.replaced_messages).map(|kept| kept + 1)
            })
            .filter(|start| *start < self.messages.len())
    }
}
