//! The async driver: performs the I/O a [`RunState`] asks for.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use agent_core::{
    AgentEvent, ChatRequest, ChatResponse, GuardrailTrip, LlmClient, LlmError, ModelProgress, RunEnd, StopReason,
    StreamAccumulator, StreamEvent, ToolCall, ToolContext, ToolError, ToolExecution, ToolRegistry,
};
use agent_parse::StreamingToolCallFilter;

use crate::cutoff::{CallCutoff, Cut};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::Protocol;
use crate::cache::{ToolResultCache, cache_key};
use crate::checkpoint::RunCheckpoints;
use crate::guardrails::{Guardrails, HeldCalls};
use crate::state::RunState;
use crate::step::{Step, StepError, ToolOutcome};
use crate::telemetry;

/// Everything the driver needs besides the state.
pub(crate) struct Driver<'a> {
    pub client: &'a dyn LlmClient,
    pub registry: &'a dyn ToolRegistry,
    pub context: &'a ToolContext,
    /// When the run must end ([`deadline_instant`] of the state's deadline).
    pub deadline: Option<Instant>,
    pub max_concurrent_tools: usize,
    pub capture_content: bool,
    /// Where events go; `None` for runs nobody watches.
    pub events: Option<&'a crate::agent::EventSender>,
    /// Whether a watched run streams the model's replies (its text and
    /// progress forwarded as they come) or asks for them whole.
    pub stream_replies: bool,
    /// Results of idempotent tools shared by the agent, if it shares them.
    pub shared_cache: Option<ToolResultCache>,
    /// The run's own cache, when the agent shares none: made at the first
    /// call of a tool that caches, so other runs pay nothing for it.
    pub own_cache: std::sync::OnceLock<ToolResultCache>,
    /// Who is asking, as the cache keys it ([`crate::cache::caller_scope`]
    /// of `context`): made at the first call of a tool that caches, so a
    /// run of tools that do not pays nothing for it.
    pub cache_scope: std::sync::OnceLock<String>,
    /// Where the state is saved after every step, when it is.
    pub checkpoints: Option<&'a dyn RunCheckpoints>,
    /// The keys of the client's chat metrics (the agent's).
    pub chat_metric_keys: &'a telemetry::ChatMetricKeys,
    /// The agent's guardrails and hooks.
    pub guardrails: &'a Guardrails,
    /// The tool-result guardrail that tripped in the batch running.
    pub tripped: std::sync::Mutex<Option<GuardrailTrip>>,
}

/// Which checks the calls of the batch in hand went through: the
/// tool-call guardrails before the user is asked to approve them, and
/// again (with the `before_tool` hooks) before they run.
#[derive(Debug, Clone, Copy)]
struct Screened {
    before_approval: bool,
    before_running: bool,
}

impl Screened {
    /// Nothing screened yet, unless there is nothing to screen with.
    fn skipped_if(nothing: bool) -> Self {
        Self {
            before_approval: nothing,
            before_running: nothing,
        }
    }
}

/// Why a step was cut short.
struct Interrupted {
    cause: RunEnd,
    detail: String,
}

