//! The driver's side of guardrails and hooks: running them at each place
//! and handing what they decided to the state.

use agent_core::{ChatRequest, ChatResponse, GuardrailStage, GuardrailTrip, ToolCall};
use serde_json::Value;

use super::{Checked, Guardrails, Verdict};
use crate::prompts;
use crate::state::RunState;
use crate::step::ToolOutcome;

impl Guardrails {
    /// The guardrails of `stage` on `text`, in order: `Ok(None)` when it
    /// goes on unchanged, `Ok(Some(text))` rewritten, `Err` when one tripped.
    async fn screen_text(
        &self,
        stage: GuardrailStage,
        text: &str,
        call: Option<&ToolCall>,
    ) -> Result<Option<String>, GuardrailTrip> {
        let mut rewritten: Option<String> = None;
        for guardrail in self.stage(stage) {
            let current = rewritten.as_deref().unwrap_or(text);
            match guardrail.check_text(current, Checked { stage, call }).await {
                Verdict::Pass => {}
                Verdict::Rewrite(text) => rewritten = Some(text),
                Verdict::Trip { reason } => {
                    return Err(GuardrailTrip {
                        name: guardrail.name().to_owned(),
                        stage,
                        reason,
                        call_id: call.map(|call| call.id.clone()),
                    });
                }
            }
        }
        Ok(rewritten)
    }

    /// The tool-call guardrails on `call`'s arguments, as [`screen_text`](Self::screen_text).
    async fn screen_arguments(&self, call: &ToolCall) -> Result<Option<Value>, GuardrailTrip> {
        let mut current = call.clone();
        let mut changed = false;
        for guardrail in &self.tool_calls {
            match guardrail.check_arguments(&current).await {
                Verdict::Pass => {}
                Verdict::Rewrite(arguments) => {
                    current.arguments = arguments;
                    changed = true;
                }
                Verdict::Trip { reason } => {
                    return Err(GuardrailTrip {
                        name: guardrail.name().to_owned(),
                        stage: GuardrailStage::ToolCall,
                        reason,
                        call_id: Some(call.id.clone()),
                    });
                }
            }
        }
        Ok(changed.then_some(current.arguments))
    }

    /// Checks the user's message of a new run (once): a rewrite replaces
    /// it, a trip ends the run before any model call.
    pub(crate) async fn screen_input(&self, state: &mut RunState) {
        if !state.input_unchecked() {
            return;
        }
        state.mark_input_checked();
        if self.input.is_empty() {
            return;
        }
        let Some(text) = state.user_message().map(str::to_owned) else {
            return;
        };
        match self.screen_text(GuardrailStage::Input, &text, None).await {
            Ok(None) => {}
            Ok(Some(text)) => state.rewrite_user_message(text),
            Err(trip) => state.trip_guardrail(trip),
        }
    }

    /// Checks the arguments of the calls about to run (or to be approved)
    /// that have no outcome yet: rewrites go into the state, the first
    /// trip ends the run.
    pub(crate) async fn screen_calls(&self, state: &mut RunState) {
        if self.tool_calls.is_empty() {
            return;
        }
        for call in state.calls_to_run() {
            match self.screen_arguments(&call).await {
                Ok(None) => {}
                Ok(Some(arguments)) => {
                    state.rewrite_call(&call.id, arguments);
                }
                Err(trip) => {
                    state.trip_guardrail(trip);
                    return;
                }
            }
        }
    }

    /// The `before_tool` hooks on the calls about to run; changed
    /// arguments go into the state.
    pub(crate) async fn before_tools(&self, state: &mut RunState) {
        if self.hooks.is_empty() {
            return;
        }
        for call in state.calls_to_run() {
            let mut changed = call.clone();
            for hook in &self.hooks {
                hook.before_tool(&mut changed).await;
            }
            if changed.arguments != call.arguments {
                state.rewrite_call(&call.id, changed.arguments);
            }
        }
    }

    /// The `after_tool` hooks and the tool-result guardrails on one call's
    /// outcome. A trip replaces the result with a note (the model and the
    /// record never get it) and is returned: the run ends after it.
    pub(crate) async fn screen_result(&self, call: &ToolCall, outcome: &mut ToolOutcome) -> Option<GuardrailTrip> {
        for hook in &self.hooks {
            hook.after_tool(call, outcome).await;
        }
        if self.tool_results.is_empty() {
            return None;
        }
        match self
            .screen_text(GuardrailStage::ToolResult, &outcome.content, Some(call))
            .await
        {
            Ok(None) => None,
            Ok(Some(content)) => {
                outcome.content = content;
                None
            }
            Err(trip) => {
                outcome.content = prompts::withheld_result(&trip.name);
                outcome.is_error = true;
                Some(trip)
            }
        }
    }

    /// Checks the final answer of a finished run (one a guardrail did not
    /// end, with an answer): a rewrite replaces it, a trip withholds it.
    pub(crate) async fn screen_answer(&self, state: &mut RunState) {
        if self.output.is_empty()
            || !state.is_finished()
            || state.guardrail_trip().is_some()
            || state.answer().trim().is_empty()
        {
            return;
        }
        let answer = state.answer().to_owned();
        match self.screen_text(GuardrailStage::Output, &answer, None).await {
            Ok(None) => {}
            Ok(Some(text)) => state.rewrite_answer(text),
            Err(trip) => state.trip_guardrail(trip),
        }
    }

    /// The request a model call sends after the `before_model` hooks:
    /// `None` when there are none (the state's request goes as it is).
    pub(crate) async fn before_model(&self, request: &ChatRequest) -> Option<ChatRequest> {
        if self.hooks.is_empty() {
            return None;
        }
        let mut request = request.clone();
        for hook in &self.hooks {
            hook.before_model(&mut request).await;
        }
        Some(request)
    }

    /// The `after_model` hooks on a reply.
    pub(crate) async fn after_model(&self, response: &mut ChatResponse) {
        for hook in &self.hooks {
            hook.after_model(response).await;
        }
    }
}
