//! The run as a plain state machine: it decides, the driver does the I/O.
//!
//! [`RunState::next_step`] says what to do next (call the model with this
//! request, run these tools, or nothing: the run is over); the driver does it
//! and reports back with [`RunState::on_model_response`],
//! [`RunState::on_tool_results`], [`RunState::on_model_error`] or
//! [`RunState::interrupt`]. The state is serde data, so a run can be saved
//! between steps and resumed, and every decision is testable without a runtime.
//!
//! Before a model call the conversation may be compacted to fit the model's
//! context window (`compaction`, [`crate::context`]): a summary request is
//! then a [`Step::CallModel`] of its own ([`RunState::is_compacting`]).

mod approval;
mod budgets;
mod compaction;
mod delegated;
mod grounding;
mod guarded;
mod malformed;
mod progress;
mod repeats;
mod resume;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    AgentEvent, AgentRunResult, CallPurpose, ChatRequest, ChatResponse, GuardrailTrip, LlmError, LlmErrorKind, Message,
    ModelCallRecord, Pricing, ResponseFormat, RunEnd, StopReason, ToolCall, ToolCallRecord, ToolChoice, ToolResult,
    Usage,
};
use serde::{Deserialize, Serialize};

use self::approval::ApprovalGate;
pub use self::approval::{ApprovalCheck, ApprovalError};
use self::compaction::{ContextTracker, Summarising};
use self::grounding::GroundingGate;
use self::resume::{ReadBack, read_back};
pub use self::resume::{ResumeError, ResumePolicy};
use crate::RunConfig;
use crate::batch::{Batch, BatchPolicy, Slot};
use crate::budget;
use crate::context;
use crate::forced::{Forced, ForcedReason};
use crate::history::{INTERRUPTED_RESULT, repair_history};
use crate::loops::{Cycle, LoopDetector};
use crate::prompts;
use crate::protocol::Protocol;
use crate::step::{RunIdentity, Step, StepError, ToolOutcome};

/// Where the run is. `Summarising`: a summary call of a compaction, before
/// the model call it makes room for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
enum Phase {
    NeedsModel { forced: Option<Forced> },
    NeedsTools { batch: Batch },
    Summarising { summary: Box<Summarising> },
    Finished { cause: RunEnd, detail: Option<String> },
}

/// The complete, serialisable state of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    identity: RunIdentity,
    /// This run's id (a new one for a state saved before ids were kept).
    #[serde(default = "new_run_id")]
    run_id: String,
    /// The conversation the run is a turn of (a session's name), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conversation_id: Option<String>,
    config: RunConfig,
    protocol: Protocol,
    request: ChatRequest,
    pricing: Option<Pricing>,
    /// The instruction of a forced final answer; the built-in one when unset.
    forced_answer_instruction: Option<String>,
    /// The client applies a response format without losing tool calls
    /// ([`Capabilities::format_with_tools`](agent_core::Capabilities)).
    #[serde(default)]
    format_with_tools: bool,
    /// The media kinds the model reads (from the catalog); unset: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accepted_inputs: Option<Vec<agent_core::MediaKind>>,
    /// The format the final answer must take: sent only with a call that
    /// cannot call tools (`sync_answer_format`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer_format: Option<ResponseFormat>,
    phase: Phase,
    iteration: u32,
    usage: Usage,
    cost_usd: Option<f64>,
    tool_calls: Vec<ToolCallRecord>,
    model_calls: Vec<ModelCallRecord>,
    executed_tools: u32,
    consecutive_failures: u32,
    /// The latest rounds of calls, for loop detection.
    #[serde(default)]
    loops: LoopDetector,
    /// Input tokens of the last model call, as reported.
    #[serde(default)]
    last_input_tokens: Option<u64>,
    /// Messages in the request when the last model call was made.
    #[serde(default)]
    sent_messages: usize,
    /// The context window: calibration, compactions.
    #[serde(default)]
    context: ContextTracker,
    /// The pending model call was readied (compaction, budget check).
    #[serde(default)]
    prepared: bool,
    /// When the run must end (unix epoch milliseconds), from the budget's
    /// deadline when the run started; kept across saving and resuming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deadline_unix_ms: Option<u64>,
    /// Tools that need the user's approval; calls waiting for it.
    #[serde(default)]
    approval: ApprovalGate,
    /// The messages of the conversation the run continued (its history,
    /// before its user message); unknown in a state saved before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continued: Option<usize>,
    /// The only tools whose calls may run, once a [`ResumePolicy`] was
    /// applied; unset, the registry decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offered_tools: Option<BTreeSet<String>>,
    /// The grounding check of the final answer.
    #[serde(default)]
    grounding: GroundingGate,
    /// The model was asked again after a reply that only repeated answered
    /// calls (at most once a run; `repeats`).
    #[serde(default)]
    reasked_on_repeat: bool,
    /// The model was asked to write again a tool call the provider could
    /// not use; cleared by a usable reply (`malformed`).
    #[serde(default)]
    reasked_on_malformed_call: bool,
    /// The user's message passed the input guardrails (or the run had
    /// none); a state saved before this was kept had passed them.
    #[serde(default = "already_checked")]
    input_checked: bool,
    /// The guardrail that ended the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    guardrail: Option<GuardrailTrip>,
    response: String,
    #[serde(skip)]
    error: Option<LlmError>,
    #[serde(skip)]
    record_events: bool,
    #[serde(skip)]
    events: Vec<AgentEvent>,
    /// Read back from storage and not yet held to a policy.
    #[serde(skip, default = "read_back")]
    read_back: ReadBack,
}

