//! Compaction as steps of the run: the check before each model call, the
//! summary rounds and the retry after a context-length error. What is
//! estimated and where a summary may cut is in [`crate::context`].

use std::time::Duration;

use agent_core::{
    AgentEvent, CallPurpose, ChatRequest, ChatResponse, CompactionRecord, CompactionTrigger, Message, ToolChoice, Usage,
};
use serde::{Deserialize, Serialize};

use super::{Phase, RunState};
use crate::budget::{self, SchemaChars};
use crate::context::{self, Elided, SUMMARY_PREFIX, Sizes};
use crate::forced::Forced;
use crate::step::StepError;

/// The most summary calls of one compaction.
const MAX_SUMMARY_ROUNDS: u32 = 8;

/// A request may fill at least this many tokens with a summary.
const MIN_SUMMARY_TOKENS: u64 = 64;

/// What the run knows and has done about the context window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ContextTracker {
    /// The calibration factor of the estimate ([`crate::context`]).
    #[serde(default = "one")]
    pub ratio: f64,
    /// The pending model call was checked for compaction already.
    #[serde(default)]
    pub checked: bool,
    /// The pending model call was retried after a context-length error.
    #[serde(default)]
    pub retried: bool,
    /// The compactions made so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<CompactionRecord>,
    /// The sizes of the tool schemas estimated so far (not saved).
    #[serde(skip)]
    pub schema_chars: SchemaChars,
}

fn one() -> f64 {
    1.0
}

impl Default for ContextTracker {
    fn default() -> Self {
        Self {
            ratio: 1.0,
            checked: false,
            retried: false,
            compactions: Vec::new(),
            schema_chars: SchemaChars::default(),
        }
    }
}

/// A summary call under way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Summarising {
    /// The summary request.
    pub request: ChatRequest,
    /// It summarises the messages before this one.
    pub cut: usize,
    /// The forced answer the model call after the compaction makes.
    pub forced: Option<Forced>,
    /// The compaction it belongs to.
    pub compaction: Pending,
}

/// A compaction under way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Pending {
    trigger: CompactionTrigger,
    iteration: u32,
    before: u64,
    elided_results: usize,
    elided_bytes: usize,
    /// Messages (of those when the compaction began) the summary replaces.
    replaced: usize,
    summary: Option<String>,
    summary_calls: u32,
    summary_usage: Usage,
    /// Without a window: the messages a forced compaction keeps at the end.
    keep_tail: Option<usize>,
}

impl Pending {
    fn add(&mut self, elided: Elided) {
        self.elided_results += elided.results;
        self.elided_bytes += elided.bytes;
    }
}

impl RunState {
    /// Readies the pending model call, once: compacts the conversation when
    /// its estimate is over the target (this may start a summary call), then
    /// checks the budgets.
    pub(crate) fn prepare_call(&mut self) {
        if self.prepared {
            return;
        }
        self.prepared = true;
        if matches!(self.phase, Phase::NeedsModel { .. }) {
            self.sync_answer_format();
            self.check_inputs();
        }
        if matches!(self.phase, Phase::NeedsModel { .. }) && !self.context.checked {
            self.context.checked = true;
            self.compact(CompactionTrigger::Threshold);
        }
        self.check_next_call();
    }

    /// Whether the pending model call is a summary request of a compaction.
    pub fn is_compacting(&self) -> bool {
        matches!(self.phase, Phase::Summarising { .. })
    }

    /// After a context-length error of a chat call: compacts (even if the
    /// estimate says the request fits) and readies the same call again.
    /// Once per model call; `false` when compaction is off, the call was
    /// retried already, or nothing could be compacted.
    pub(super) fn retry_after_context_error(&mut self) -> bool {
        if !self.config.context.enabled || self.context.retried || !matches!(self.phase, Phase::NeedsModel { .. }) {
            return false;
        }
        self.context.retried = true;
        self.context.checked = true;
        // The request was larger than estimated: so will the next ones be.
        let raw = context::estimate_tokens_with(&self.request, &mut self.context.schema_chars).max(1);
        let mut ratio = self.context.ratio * 1.25;
        if let Some(window) = self.config.context.window_tokens {
            let room = window.saturating_sub(self.request.max_tokens.map_or(0, u64::from));
            ratio = ratio.max(room as f64 / raw as f64 * 1.1);
        }
        self.context.ratio = ratio.clamp(context::RATIO_RANGE.0, context::RATIO_RANGE.1);
        self.prepared = false;
        self.compact(CompactionTrigger::ContextLengthError)
    }