impl Driver<'_> {
    /// Drives `state` until it is finished.
    pub async fn drive(&self, state: &mut RunState) {
        let identity = state.identity();
        let ids = telemetry::RunIds {
            run: Some(state.run_id()),
            conversation: state.conversation_id(),
        };
        let span = telemetry::run_span(&identity.agent, &identity.provider, &identity.model, ids);
        self.drive_steps(state).instrument(span.clone()).await;
        telemetry::record_run(
            &span,
            &state.usage(),
            state.iteration(),
            state.stop_cause().map(RunEnd::as_str),
        );
    }

    async fn drive_steps(&self, state: &mut RunState) {
        state.record_events(self.events.is_some());
        let hide_tool_calls = matches!(state.protocol(), Protocol::Text { .. });
        let metrics = telemetry::ChatMetrics::new(self.chat_metric_keys);
        self.guardrails.screen_input(state).await;
        self.save(state).await;
        let mut screened = Screened::skipped_if(self.guardrails.is_empty());
        let mut held = HeldCalls::new(self.guardrails);
        loop {
            state.prepare_call();
            // A compaction's event comes before the call it made room for.
            self.forward(state, &mut held);
            // Held calls no guardrail checks now (none of them runs) go out as they are.
            let screening = match state.current_step() {
                Step::AwaitApproval(_) => !screened.before_approval,
                Step::RunTools(_) => !screened.before_running,
                _ => false,
            };
            if !screening {
                self.release(state, &mut held);
            }
            // A summary request of a compaction is no iteration: it is
            // reported by the compaction's event, and its text is not the
            // answer, so it is not streamed.
            let summary = state.is_compacting();
            let iteration = state.iteration() + 1;
            let outcome = match state.current_step() {
                Step::Finished => break,
                Step::CallModel(request) => {
                    if !summary {
                        self.emit(AgentEvent::ModelRequestStarted {
                            iteration,
                            tool_choice: request.tool_choice.clone(),
                        });
                    }
                    let hooked = self.guardrails.before_model(request).await;
                    let request = hooked.as_ref().unwrap_or(request);
                    let started = Instant::now();
                    let model = request.model.as_deref().unwrap_or_else(|| self.client.model());
                    let ids = telemetry::RunIds {
                        run: Some(state.run_id()),
                        conversation: state.conversation_id(),
                    };
                    let span = telemetry::chat_span(self.client.provider(), model, request, iteration, ids);
                    let call = async {
                        if summary {
                            self.client.complete(request, &self.context.cancel).await
                        } else {
                            self.call_model(request, hide_tool_calls).await
                        }
                    };
                    let result = self.guard(call.instrument(span.clone())).await;
                    let elapsed = started.elapsed();
                    if let Ok(outcome) = &result {
                        telemetry::record_chat(
                            &span,
                            &metrics,
                            self.client.provider(),
                            model,
                            outcome.as_ref(),
                            elapsed,
                            self.capture_content,
                            request,
                        );
                    }
                    match result {
                        Ok(Ok(mut response)) => {
                            metrics.record_cost(state.price_of(&response.usage));
                            self.guardrails.after_model(&mut response).await;
                            state.on_model_response(response, elapsed)
                        }
                        Ok(Err(error)) => state.on_model_error(error),
                        Err(interrupted) => {
                            state.interrupt(interrupted.cause, interrupted.detail);
                            Ok(())
                        }
                    }
                }
                Step::AwaitApproval(_) if !screened.before_approval => {
                    // The user is asked about calls the guardrails let through, as they rewrote them.
                    screened.before_approval = true;
                    self.guardrails.screen_calls(state).await;
                    self.release(state, &mut held);
                    Ok(())
                }
                Step::AwaitApproval(calls) => {
                    // Nobody to ask: the run stops here, waiting; its saved
                    // state is decided and resumed later.
                    let Some(approver) = self.context.approver.clone() else {
                        break;
                    };
                    let calls = calls.to_vec();
                    let decide = async {
                        let mut decisions = Vec::with_capacity(calls.len());
                        for call in &calls {
                            decisions.push(approver.decide(call).await);
                        }
                        decisions
                    };
                    match self.guard(decide).await {
                        Ok(decisions) => {
                            for (call, decision) in calls.iter().zip(decisions) {
                                if let Err(error) = state.decide(&call.id, decision) {
                                    tracing::warn!(%error, "an approval decision was not taken");
                                }
                            }
                        }
                        Err(interrupted) => state.interrupt(interrupted.cause, interrupted.detail),
                    }
                    Ok(())
                }
                Step::RunTools(_) if !screened.before_running => {
                    // Checked again after an approval: an approver's edit is checked too.
                    screened.before_running = true;
                    self.guardrails.screen_calls(state).await;
                    if !state.is_finished() {
                        self.guardrails.before_tools(state).await;
                    }
                    self.release(state, &mut held);
                    Ok(())
                }
                Step::RunTools(calls) => {
                    screened = Screened::skipped_if(self.guardrails.is_empty());
                    // The driver's references to the calls (the state keeps
                    // its own while outcomes are reported), let go before the
                    // results are recorded.
                    let calls = calls.to_vec();
                    let outcomes = self.guard(self.run_tools(&calls, state)).await;
                    drop(calls);
                    let tripped = self.tripped.lock().unwrap_or_else(PoisonError::into_inner).take();
                    match (outcomes, tripped) {
                        (Ok(Ok(())), Some(trip)) => {
                            state.trip_guardrail(trip);
                            Ok(())
                        }
                        // Every outcome is in the state already.
                        (Ok(ran), _) => ran.and_then(|()| state.on_tool_results(&[])),
                        (Err(interrupted), _) => {
                            state.interrupt(interrupted.cause, interrupted.detail);
                            Ok(())
                        }
                    }
                }
            };
            if let Err(error) = outcome {
                state.interrupt(RunEnd::Error, error.to_string());
            }
            self.forward(state, &mut held);
            self.save(state).await;
        }
        self.guardrails.screen_answer(state).await;
        if self.guardrails.holds_answers() && !state.answer().is_empty() {
            // The answer was held back while it streamed: it goes out once checked.
            self.emit(AgentEvent::TextDelta {
                text: state.answer().to_owned(),
            });
        }
    }

    /// Saves `state` where the run is saved, unless it is over (the caller
    /// stores the result). A failed save is logged: the run goes on.
    async fn save(&self, state: &RunState) {
        let Some(checkpoints) = self.checkpoints else { return };
        if state.is_finished() {
            return;
        }
        if let Err(error) = checkpoints.save(state).await {
            tracing::warn!(%error, "the run's state could not be saved; it can only be resumed from an earlier step");
        }
    }

    /// Sends on the events `state` produced, but the requested calls
    /// `held` keeps until the guardrails checked them.
    fn forward(&self, state: &mut RunState, held: &mut HeldCalls) {
        if let Some(events) = self.events {
            for event in state.drain_events().filter_map(|event| held.pass(event)) {
                let _ = events.send(event);
            }
        }
    }

    /// Sends on the events `held` kept, now that the calls were checked.
    fn release(&self, state: &RunState, held: &mut HeldCalls) {
        for event in held.release(state) {
            self.emit(event);
        }
    }

    /// Runs `future` unless the run is cancelled or its deadline passes
    /// first (a deadline already passed, as a resumed run's may have, stops
    /// it before it starts).
    async fn guard<F: Future>(&self, future: F) -> Result<F::Output, Interrupted> {
        let passed = || {
            // Dropping the future is not enough: blocking work (a local
            // model's job, a SQL thread) holds the token and stops on it.
            self.context.cancel.cancel();
            Interrupted {
                cause: RunEnd::BudgetExceeded,
                detail: "the run's deadline passed".to_owned(),
            }
        };
        if self.deadline.is_some_and(|deadline| deadline <= Instant::now()) {
            return Err(passed());
        }
        let deadline = async {
            match self.deadline {
                Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = self.context.cancel.cancelled() => Err(Interrupted {
                cause: RunEnd::Cancelled,
                detail: "the run was cancelled".to_owned(),
            }),
            () = deadline => Err(passed()),
            output = future => Ok(output),
        }
    }

    /// Calls the model; when events are watched (and replies streamed),
    /// streams it and forwards the text and the provider's progress as they
    /// arrive (progress thinned out by [`ProgressThrottle`]).
    /// `hide_tool_calls` (the text protocol) keeps `<tool_call>` blocks out
    /// of the forwarded text, and the reply is always streamed and read only
    /// until its calls reach the request's `max_tool_calls` or one repeats
    /// ([`CallCutoff`]): the model is not left writing calls the loop
    /// would drop.
    async fn call_model(&self, request: &ChatRequest, hide_tool_calls: bool) -> Result<ChatResponse, LlmError> {
        let cancel = &self.context.cancel;
        let events = self.events.filter(|_| self.stream_replies);
        if events.is_none() && !hide_tool_calls {
            return self.client.complete(request, cancel).await;
        }
        let send = |event: AgentEvent| {
            if let Some(events) = events {
                let _ = events.send(event);
            }
        };
        let mut stream = self.client.stream(request, cancel).await?;
        let mut accumulator = StreamAccumulator::new();
        let mut filter = hide_tool_calls.then(StreamingToolCallFilter::new);
        let mut cutoff = CallCutoff::new(request.max_tool_calls);
        let mut throttle = ProgressThrottle::default();
        let mut repeated = false;
        // With output guardrails the text of a reply is held until the reply
        // ends: a final answer goes out once checked (`drive_steps`), the
        // text before tool calls at once.
        let mut held = self.guardrails.holds_answers().then(String::new);
        let mut send_text = |text: String| match &mut held {
            Some(held) => held.push_str(&text),
            None => send(AgentEvent::TextDelta { text }),
        };
        while let Some(event) = stream.next().await {
            let event = event?;
            let mut cut = None;
            match &event {
                StreamEvent::TextDelta { text } => {
                    let visible = match &mut filter {
                        Some(filter) => {
                            let visible = filter.push(text);
                            cut = cutoff.check(filter.completed_calls());
                            visible
                        }
                        None => text.clone(),
                    };
                    if !visible.is_empty() {
                        send_text(visible);
                    }
                }
                StreamEvent::Progress { progress } if events.is_some() && throttle.admit(progress) => {
                    send(AgentEvent::ModelProgress { progress: *progress });
                }
                _ => {}
            }
            accumulator.push(event)?;
            if let Some(cut) = cut {
                tracing::debug!(?cut, "the reply's calls are complete; the rest is not read");
                repeated = cut == Cut::RepeatedCall;
                accumulator.push(StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                })?;
                break;
            }
        }
        if let Some(rest) = filter.map(|mut filter| filter.finish().text)
            && !rest.is_empty()
        {
            send_text(rest);
        }
        let mut response = accumulator.finish()?;
        let calls_tools = !response.message.tool_calls.is_empty()
            || hide_tool_calls && response.message.content.contains(agent_parse::OPEN_TAG);
        if let Some(text) = held.filter(|text| calls_tools && !text.is_empty()) {
            send(AgentEvent::TextDelta { text });
        }
        if repeated {
            // The repeated block is the reply's last: the reply ends before it.
            let content = &mut response.message.content;
            if let Some(start) = content.rfind(agent_parse::OPEN_TAG) {
                content.truncate(start);
                content.truncate(content.trim_end().len());
            }
        }
        Ok(response)
    }

    /// Runs the calls that have no outcome in `state` yet, at most
    /// `max_concurrent_tools` at a time, handing each outcome to `state` (and
    /// saving it) as soon as it finishes. The state then holds every
    /// outcome: the batch is reported with `on_tool_results(&[])`.
    async fn run_tools(&self, calls: &[Arc<ToolCall>], state: &mut RunState) -> Result<(), StepError> {
        // One call (the usual reply) is simply awaited: no set of futures.
        if let [call] = calls
            && state.finished_tool_outcome(0).is_none()
        {
            let outcome = self.run_tool(call).await;
            state.on_tool_outcome(0, outcome)?;
            self.save(state).await;
            return Ok(());
        }
        let pending: Vec<usize> = (0..calls.len())
            .filter(|index| state.finished_tool_outcome(*index).is_none())
            .collect();
        let mut pending = pending.into_iter();
        // Written as a plain loop (not `stream::iter(..).buffer_unordered(..)`)
        // so the future stays `Send` without higher-ranked closure bounds.
        let limit = self.max_concurrent_tools.max(1);
        let mut running = FuturesUnordered::new();
        for index in pending.by_ref().take(limit) {
            running.push(self.run_indexed(index, &calls[index]));
        }
        while let Some((index, outcome)) = running.next().await {
            state.on_tool_outcome(index, outcome)?;
            self.save(state).await;
            if self.has_tripped() {
                // A blocked result ends the run: the calls still running stop.
                return Ok(());
            }
            if let Some(next) = pending.next() {
                running.push(self.run_indexed(next, &calls[next]));
            }
        }
        Ok(())
    }

    async fn run_indexed(&self, index: usize, call: &ToolCall) -> (usize, ToolOutcome) {
        (index, self.run_tool(call).await)
    }

    async fn run_tool(&self, call: &ToolCall) -> ToolOutcome {
        if self.events.is_some() {
            self.emit(AgentEvent::ToolStarted {
                call_id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        let (mut outcome, attributes) = self.execute_tool(call).await;
        if let Some(trip) = self.guardrails.screen_result(call, &mut outcome).await {
            let mut tripped = self.tripped.lock().unwrap_or_else(PoisonError::into_inner);
            tripped.get_or_insert(trip);
        }
        if self.events.is_some() {
            self.emit(AgentEvent::ToolCompleted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                result: outcome.content.clone(),
                is_error: outcome.is_error,
                duration_ms: millis(outcome.duration),
                attributes,
            });
        }
        outcome
    }

    /// Whether a tool-result guardrail tripped in the batch running.
    fn has_tripped(&self) -> bool {
        self.tripped.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Runs `call` (or answers it from the cache): its outcome and the
    /// attributes of its completion event.
    async fn execute_tool(&self, call: &ToolCall) -> (ToolOutcome, Map<String, Value>) {
        let cached = self.registry.cache_policy(&call.name).map(|policy| {
            let scope = self
                .cache_scope
                .get_or_init(|| crate::cache::caller_scope(self.context));
            (policy, cache_key(scope, call))
        });
        if let Some(content) = cached.as_ref().and_then(|(_, key)| self.cache().get(key)) {
            return Self::answer_from_cache(call, content);
        }
        let started = Instant::now();
        let mut context = self.context.clone().with_call_id(call.id.clone());
        // A fresh sink per call: what this call's tool reports, and only that.
        let usage_sink = agent_core::UsageSink::new();
        context.usage_sink = Some(usage_sink.clone());
        let execution = AssertUnwindSafe(self.registry.execute(&call.name, &call.arguments, &context))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| ToolExecution {
                outcome: Err(ToolError::Panicked {
                    tool: call.name.clone(),
                    message: panic_message(panic.as_ref()),
                }),
                duration: started.elapsed(),
                provider: None,
                attributes: Vec::new(),
            });
        let (content, attachments, is_error) = match execution.outcome {
            Ok(output) => {
                let (text, attachments) = output.into_parts();
                (text, attachments, false)
            }
            Err(error) => (error.to_string(), Vec::new(), true),
        };
        let duration = if execution.duration.is_zero() {
            started.elapsed()
        } else {
            execution.duration
        };
        // The cache keeps text: a result with media is not cached (it would
        // come back without them).
        if let (Some((policy, key)), false, true) = (cached, is_error, attachments.is_empty()) {
            self.cache().insert(key, content.clone(), policy.ttl);
        }
        let outcome = ToolOutcome {
            content,
            is_error,
            duration,
            cached: false,
            delegated_usage: usage_sink.total(),
            attachments,
        };
        (outcome, execution.attributes.into_iter().collect())
    }

    /// The outcome of a call answered from the cache: the tool does not run.
    /// Its completion event has the usual shape, a duration of 0 and the
    /// attribute `agentry.cached` = true.
    fn answer_from_cache(call: &ToolCall, content: String) -> (ToolOutcome, Map<String, Value>) {
        tracing::debug!(
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.id,
            "tool result served from the cache"
        );
        let mut attributes = Map::new();
        attributes.insert("agentry.cached".to_owned(), Value::Bool(true));
        let outcome = ToolOutcome {
            content,
            is_error: false,
            duration: Duration::ZERO,
            cached: true,
            delegated_usage: None,
            attachments: Vec::new(),
        };
        (outcome, attributes)
    }

    /// The cache of idempotent tools' results: the agent's, or the run's own.
    fn cache(&self) -> &ToolResultCache {
        match &self.shared_cache {
            Some(cache) => cache,
            None => self.own_cache.get_or_init(ToolResultCache::default),
        }
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(events) = self.events {
            let _ = events.send(event);
        }
    }
}

/// Which progress events of one model request go on to the run's events:
/// every prompt step (a few per request), the first writing step and then
/// at most one per [`WRITING_INTERVAL_MS`](Self::WRITING_INTERVAL_MS) of
/// generation, so that a display keeps up without an event per token.
/// Judged by the events' own clock: nothing is read or allocated per token.
#[derive(Debug, Default)]
pub(crate) struct ProgressThrottle {
    /// `elapsed_ms` of the last writing step let through.
    last_writing_ms: Option<u64>,
}

impl ProgressThrottle {
    /// The least generation time between two writing steps let through.
    pub(crate) const WRITING_INTERVAL_MS: u64 = 100;

    /// Whether `progress` goes on.
    pub(crate) fn admit(&mut self, progress: &ModelProgress) -> bool {
        let ModelProgress::Writing { elapsed_ms, .. } = *progress else {
            return true;
        };
        let due = self
            .last_writing_ms
            .is_none_or(|last| elapsed_ms.checked_sub(last) >= Some(Self::WRITING_INTERVAL_MS));
        if due {
            self.last_writing_ms = Some(elapsed_ms);
        }
        due
    }
}

/// The instant of the wall-clock `deadline`: now when it has passed.
pub(crate) fn deadline_instant(deadline: SystemTime) -> Instant {
    let now = Instant::now();
    let left = deadline.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO);
    now.checked_add(left)
        .unwrap_or(now + Duration::from_secs(365 * 24 * 3600))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "the tool panicked".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use agent_core::ModelProgress;

    use super::ProgressThrottle;

    fn writing(tokens: u64, elapsed_ms: u64) -> ModelProgress {
        ModelProgress::Writing { tokens, elapsed_ms }
    }

    #[test]
    fn every_prompt_step_passes_and_writing_passes_once_per_interval() {
        let mut throttle = ProgressThrottle::default();
        for done in [0, 512, 1024, 2045] {
            assert!(throttle.admit(&ModelProgress::ReadingPrompt { done, total: 2045 }));
        }
        // One token every 10 ms: the first, then one in ten.
        let admitted: Vec<u64> = (1..=35)
            .filter(|tokens| throttle.admit(&writing(*tokens, (tokens - 1) * 10)))
            .collect();
        assert_eq!(admitted, [1, 11, 21, 31]);
        // Prompt steps are never held back, even between writing steps.
        assert!(throttle.admit(&ModelProgress::ReadingPrompt { done: 1, total: 1 }));
        assert!(!throttle.admit(&writing(36, 305)));
    }

    #[test]
    fn a_slow_model_has_every_token_shown_and_odd_clocks_do_not_panic() {
        let mut throttle = ProgressThrottle::default();
        assert!((1..=5).all(|tokens| throttle.admit(&writing(tokens, tokens * 250))));
        // A clock that goes back, or jumps to the end, is taken as it comes.
        assert!(!throttle.admit(&writing(6, 10)));
        assert!(throttle.admit(&writing(7, u64::MAX)));
        assert!(!throttle.admit(&writing(8, u64::MAX)));
    }
}