fn already_checked() -> bool {
    true
}

/// `text only`, or `image, document`: what a model reads besides text.
fn describe_inputs(inputs: &[agent_core::MediaKind]) -> String {
    if inputs.is_empty() {
        return "text only".to_owned();
    }
    let names: Vec<&str> = inputs.iter().map(|kind| kind.as_str()).collect();
    format!("text and {}", names.join(", "))
}

/// A new run id: `run_` and 16 random hexadecimal digits (the clock's
/// nanoseconds if the system has no randomness to give).
pub(crate) fn new_run_id() -> String {
    let mut bytes = [0_u8; 8];
    let random = match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| {
                elapsed.as_secs().rotate_left(32) ^ u64::from(elapsed.subsec_nanos())
            }),
    };
    format!("run_{random:016x}")
}

impl RunState {
    /// A run that will send `request` (system prompt, tools, settings and the
    /// conversation ending with the new user message) under `config`.
    /// `pricing` prices the usage; without it costs are unknown. The
    /// budget's deadline starts now.
    ///
    /// A cost budget without `pricing` cannot be enforced: a warning is
    /// logged (once, here) and the result's stop detail says so. A first
    /// call whose `max_tokens` alone exceeds the token (or cost) budget is
    /// not made: the run is over before it starts. The request's
    /// `max_tool_calls` is `max_calls_per_reply` unless set.
    pub fn new(identity: RunIdentity, config: RunConfig, mut request: ChatRequest, pricing: Option<Pricing>) -> Self {
        repair_history(&mut request.messages);
        let answer_format = request.response_format.take();
        let continued = request.messages.len().saturating_sub(1);
        request.tool_choice = config.tool_choice.clone();
        // The reply's calls past the cap would not run: a provider that
        // generates locally can stop writing there.
        if request.max_tool_calls.is_none() && config.max_calls_per_reply > 0 {
            request.max_tool_calls = u32::try_from(config.max_calls_per_reply).ok();
        }
        if let (Some(max_cost_usd), None) = (config.budget.max_cost_usd, pricing) {
            tracing::warn!(
                agent = %identity.agent,
                model = %identity.model,
                max_cost_usd,
                "the cost budget cannot be enforced: no price is known for the model"
            );
        }
        let deadline_unix_ms = config.budget.deadline.map(budgets::deadline_from_now);
        Self {
            identity,
            run_id: new_run_id(),
            conversation_id: None,
            config,
            protocol: Protocol::Native,
            request,
            cost_usd: pricing.map(|_| 0.0),
            pricing,
            forced_answer_instruction: None,
            accepted_inputs: None,
            format_with_tools: false,
            answer_format,
            phase: Phase::NeedsModel { forced: None },
            iteration: 0,
            usage: Usage::default(),
            tool_calls: Vec::new(),
            model_calls: Vec::new(),
            executed_tools: 0,
            consecutive_failures: 0,
            loops: LoopDetector::default(),
            last_input_tokens: None,
            sent_messages: 0,
            context: ContextTracker::default(),
            prepared: false,
            deadline_unix_ms,
            approval: ApprovalGate::default(),
            continued: Some(continued),
            offered_tools: None,
            grounding: GroundingGate::default(),
            reasked_on_repeat: false,
            reasked_on_malformed_call: false,
            input_checked: false,
            guardrail: None,
            response: String::new(),
            error: None,
            record_events: false,
            events: Vec::new(),
            read_back: ReadBack(false),
        }
    }