    /// Takes the reply to a summary request.
    pub(super) fn on_summary_response(&mut self, response: &ChatResponse, duration: Duration) -> Result<(), StepError> {
        let Phase::Summarising { summary } = std::mem::replace(&mut self.phase, Phase::NeedsModel { forced: None })
        else {
            return Err(self.unexpected("a summary"));
        };
        let Summarising {
            request,
            cut,
            forced,
            compaction: mut pending,
        } = *summary;
        self.phase = Phase::NeedsModel { forced };
        self.prepared = false;
        self.calibrate(context::estimate_tokens(&request), response.usage.input_tokens);
        self.account(response, response.model.clone(), duration, CallPurpose::Summary);
        pending.summary_calls += 1;
        pending.summary_usage += response.usage;
        let applied = self.apply_summary(cut, response.message.content.trim(), &mut pending);
        if let Some(detail) = budget::spent_over(&self.config.budget, self.usage, self.cost_usd) {
            self.end_compaction(pending);
            self.interrupt(agent_core::RunEnd::BudgetExceeded, detail);
            return Ok(());
        }
        let unstarted = if applied && self.over_target() {
            self.start_round(pending)
        } else {
            Some(pending)
        };
        if let Some(pending) = unstarted {
            self.finish_compaction(pending);
        }
        Ok(())
    }

    /// Ends a summary call that failed or was interrupted: the compaction
    /// keeps what it did so far.
    pub(super) fn abandon_summary(&mut self) {
        if let Phase::Summarising { summary } = std::mem::replace(&mut self.phase, Phase::NeedsModel { forced: None }) {
            let Summarising { forced, compaction, .. } = *summary;
            self.phase = Phase::NeedsModel { forced };
            self.end_compaction(compaction);
        }
    }

    /// The factor the context estimate is scaled by: what the provider
    /// counted for the requests so far, per estimated token (1 before any).
    pub fn calibration(&self) -> f64 {
        self.context.ratio
    }

    /// Starts from the calibration factor an earlier run learned (see
    /// [`calibration`](Self::calibration)); values outside the allowed
    /// range are clamped into it.
    pub fn with_calibration(mut self, ratio: f64) -> Self {
        if ratio.is_finite() {
            self.context.ratio = ratio.clamp(context::RATIO_RANGE.0, context::RATIO_RANGE.1);
        }
        self
    }

    /// Scales later estimates after a call whose request was estimated at
    /// `raw` tokens and counted by the provider as `reported` input tokens.
    pub(super) fn calibrate(&mut self, raw: u64, reported: u64) {
        if let Some(ratio) = context::ratio(raw, reported) {
            self.context.ratio = ratio;
        }
    }

    /// Compacts the conversation before the pending chat call; whether
    /// anything changed (or a summary call is now due).
    fn compact(&mut self, trigger: CompactionTrigger) -> bool {
        let Phase::NeedsModel { forced } = &self.phase else {
            return false;
        };
        let forced = forced.clone();
        if !self.config.context.enabled {
            return false;
        }
        // Sized only when there is something to measure against: at the
        // threshold check without a known window, nothing is.
        let target = self.target();
        if trigger == CompactionTrigger::Threshold && target.is_none() {
            return false;
        }
        let before = self.estimate();
        if trigger == CompactionTrigger::Threshold && target.is_some_and(|target| before <= target) {
            return false;
        }
        let mut pending = Pending {
            trigger,
            iteration: self.iteration + 1,
            before,
            elided_results: 0,
            elided_bytes: 0,
            replaced: 0,
            summary: None,
            summary_calls: 0,
            summary_usage: Usage::default(),
            keep_tail: None,
        };
        let limit = history_limit(&self.request.messages, forced.as_ref());
        let starts = context::turn_starts(&self.request.messages[..limit], &self.protocol);
        let keep = self.config.context.keep_recent_turns.max(1);
        // Without a turn, nothing is old.
        let recent = starts.get(starts.len().saturating_sub(keep)).copied().unwrap_or(0);
        let elided = context::elide_tool_results(
            &mut self.request.messages[..recent],
            &self.protocol,
            self.config.context.elide_results_over_bytes,
        );
        pending.add(elided);
        if trigger == CompactionTrigger::ContextLengthError || self.over_target() {
            match self.start_round(pending) {
                Some(unstarted) => pending = unstarted,
                None => return true,
            }
        }
        self.finish_compaction(pending)
    }

