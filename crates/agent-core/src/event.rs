//! What a run reports as it goes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    AgentRunResult, CompactionTrigger, GroundingAction, GroundingFault, ModelProgress, StopReason, ToolCall,
    ToolChoice, Usage,
};

/// A step of a running agent. Plain data, so a CLI, a web page, a log or a
/// test can consume it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The run began.
    RunStarted {
        /// The agent's name.
        agent: String,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// A request goes to the model.
    ModelRequestStarted {
        /// 1-based iteration.
        iteration: u32,
        /// The tool choice sent (forced answers send `none`).
        tool_choice: ToolChoice,
    },
    /// The model answered.
    ModelRequestFinished {
        /// 1-based iteration.
        iteration: u32,
        /// Tokens used by this call.
        usage: Usage,
        /// Its estimated cost, when the price is known.
        cost_usd: Option<f64>,
        /// Why the model stopped.
        stop_reason: StopReason,
        /// Wall-clock time of the call.
        duration_ms: u64,
    },
    /// How far the model got with the current request (a local model
    /// reading the prompt, then writing), for progress displays; between
    /// [`ModelRequestStarted`](Self::ModelRequestStarted) and
    /// [`ModelRequestFinished`](Self::ModelRequestFinished), only from
    /// providers that report it, thinned out by the runner (every prompt
    /// step, at most one writing step per 100 ms). Carries no part of the
    /// reply.
    ModelProgress {
        /// The phase and how far it got.
        progress: ModelProgress,
    },
    /// Text as it is generated (streamed runs) or as a whole (other runs).
    TextDelta {
        /// The new text.
        text: String,
    },
    /// The model asked for a tool.
    ToolCallRequested {
        /// 1-based iteration.
        iteration: u32,
        /// The call.
        call: ToolCall,
    },
    /// The run waits for the user's approval of these calls before it runs
    /// any tool of the reply (see [`ToolApprover`](crate::ToolApprover)).
    ApprovalRequested {
        /// 1-based iteration.
        iteration: u32,
        /// The calls that need approval.
        calls: Vec<ToolCall>,
    },
    /// A tool began to run.
    ToolStarted {
        /// The call id.
        call_id: String,
        /// The tool.
        name: String,
    },
    /// A tool finished.
    ToolCompleted {
        /// The call id.
        call_id: String,
        /// The tool.
        name: String,
        /// What the model will be told.
        result: String,
        /// Whether it failed.
        is_error: bool,
        /// How long it ran.
        duration_ms: u64,
        /// Attributes the tool's provider added.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        attributes: Map<String, Value>,
    },
    /// The model repeated the previous turn's calls; the next request forces an answer.
    LoopDetected {
        /// 1-based iteration.
        iteration: u32,
    },
    /// The conversation was compacted to fit the model's context window
    /// before the model call of `iteration`; the run's record has the same
    /// figures and the summary in
    /// [`AgentRunResult::compactions`](crate::AgentRunResult::compactions).
    ContextCompacted {
        /// 1-based iteration of the model call it was made for.
        iteration: u32,
        /// What started it.
        trigger: CompactionTrigger,
        /// The estimated input tokens of the request before.
        estimated_tokens_before: u64,
        /// The estimated input tokens of the request after.
        estimated_tokens_after: u64,
        /// Tool results whose content was replaced by a marker.
        elided_results: usize,
        /// The bytes of content those results had.
        elided_bytes: usize,
        /// Leading messages replaced by one summary message (0: none).
        replaced_messages: usize,
        /// Model calls made to write the summary.
        summary_calls: u32,
        /// The tokens those calls used.
        summary_usage: Usage,
    },
    /// The reply of `iteration` only repeated calls already answered in the
    /// run; it was not run, and the model is asked once more with the calls
    /// made and the question restated (a second such reply forces the
    /// answer, [`LoopDetected`](Self::LoopDetected)).
    CallsRepeated {
        /// 1-based iteration of the repeating reply.
        iteration: u32,
        /// The tools it called again.
        tools: Vec<String>,
    },
    /// The grounding check found the answer of `iteration` faulty; the
    /// runner re-asks the model or replaces the answer (`action`).
    AnswerUngrounded {
        /// 1-based iteration of the faulty answer.
        iteration: u32,
        /// What was wrong.
        faults: Vec<GroundingFault>,
        /// The figures found in no evidence, as written.
        ungrounded: Vec<String>,
        /// What the runner does about it.
        action: GroundingAction,
    },
    /// An iteration (model call plus its tools) ended.
    IterationFinished {
        /// 1-based iteration.
        iteration: u32,
    },
    /// A scene router (`agent_runner::SceneRouter`) chose the scene that
    /// runs the request; the events of the scene's own run follow.
    SceneEntered {
        /// The scene that runs.
        scene: String,
        /// The name the model asked for (as it wrote it); `None` when it
        /// named no scene and the router's default scene was used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested: Option<String>,
    },
    /// Something failed; the run ends with `RunFinished` after it.
    Error {
        /// What failed.
        message: String,
    },
    /// The run ended.
    RunFinished {
        /// Its full record.
        result: Box<AgentRunResult>,
    },
}