    /// Uses this tool-calling protocol (default: native). With a text
    /// protocol, describe the tools in the system prompt yourself and leave
    /// `request.tools` empty; [`Agent`](crate::Agent) does both.
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self.sync_answer_format();
        self
    }

    /// The tool-calling protocol.
    pub fn protocol(&self) -> &Protocol {
        &self.protocol
    }

    /// Asks for the final answer in this JSON-schema format, `None` for
    /// none. It is sent only with a model call that cannot call tools (the
    /// request offers none, or its tool choice is `none`, as a forced final
    /// answer's is): strict OpenAI-compatible servers stop calling tools
    /// when a response format comes with them.
    /// [`Agent::run_json`](crate::Agent::run_json) sets it.
    pub fn with_response_format(mut self, format: Option<ResponseFormat>) -> Self {
        self.answer_format = format;
        self.sync_answer_format();
        self
    }

    /// The client applies a response format without losing tool calls: the
    /// answer format goes with every call, tools offered or not.
    /// [`Agent`](crate::Agent) sets it from the client's capabilities.
    pub fn with_format_with_tools(mut self, on: bool) -> Self {
        self.format_with_tools = on;
        self.sync_answer_format();
        self
    }

    /// The run's first call must answer: no tool can be called (tool choice
    /// `none`; the tools are left out unless the history needs their
    /// definitions), so the response format, if any, is sent with it.
    pub fn answer_only(mut self) -> Self {
        self.request.tool_choice = ToolChoice::None;
        if !self.request.has_tool_blocks() {
            self.request.tools = Arc::default();
        }
        self.sync_answer_format();
        self
    }

    /// Puts the answer format on the request when its call cannot call
    /// tools, and takes it off otherwise. A state saved before the format
    /// was kept apart has it on its request: it is adopted.
    pub(crate) fn sync_answer_format(&mut self) {
        if self.answer_format.is_none() {
            self.answer_format = self.request.response_format.take();
        }
        let tools_callable = !self.format_with_tools
            && self.request.tool_choice != ToolChoice::None
            && match &self.protocol {
                Protocol::Native => !self.request.tools.is_empty(),
                Protocol::Text { tool_names } => !tool_names.is_empty(),
                Protocol::React => true,
            };
        self.request.response_format = if tools_callable {
            None
        } else {
            self.answer_format.clone()
        };
    }

    /// The model reads only these media kinds besides text (the catalog's
    /// `inputs`; `None`: not known, nothing is refused): a model call whose
    /// messages hold an attachment of another kind is not made, and the
    /// run ends with an [`LlmErrorKind::UnsupportedInput`] error naming the
    /// part and the model.
    pub fn with_accepted_inputs(mut self, inputs: Option<Vec<agent_core::MediaKind>>) -> Self {
        self.accepted_inputs = inputs;
        self
    }

    /// Refuses the pending model call when it holds an attachment the model
    /// cannot read (see [`with_accepted_inputs`](Self::with_accepted_inputs)).
    pub(crate) fn check_inputs(&mut self) {
        let Some(accepted) = &self.accepted_inputs else { return };
        let refused = self
            .request
            .messages
            .iter()
            .flat_map(Message::attachments)
            .find(|attachment| !accepted.contains(&attachment.kind));
        if let Some(attachment) = refused {
            let error = LlmError::new(
                LlmErrorKind::UnsupportedInput,
                format!(
                    "the model `{}` does not read {} (the model catalog lists {}): the request was not sent",
                    self.identity.model,
                    attachment.describe(),
                    describe_inputs(accepted)
                ),
            );
            self.end_with_error(error);
        }
    }

    /// Ends the run after at most `max_iterations` model calls (with a
    /// forced final answer), instead of its configuration's limit.
    pub fn with_max_iterations(mut self, max_iterations: u32) -> Self {
        self.config.max_iterations = max_iterations;
        self
    }

    /// Sends these sampling settings with every model call of the run:
    /// `max_tokens` and `temperature` replace the configured ones when
    /// given.
    pub fn with_sampling(mut self, max_tokens: Option<u32>, temperature: Option<f32>) -> Self {
        if max_tokens.is_some() {
            self.request.max_tokens = max_tokens;
        }
        if temperature.is_some() {
            self.request.temperature = temperature;
        }
        self
    }

    /// Replaces the instruction sent with a forced final answer.
    pub fn with_forced_answer_instruction(mut self, instruction: impl Into<String>) -> Self {
        self.forced_answer_instruction = Some(instruction.into());
        self
    }

    /// Replaces the forced-answer instruction when `instruction` is given.
    pub(crate) fn with_forced_answer(mut self, instruction: Option<String>) -> Self {
        if instruction.is_some() {
            self.forced_answer_instruction = instruction;
        }
        self
    }

    /// Collect [`AgentEvent`]s for [`drain_events`](Self::drain_events).
    pub fn record_events(&mut self, on: bool) {
        self.record_events = on;
    }

    /// Events produced since the last call.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, AgentEvent> {
        self.events.drain(..)
    }

    /// What to do next. Before a model call this readies it, once: the
    /// conversation is compacted when it no longer fits the context window
    /// (the step may then be a summary request, see
    /// [`is_compacting`](Self::is_compacting)), and the budgets are checked
    /// (the run may end here).
    pub fn next_step(&mut self) -> Step<'_> {
        self.prepare_call();
        self.current_step()
    }

    /// The step readied by [`next_step`](Self::next_step).
    pub(crate) fn current_step(&self) -> Step<'_> {
        match &self.phase {
            Phase::NeedsModel { .. } => Step::CallModel(&self.request),
            Phase::Summarising { summary } => Step::CallModel(&summary.request),
            Phase::NeedsTools { .. } if !self.approval.pending().is_empty() => {
                Step::AwaitApproval(self.approval.pending())
            }
            Phase::NeedsTools { batch } => Step::RunTools(&batch.to_run),
            Phase::Finished { .. } => Step::Finished,
        }
    }

    /// Model calls made so far.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// Tokens used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Why the run ended, once it has.
    pub fn stop_cause(&self) -> Option<RunEnd> {
        match self.phase {
            Phase::Finished { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// Who the run is for.
    pub fn identity(&self) -> &RunIdentity {
        &self.identity
    }

    /// This run's id: made when the run started, or given with
    /// [`with_run_id`](Self::with_run_id); on its spans as `agentry.run.id`.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Gives the run this id (a server's id for it), instead of its own.
    pub fn with_run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = id.into();
        self
    }

    /// The conversation the run is a turn of, if known; on its spans as
    /// `gen_ai.conversation.id`.
    pub fn conversation_id(&self) -> Option<&str> {
        self.conversation_id.as_deref()
    }

    /// Names the conversation the run is a turn of (a session's name).
    pub fn with_conversation_id(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// How many messages of the conversation the run continued: the history
    /// it started from, before its user message. This is where its turn
    /// starts ([`store_turn`](crate::store_turn)'s `continued`), whatever
    /// was stored in the conversation since. `None` for a state saved by a
    /// version that did not keep it: the conversation as loaded then is the
    /// best guess.
    pub fn continued_messages(&self) -> Option<usize> {
        self.continued
    }

    /// The request the next model call sends (or the last one sent).
    pub fn request(&self) -> &ChatRequest {
        &self.request
    }

    /// The model error that ended the run, if one did.
    pub fn error(&self) -> Option<&LlmError> {
        self.error.as_ref()
    }

    /// Whether the run is over.
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Finished { .. })
    }

    /// Takes the model's reply (to a summary request too).
    pub fn on_model_response(&mut self, mut response: ChatResponse, duration: Duration) -> Result<(), StepError> {
        if self.is_compacting() {
            return self.on_summary_response(&response, duration);
        }
        let Phase::NeedsModel { forced } = &self.phase else {
            return Err(self.unexpected("a model response"));
        };
        let forced = forced.clone();
        self.drop_restatement();
        self.sent_messages = self.request.messages.len();
        self.last_input_tokens = Some(response.usage.input_tokens);
        // The calibration serves compaction only.
        if self.config.context.enabled {
            let raw = context::estimate_tokens_with(&self.request, &mut self.context.schema_chars);
            self.calibrate(raw, response.usage.input_tokens);
        }
        self.context.checked = false;
        self.context.retried = false;
        // Reasoning is echoed only to the provider that produced it, so a
        // conversation can move to another provider without its signatures.
        // A client that routes between providers says which one answered.
        let producer = response
            .route
            .as_ref()
            .map_or(&self.identity.provider, |route| &route.provider);
        for block in &mut response.message.reasoning {
            if block.provider.is_none() {
                block.provider = Some(producer.clone());
            }
        }
        self.iteration += 1;
        let model = std::mem::take(&mut response.model);
        let cut_off = response.stop_reason == StopReason::MaxTokens;
        self.account(&response, model, duration, CallPurpose::Chat);
        if forced.is_none()
            && let Some(error) = malformed::unnamed_call(&response.message)
        {
            if !self.reask_after_malformed_call(&error) {
                self.end_with_error(error);
            }
            return Ok(());
        }
        self.reasked_on_malformed_call = false;
        let mut turn = self.protocol.interpret(response.message, self.iteration);
        if !turn.visible().is_empty() || forced.is_some() {
            self.response.clear();
            self.response.push_str(turn.visible());
        }

        if let Some(forced) = forced {
            self.request.messages.truncate(forced.instruction_at);
            let ignored = turn.calls().len() + turn.rejected.len();
            let message = self.protocol.history_message(&mut turn, false);
            self.request.messages.push(message);
            self.check_grounding(true);
            let detail = forced.detail(self.config.max_iterations, ignored);
            self.finish(forced.reason.cause(), Some(detail));
            return Ok(());
        }

        if turn.rejected.is_empty() && self.reask_on_repeat(turn.visible(), turn.calls()) {
            return Ok(());
        }
        let structured = !turn.message.tool_calls.is_empty();
        let policy = BatchPolicy {
            deduplicate: self.config.deduplicate_calls,
            max_calls: self.config.max_calls_per_reply,
        };
        let rejected = std::mem::take(&mut turn.rejected);
        // A native reply's calls stay in its message (the history's copy);
        // the batch gets its own, without a list in between.
        let batch = if turn.native {
            Batch::plan(turn.message.tool_calls.iter().cloned(), rejected, policy, structured)
        } else {
            Batch::plan(std::mem::take(&mut turn.calls), rejected, policy, structured)
        };
        if structured && !batch.keeps_every_call() {
            // Collapsed and capped calls never enter the history: the model
            // sees each call it made once, with one result.
            let kept: Vec<&str> = batch.history_calls().map(|call| call.id.as_str()).collect();
            let mut position = 0;
            turn.message.tool_calls.retain(|call| {
                let keep = kept.get(position) == Some(&call.id.as_str());
                position += usize::from(keep);
                keep
            });
        }
        let message = self.protocol.history_message(&mut turn, true);
        self.request.messages.push(message);
        if let Some(detail) = budget::spent_over(&self.config.budget, self.usage, self.cost_usd) {
            self.abandon(batch, &detail);
            self.finish(RunEnd::BudgetExceeded, Some(detail));
            return Ok(());
        }
        if batch.entries.is_empty() {
            if !self.check_grounding(false) {
                if cut_off {
                    // An answer cut at the token limit is not a finished one.
                    self.finish(
                        RunEnd::MaxTokens,
                        Some(prompts::cut_off_answer(self.request.max_tokens)),
                    );
                } else {
                    self.finish(RunEnd::Completed, None);
                }
            }
            return Ok(());
        }
        // A forced tool choice applies to the first round only, unless
        // configured for every round.
        if !self.config.tool_choice_every_round {
            self.request.tool_choice = ToolChoice::Auto;
        }
        let mut batch = batch;
        batch.loop_cycle = self.loops.observe(batch.signature());
        self.refuse_unoffered(&mut batch);
        if let Some(max) = self.config.budget.max_tool_calls {
            let wanted = (0..batch.to_run.len())
                .filter(|index| batch.finished(*index).is_none())
                .count() as u32;
            if self.executed_tools + wanted > max {
                let detail = format!(
                    "the model asked for {wanted} more tool call(s), which would exceed the budget of {max} ({} used)",
                    self.executed_tools
                );
                self.abandon(batch, &detail);
                self.finish(RunEnd::BudgetExceeded, Some(detail));
                return Ok(());
            }
        }
        if self.record_events {
            for call in batch.history_calls() {
                self.events.push(AgentEvent::ToolCallRequested {
                    iteration: self.iteration,
                    call: call.clone(),
                });
            }
        }
        let nothing_to_run = batch.to_run.is_empty();
        self.hold_for_approval(&batch);
        self.phase = Phase::NeedsTools { batch };
        if nothing_to_run {
            self.on_tool_results(&[])?;
        }
        Ok(())
    }

    /// Takes the outcomes of the calls of [`Step::RunTools`], in that order.
    /// Missing outcomes count as interrupted.
    pub fn on_tool_results(&mut self, outcomes: &[ToolOutcome]) -> Result<(), StepError> {
        let Phase::NeedsTools { mut batch } = std::mem::replace(&mut self.phase, Phase::NeedsModel { forced: None })
        else {
            return Err(self.unexpected("tool results"));
        };
        self.prepared = false;
        let denied = self.approval.take_denied();
        self.approval.take_pending();
        self.executed_tools += (batch.to_run.len() - denied.min(batch.to_run.len())) as u32;
        let mut all_failed = true;
        let mut last_error = None;
        let mut results = Vec::with_capacity(batch.entries.len());
        let mut stop_answer = None;
        // An outcome the state already holds (a call that finished before a
        // save, a denied call) wins over a reported one: those calls are
        // answered, a driver that ran them anyway does not change that.
        let mut finished = std::mem::take(&mut batch.finished);
        // The entries hold the only other reference to each call that ran:
        // recording takes the calls without copying them.
        drop(std::mem::take(&mut batch.to_run));
        // An outcome no collapsed call shares is taken, not copied.
        let shared: Vec<usize> = batch
            .entries
            .iter()
            .filter_map(|(_, slot)| match slot {
                Slot::Collapsed { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        let outcome_of = |finished: &[Option<ToolOutcome>], index: usize| {
            finished
                .get(index)
                .and_then(Option::as_ref)
                .or_else(|| outcomes.get(index))
                .cloned()
        };
        for (call, slot) in batch.entries {
            let in_history = slot.in_history();
            let mut cached = false;
            let mut delegated = None;
            let mut attachments = Vec::new();
            let (content, is_error, duration, duplicate_of) = match slot {
                Slot::Run { index } => {
                    let taken = if shared.contains(&index) {
                        None
                    } else {
                        finished.get_mut(index).and_then(Option::take)
                    };
                    match taken.or_else(|| outcome_of(&finished, index)) {
                        Some(outcome) => {
                            cached = outcome.cached;
                            delegated = outcome.delegated_usage;
                            attachments = outcome.attachments;
                            (outcome.content, outcome.is_error, outcome.duration, None)
                        }
                        None => (INTERRUPTED_RESULT.to_owned(), true, Duration::ZERO, None),
                    }
                }
                // A collapsed call shares the outcome, not the time spent
                // (it is not in the history: its media are not needed).
                Slot::Collapsed { index, of } => match outcome_of(&finished, index) {
                    Some(outcome) => (outcome.content, outcome.is_error, Duration::ZERO, Some(of)),
                    None => (INTERRUPTED_RESULT.to_owned(), true, Duration::ZERO, Some(of)),
                },
                Slot::Rejected { message } | Slot::Dropped { message } => (message, true, Duration::ZERO, None),
            };
            let content = crate::history::cap_tool_result(content, self.config.max_tool_result_bytes);
            if in_history {
                all_failed &= is_error;
                if is_error {
                    last_error = Some(format!("`{}`: {content}", call.name));
                } else if stop_answer.is_none() && self.config.stop_at_tools.contains(&call.name) {
                    stop_answer = Some(content.clone());
                }
            }
            let mut result = self.record_call(call, content, is_error, duration, duplicate_of, cached);
            result.attachments = attachments;
            self.attach_delegated(delegated);
            if in_history {
                results.push(result);
            }
        }
        self.append_results(results, batch.structured);
        self.consecutive_failures = if all_failed { self.consecutive_failures + 1 } else { 0 };
        self.emit(AgentEvent::IterationFinished {
            iteration: self.iteration,
        });

        if let Some(answer) = stop_answer {
            // The answer also enters the history as the assistant's words,
            // so the next turn sees what the user was told.
            self.request.messages.push(Message::assistant(answer.clone()));
            self.response = answer;
            self.finish(RunEnd::Completed, None);
        } else if self.consecutive_failures >= self.config.max_consecutive_failures {
            let detail = format!(
                "every tool call failed in {} consecutive iterations; last error: {}",
                self.consecutive_failures,
                last_error.unwrap_or_default()
            );
            // The user hears that the lookup failed, and why, not nothing.
            self.response = self.failed_lookup_answer();
            self.finish(RunEnd::Error, Some(detail));
        } else if let Some(cycle) = batch.loop_cycle {
            self.emit(AgentEvent::LoopDetected {
                iteration: self.iteration,
            });
            self.force_answer(ForcedReason::LoopDetected, Some(cycle));
        } else if self.iteration >= self.config.max_iterations {
            self.force_answer(ForcedReason::MaxIterations, None);
        }
        Ok(())
    }

    /// Takes a failed model call; the run ends (retries are the client's
    /// job), except that a chat call refused as too long for the context
    /// window is compacted and readied again, once, and that a reply whose
    /// tool call could not be used ([`LlmErrorKind::MalformedToolCall`]) is
    /// answered with a correction, once in a row (`malformed`).
    pub fn on_model_error(&mut self, error: LlmError) -> Result<(), StepError> {
        if self.is_compacting() {
            self.abandon_summary();
        } else if !matches!(self.phase, Phase::NeedsModel { .. }) {
            return Err(self.unexpected("a model error"));
        } else if error.kind == LlmErrorKind::ContextLength && self.retry_after_context_error() {
            tracing::warn!(error = %error, "the request was too long for the context window; compacted, retrying");
            return Ok(());
        } else if error.kind == LlmErrorKind::MalformedToolCall && self.reask_after_malformed_call(&error) {
            tracing::warn!(error = %error, "the model wrote a malformed tool call; asking it to write the call again");
            return Ok(());
        }
        self.end_with_error(error);
        Ok(())
    }

    /// Ends the run with a model error (cancelled, when it is a cancellation).
    fn end_with_error(&mut self, error: LlmError) {
        let cause = if error.kind == LlmErrorKind::Cancelled {
            RunEnd::Cancelled
        } else {
            RunEnd::Error
        };
        self.emit(AgentEvent::Error {
            message: error.to_string(),
        });
        let detail = error.to_string();
        self.error = Some(error);
        self.interrupt(cause, detail);
    }

    /// Ends the run now (cancellation, deadline). Calls that were waiting get
    /// an "interrupted" result, so the history stays sendable.
    pub fn interrupt(&mut self, cause: RunEnd, detail: impl Into<String>) {
        self.approval.take_pending();
        self.approval.take_denied();
        match std::mem::replace(&mut self.phase, Phase::NeedsModel { forced: None }) {
            Phase::NeedsTools { batch } => self.abandon_with(batch, |_| INTERRUPTED_RESULT.to_owned()),
            Phase::NeedsModel { forced: Some(forced) } => self.request.messages.truncate(forced.instruction_at),
            Phase::NeedsModel { forced: None } => self.drop_restatement(),
            summarising @ Phase::Summarising { .. } => {
                self.phase = summarising;
                self.abandon_summary();
                if let Phase::NeedsModel { forced: Some(forced) } = &self.phase {
                    self.request.messages.truncate(forced.instruction_at);
                }
            }
            finished @ Phase::Finished { .. } => {
                self.phase = finished;
                return;
            }
        }
        self.finish(cause, Some(detail.into()));
    }

    /// The run's record. Call once [`Step::Finished`] is reached; an
    /// unfinished run is reported as interrupted.
    pub fn into_result(mut self) -> AgentRunResult {
        let pending_approvals = self.pause_for_approval();
        if !self.is_finished() {
            self.interrupt(RunEnd::Error, "the run was stopped before it finished");
        }
        let (stop_reason, mut stop_detail) = match self.phase {
            Phase::Finished { cause, detail } => (cause, detail),
            _ => (RunEnd::Error, None),
        };
        if let Some(note) = budget::unenforced_cost_note(&self.config.budget, self.cost_usd, &self.identity.model) {
            stop_detail = Some(match stop_detail {
                Some(detail) => format!("{detail}; {note}"),
                None => note,
            });
        }
        AgentRunResult {
            response: self.response,
            stop_reason,
            stop_detail,
            iterations: self.iteration,
            tool_calls: self.tool_calls,
            model_calls: self.model_calls,
            usage: self.usage,
            cost_usd: self.cost_usd,
            provider: self.identity.provider,
            model: self.identity.model,
            messages: self.request.messages,
            compactions: self.context.compactions,
            pending_approvals,
            scene: None,
            grounding: (self.config.grounding == crate::Grounding::On).then(|| self.grounding.record()),
            guardrail: self.guardrail,
        }
    }

    /// Ends a run that waits for approval with
    /// [`RunEnd::AwaitingApproval`]: the calls of the batch are answered
    /// as not run, so the record and the history are complete; returns the
    /// waiting calls. Does nothing (and returns none) otherwise.
    fn pause_for_approval(&mut self) -> Vec<ToolCall> {
        if !self.is_awaiting_approval() {
            return Vec::new();
        }
        let pending = self.approval.take_pending();
        if let Phase::NeedsTools { batch } = std::mem::replace(&mut self.phase, Phase::NeedsModel { forced: None }) {
            self.abandon_with(batch, |_| prompts::AWAITING_APPROVAL_RESULT.to_owned());
        }
        let names: Vec<&str> = pending.iter().map(|call| call.name.as_str()).collect();
        let detail = format!(
            "{} call(s) wait for the user's approval: {}",
            pending.len(),
            names.join(", ")
        );
        self.finish(RunEnd::AwaitingApproval, Some(detail));
        pending
    }

    fn force_answer(&mut self, reason: ForcedReason, cycle: Option<Cycle>) {
        self.request.tool_choice = ToolChoice::None;
        if !self.request.has_tool_blocks() {
            self.request.tools = Arc::default();
        }
        let instruction_at = self.request.messages.len();
        self.request.messages.push(Message::user(
            self.forced_answer_instruction
                .clone()
                .unwrap_or_else(prompts::forced_answer_instruction),
        ));
        self.phase = Phase::NeedsModel {
            forced: Some(Forced {
                reason,
                instruction_at,
                cycle,
            }),
        };
    }

    /// Answers calls that will not run, so the record and the history stay complete.
    fn abandon(&mut self, batch: Batch, reason: &str) {
        self.abandon_with(batch, |_| prompts::not_run(reason));
    }

    /// Answers every call of `batch` that has not finished with
    /// `message(call)` (a dropped call keeps its own reason; a finished one
    /// its outcome) and appends the results of the calls in the history.
    fn abandon_with(&mut self, mut batch: Batch, message: impl Fn(&ToolCall) -> String) {
        let mut results = Vec::with_capacity(batch.entries.len());
        let finished = std::mem::take(&mut batch.finished);
        drop(std::mem::take(&mut batch.to_run));
        for (call, slot) in batch.entries {
            // Calls that finished keep their outcome; the others get `message`.
            let outcome = match &slot {
                Slot::Run { index } | Slot::Collapsed { index, .. } => finished.get(*index).cloned().flatten(),
                Slot::Rejected { .. } | Slot::Dropped { .. } => None,
            };
            // A collapsed call shares the outcome of the one that ran, not its usage.
            let delegated = outcome
                .as_ref()
                .filter(|_| matches!(slot, Slot::Run { .. }))
                .and_then(|outcome| outcome.delegated_usage);
            let mut attachments = Vec::new();
            let (content, is_error, duration, cached) = match (outcome, &slot) {
                (Some(outcome), _) => {
                    attachments = outcome.attachments;
                    (
                        crate::history::cap_tool_result(outcome.content, self.config.max_tool_result_bytes),
                        outcome.is_error,
                        outcome.duration,
                        outcome.cached,
                    )
                }
                (None, Slot::Dropped { message }) => (message.clone(), true, Duration::ZERO, false),
                (None, _) => (message(&call), true, Duration::ZERO, false),
            };
            let mut result = self.record_call(call, content, is_error, duration, None, cached);
            result.attachments = attachments;
            self.attach_delegated(delegated);
            if slot.in_history() {
                results.push(result);
            }
        }
        self.append_results(results, batch.structured);
    }

    /// Records one call's outcome (`duplicate_of`: the call of the same
    /// reply it was collapsed onto; `cached`: answered from the tool-result
    /// cache) and returns the result to send back.
    fn record_call(
        &mut self,
        call: Arc<ToolCall>,
        content: String,
        is_error: bool,
        duration: Duration,
        duplicate_of: Option<String>,
        cached: bool,
    ) -> ToolResult {
        // Not copied unless the driver still holds the call.
        let call = Arc::unwrap_or_clone(call);
        let result = ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.clone(),
            is_error,
            attachments: Vec::new(),
        };
        self.tool_calls.push(ToolCallRecord {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
            result: content,
            is_error,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            iteration: self.iteration,
            duplicate_of,
            cached,
            delegated_usage: None,
        });
        result
    }

    /// Appends a batch's results to the history, in the protocol's form.
    fn append_results(&mut self, results: Vec<ToolResult>, structured: bool) {
        let messages = self.protocol.result_messages(results, structured);
        self.request.messages.extend(messages);
    }

    fn finish(&mut self, cause: RunEnd, detail: Option<String>) {
        repair_history(&mut self.request.messages);
        if cause == RunEnd::BudgetExceeded && self.response.trim().is_empty() {
            // A run stopped by a budget (its time, tokens, cost or calls)
            // still tells the user what it found. The history is left
            // ending where the model stopped, so a later turn or a resumed
            // run goes on from there.
            self.response = prompts::unfinished_answer(&self.result_lines(false));
        }
        self.phase = Phase::Finished { cause, detail };
    }

    fn emit(&mut self, event: AgentEvent) {
        if self.record_events {
            self.events.push(event);
        }
    }

    fn unexpected(&self, got: &'static str) -> StepError {
        let expected = match self.phase {
            Phase::NeedsModel { .. } => "is waiting for a model response",
            Phase::NeedsTools { .. } => "is waiting for tool results",
            Phase::Summarising { .. } => "is waiting for a summary",
            Phase::Finished { .. } => "is finished",
        };
        StepError::new(expected, got)
    }
}