    /// Starts the next summary round (`None`), or gives `pending` back when
    /// there is nothing (more) to summarise.
    fn start_round(&mut self, mut pending: Pending) -> Option<Pending> {
        let Phase::NeedsModel { forced } = &self.phase else {
            return Some(pending);
        };
        if pending.summary_calls >= MAX_SUMMARY_ROUNDS {
            return Some(pending);
        }
        let forced = forced.clone();
        let messages = &self.request.messages;
        let limit = history_limit(messages, forced.as_ref());
        let starts = context::turn_starts(&messages[..limit], &self.protocol);
        let target = self.target();
        let summary_tokens = self.summary_tokens();
        let keep = self.config.context.keep_recent_turns;
        let goal = match (target, pending.keep_tail) {
            (None, Some(tail)) => messages.len().checked_sub(tail),
            (None, None) => context::choose_cut(messages, &starts, keep, |_| true),
            (Some(target), _) => {
                let sizes = Sizes::of(&self.request);
                let ratio = self.context.ratio;
                context::choose_cut(messages, &starts, keep, |cut| {
                    context::scale(sizes.tokens_from(cut), ratio) + summary_tokens <= target
                })
            }
        };
        let Some(goal) = goal else {
            return Some(pending);
        };
        if target.is_none() {
            pending.keep_tail = Some(messages.len() - goal);
        }
        let template = crate::prompts::summary_request("");
        let room = self.summary_room().map(|tokens| {
            let chars = (tokens as f64 / self.context.ratio) as u64 * budget::CHARS_PER_TOKEN;
            (chars as usize).saturating_sub(template.chars().count())
        });
        let rendered = context::rendered_prefix(&messages[..goal]);
        let fits = |cut: usize| room.is_none_or(|room| rendered.get(cut).is_some_and(|chars| *chars <= room));
        let Some(cut) = context::round_cut(messages, &starts, goal, fits) else {
            return Some(pending);
        };
        let conversation = context::render_conversation(&messages[..cut], room);
        let request = ChatRequest {
            model: self.request.model.clone(),
            system: None,
            messages: vec![Message::user(crate::prompts::summary_request(&conversation))],
            tools: std::sync::Arc::default(),
            tool_choice: ToolChoice::None,
            parallel_tool_calls: None,
            max_tool_calls: None,
            max_tokens: Some(summary_tokens as u32),
            temperature: None,
            stop: Vec::new(),
            response_format: None,
            prompt_caching: false,
        };
        self.phase = Phase::Summarising {
            summary: Box::new(Summarising {
                request,
                cut,
                forced,
                compaction: pending,
            }),
        };
        self.prepared = false;
        None
    }

    /// Replaces the messages before `cut` by the summary `text`, unless it is
    /// empty or no shorter than what it replaces; whether it did.
    fn apply_summary(&mut self, cut: usize, text: &str, pending: &mut Pending) -> bool {
        if text.is_empty() || cut == 0 || cut > self.request.messages.len() {
            return false;
        }
        let content = format!("{SUMMARY_PREFIX}{text}");
        let replaced_chars: u64 = self.request.messages[..cut].iter().map(budget::message_chars).sum();
        if content.chars().count() as u64 >= replaced_chars {
            tracing::warn!(cut, "the summary is no shorter than what it summarises; it is not used");
            return false;
        }
        // A summary of this compaction is first, standing for what it replaced.
        pending.replaced = match pending.summary {
            Some(_) => pending.replaced + cut - 1,
            None => cut,
        };
        pending.summary = Some(content.clone());
        self.request.messages.splice(..cut, [Message::system(content)]);
        if let Phase::NeedsModel { forced: Some(forced) } = &mut self.phase {
            forced.instruction_at = forced.instruction_at + 1 - cut;
        }
        true
    }

    /// The last resort once nothing more can be summarised: elides large
    /// results in the recent turns too, except those of the latest reply,
    /// then records the compaction. Whether anything was done.
    fn finish_compaction(&mut self, mut pending: Pending) -> bool {
        if self.over_target() {
            let latest = self
                .request
                .messages
                .iter()
                .rposition(|message| matches!(message, Message::Assistant(_)))
                .unwrap_or(0);
            let elided = context::elide_tool_results(
                &mut self.request.messages[..latest],
                &self.protocol,
                self.config.context.elide_results_over_bytes,
            );
            pending.add(elided);
        }
        self.end_compaction(pending)
    }

    /// Records the compaction and emits its event, when it did anything.
    fn end_compaction(&mut self, pending: Pending) -> bool {
        if pending.elided_results == 0 && pending.summary.is_none() && pending.summary_calls == 0 {
            return false;
        }
        let after = self.estimate();
        // The budget's estimate of the next call starts from the compacted request.
        if self.last_input_tokens.is_some() {
            self.last_input_tokens = Some(after);
            self.sent_messages = self.request.messages.len();
        }
        let record = CompactionRecord {
            trigger: pending.trigger,
            iteration: pending.iteration,
            estimated_tokens_before: pending.before,
            estimated_tokens_after: after,
            elided_results: pending.elided_results,
            elided_bytes: pending.elided_bytes,
            replaced_messages: pending.replaced,
            summary: pending.summary,
            summary_calls: pending.summary_calls,
            summary_usage: pending.summary_usage,
        };
        tracing::info!(
            trigger = ?record.trigger,
            before = record.estimated_tokens_before,
            after = record.estimated_tokens_after,
            elided = record.elided_results,
            replaced = record.replaced_messages,
            "the conversation was compacted"
        );
        self.emit(AgentEvent::ContextCompacted {
            iteration: record.iteration,
            trigger: record.trigger,
            estimated_tokens_before: record.estimated_tokens_before,
            estimated_tokens_after: record.estimated_tokens_after,
            elided_results: record.elided_results,
            elided_bytes: record.elided_bytes,
            replaced_messages: record.replaced_messages,
            summary_calls: record.summary_calls,
            summary_usage: record.summary_usage,
        });
        self.context.compactions.push(record);
        true
    }

    /// The calibrated estimate of the pending chat request.
    fn estimate(&mut self) -> u64 {
        let raw = context::estimate_tokens_with(&self.request, &mut self.context.schema_chars);
        context::scale(raw, self.context.ratio)
    }

    /// What the pending chat request may fill: the window's share less its
    /// `max_tokens`; `None` when the window is unknown.
    fn target(&self) -> Option<u64> {
        let cap = self.summary_room_cap()?;
        Some(cap.saturating_sub(self.request.max_tokens.map_or(0, u64::from)))
    }

    /// Whether the pending chat request is over its target (always, when
    /// the window is unknown: only a context-length error compacts then).
    fn over_target(&mut self) -> bool {
        self.target().is_none_or(|target| self.estimate() > target)
    }

    /// The window's share a request may fill.
    fn summary_room_cap(&self) -> Option<u64> {
        let policy = &self.config.context;
        policy
            .window_tokens
            .map(|window| context::window_cap(window, policy.compact_at))
    }

    /// The most tokens a summary may take.
    fn summary_tokens(&self) -> u64 {
        let max = u64::from(self.config.context.summary_max_tokens).max(1);
        match self.summary_room_cap() {
            Some(cap) => max.min((cap / 4).max(MIN_SUMMARY_TOKENS)),
            None => max,
        }
    }

    /// The input tokens a summary request may take.
    fn summary_room(&self) -> Option<u64> {
        Some(self.summary_room_cap()?.saturating_sub(self.summary_tokens()))
    }
}

/// Where the conversation ends for compaction: before a forced answer's
/// instruction, which is not part of it.
fn history_limit(messages: &[Message], forced: Option<&Forced>) -> usize {
    forced.map_or(messages.len(), |forced| forced.instruction_at.min(messages.len()))
}
