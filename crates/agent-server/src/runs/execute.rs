//! Every run of the server, whatever the endpoint, starts here: it is
//! registered, runs in a task of its own (so it can outlive the request that
//! started it, be followed by id and be cancelled at shutdown), keeps its
//! events for its followers and, when it continues a session, saves its
//! state in the store after every step and appends its turn at the end.
//! A run that pauses for the user's approval keeps what it needs to go on
//! (see [`super::approvals`]); [`Shared::go_on`] drives it on once decided.

use std::pin::Pin;
use std::sync::Arc;

use agent_core::{AgentEvent, AgentRunResult, CancellationToken, Message, RunEnd, ToolCall, ToolContext, Usage};
use agent_runner::{RunCheckpoints, RunState, SavedRun, StoreCheckpoints, store_turn};
use futures::{Stream, StreamExt};

use super::RunOptions;
use super::approvals::{Continuation, Decisions, HeldState, decide_all};
use super::registry::{RunEntry, RunOutcome};
use crate::error::ApiError;
use crate::sessions::SessionRef;
use crate::state::{Caller, RunSlot, Shared};

/// How a run starts.
pub(crate) enum RunStart {
    /// A prompt continuing a history the request brought (none for a new
    /// conversation).
    History {
        /// The user's message: its text and attachments.
        prompt: Message,
        history: Vec<Message>,
        options: RunOptions,
        /// Whether a pause for approval keeps the run's state, so that it
        /// can be decided (runs of the runs API; a chat completion's run
        /// cannot be decided).
        keep_paused: bool,
    },
    /// A prompt continuing a session of the caller.
    Session {
        /// The user's message: its text and attachments.
        prompt: Message,
        session: SessionRef,
        options: RunOptions,
    },
    /// The run of a session that did not end (its instance stopped or
    /// crashed), from the state it saved after its last step.
    Interrupted { session: SessionRef },
    /// A run of the registry that paused for approval, going on with the
    /// user's decisions.
    Approved {
        continuation: Continuation,
        decisions: Decisions,
    },
}

impl RunStart {
    fn session(&self) -> Option<&SessionRef> {
        match self {
            Self::History { .. }
            | Self::Approved {
                continuation: Continuation::Held(_),
                ..
            } => None,
            Self::Session { session, .. }
            | Self::Interrupted { session }
            | Self::Approved {
                continuation: Continuation::Saved(session),
                ..
            } => Some(session),
        }
    }
}

impl Shared {
    /// Starts a run for `caller`.
    ///
    /// # Errors
    ///
    /// [`ApiError::ShuttingDown`] once the server stops taking runs;
    /// [`ApiError::TooManyRuns`] when the caller has as many in flight as it
    /// may.
    pub(crate) fn launch(self: &Arc<Self>, caller: Caller, start: RunStart) -> Result<Arc<RunEntry>, ApiError> {
        if !self.is_ready() {
            return Err(ApiError::ShuttingDown);
        }
        let slot = self.run_slot(caller)?;
        let session = start.session().map(|session| session.id.clone());
        let entry = self.runs.insert(caller.0, session, CancellationToken::new());
        let context = run_context(caller, &entry);
        tokio::spawn(execute(Arc::clone(self), Arc::clone(&entry), start, context, slot));
        Ok(entry)
    }

    /// Lets the paused run `entry` of `caller` go on with the decisions
    /// `decide` makes of the calls it waits for (checked and taken at once,
    /// so that two requests cannot both decide it).
    ///
    /// # Errors
    ///
    /// As [`launch`](Self::launch); [`ApiError::Conflict`] when the run does
    /// not wait for approval, [`ApiError::NotFound`] when it was forgotten,
    /// and `decide`'s error. The run is unchanged then.
    pub(crate) fn go_on(
        self: &Arc<Self>,
        caller: Caller,
        entry: &Arc<RunEntry>,
        decide: impl FnOnce(&[ToolCall]) -> Result<Decisions, ApiError>,
    ) -> Result<(), ApiError> {
        if !self.is_ready() {
            return Err(ApiError::ShuttingDown);
        }
        let slot = self.run_slot(caller)?;
        let (continuation, decisions) = self.runs.resume(entry, decide)?;
        let start = RunStart::Approved {
            continuation,
            decisions,
        };
        let context = run_context(caller, entry);
        tokio::spawn(execute(Arc::clone(self), Arc::clone(entry), start, context, slot));
        Ok(())
    }
}

/// Who runs `entry`'s tools: the caller's key, with the run's cancellation.
fn run_context(caller: Caller, entry: &RunEntry) -> ToolContext {
    ToolContext {
        user_id: Some(format!("key:{}", caller.0.tag())),
        cancel: entry.cancel.clone(),
        ..ToolContext::new()
    }
}

/// Where a run starts from.
enum First {
    /// A new user message.
    Prompt(Message, RunOptions),
    /// The state an interrupted run saved.
    Saved(Box<RunState>),
}

/// Runs the turn, records its events, stores it, and ends the entry.
async fn execute(shared: Arc<Shared>, entry: Arc<RunEntry>, start: RunStart, context: ToolContext, _slot: RunSlot) {
    let keep_paused = !matches!(start, RunStart::History { keep_paused: false, .. });
    let (first, history, session, _held) = match start {
        RunStart::History {
            prompt,
            history,
            options,
            ..
        } => (First::Prompt(prompt, options), history, None, None),
        RunStart::Session {
            prompt,
            session,
            options,
        } => {
            let held = shared.session_locks.lock(&session.stored).await;
            match load_history(&shared, &session).await {
                Ok(history) => (First::Prompt(prompt, options), history, Some(session), Some(held)),
                Err(message) => return end_failed(&shared, &entry, message),
            }
        }
        RunStart::Interrupted { session } => {
            let held = shared.session_locks.lock(&session.stored).await;
            let resumed = match load_history(&shared, &session).await {
                Ok(history) => saved_state(&shared, &session).await.map(|state| (state, history)),
                Err(message) => Err(message),
            };
            match resumed {
                Ok((state, history)) => (First::Saved(Box::new(state)), history, Some(session), Some(held)),
                Err(message) => return end_failed(&shared, &entry, message),
            }
        }
        RunStart::Approved {
            continuation: Continuation::Held(state),
            decisions,
        } => {
            let mut state = *state;
            if let Err(message) = decide_all(&mut state, decisions) {
                return end_failed(&shared, &entry, message);
            }
            (First::Saved(Box::new(state)), Vec::new(), None, None)
        }
        RunStart::Approved {
            continuation: Continuation::Saved(session),
            decisions,
        } => {
            let held = shared.session_locks.lock(&session.stored).await;
            let decided = match load_history(&shared, &session).await {
                Ok(history) => saved_state(&shared, &session).await.and_then(|mut state| {
                    decide_all(&mut state, decisions)
                        .map(|()| (state, history))
                        .map_err(|error| format!("the paused run of `{}` cannot go on: {error}", session.id))
                }),
                Err(message) => Err(message),
            };
            match decided {
                Ok((state, history)) => (First::Saved(Box::new(state)), history, Some(session), Some(held)),
                Err(message) => return end_failed(&shared, &entry, message),
            }
        }
    };
    let stored = session.as_ref().map(|session| {
        Arc::new(StoreCheckpoints::new(Arc::clone(&shared.store), session.stored.clone())) as Arc<dyn RunCheckpoints>
    });
    // The turn is stored by where it starts: for a saved run, the history it
    // started from (the session may have grown since, on another instance);
    // otherwise the history itself, which goes to the run.
    let continued = match &first {
        First::Saved(state) => state.continued_messages().unwrap_or(history.len()),
        First::Prompt(..) => history.len(),
    };
    // The scene router picks the agent of a prompt; its runs are not
    // checkpointed.
    let scene_run = matches!((&first, &shared.scenes), (First::Prompt(..), Some(_)));
    // A checkpointed run that pauses for approval stays saved in its
    // session, its turn not stored, so that it can be decided and resumed.
    let checkpointed = stored.is_some() && !scene_run;
    // A run without a session that pauses keeps its state in memory, so
    // that it can be decided.
    let paused_state = (session.is_none() && keep_paused && !scene_run).then(|| Arc::new(HeldState::default()));
    let checkpoints = stored.or_else(|| {
        paused_state
            .as_ref()
            .map(|held| Arc::clone(held) as Arc<dyn RunCheckpoints>)
    });
    // The run's spans carry its id here and its session's.
    let ids = (entry.id.as_str(), session.as_ref().map(|session| session.id.as_str()));
    let mut events: Pin<Box<dyn Stream<Item = AgentEvent> + Send>> = match (first, &shared.scenes) {
        // The scene router picks the agent; its runs are not checkpointed.
        (First::Prompt(prompt, _), Some(scenes)) => {
            let (text, attachments) = match prompt {
                Message::User { content, attachments } => (content, attachments),
                _ => (String::new(), Vec::new()),
            };
            Box::pin(scenes.run_stream_attached(history, text, attachments, context))
        }
        (First::Prompt(prompt, options), None) => {
            let state = options.apply(shared.agent.start_message(history, prompt));
            Box::pin(resumed(&shared.agent, state, context, checkpoints, ids).stream())
        }
        (First::Saved(state), _) => Box::pin(resumed(&shared.agent, *state, context, checkpoints, ids).stream()),
    };
    let mut result = None;
    while let Some(event) = events.next().await {
        match event {
            // Kept as the outcome, which followers get last, once the turn
            // is stored: a follower that sees the end finds the session up
            // to date.
            AgentEvent::RunFinished { result: finished } => result = Some(finished),
            // Neither kept nor sent to followers: progress is for a display
            // next to the run (the CLI's). Even thinned out by the runner
            // (about ten a second while a local model writes) it would be a
            // good part of every kept run's log, and a client sees the run
            // go on by its text deltas and tool events anyway.
            AgentEvent::ModelProgress { .. } => {}
            other => entry.push(other),
        }
    }
    let Some(result) = result else {
        let message = "the run ended without a result".to_owned();
        return end_failed(&shared, &entry, message);
    };
    let paused = result.stop_reason == RunEnd::AwaitingApproval;
    let store_error = match &session {
        Some(_) if checkpointed && paused => None,
        Some(session) => store_turn(
            shared.store.as_ref(),
            &session.stored,
            shared.agent.client().provider(),
            continued,
            &result,
        )
        .await
        .err()
        .map(|error| {
            tracing::error!(run = %entry.id, session = %session.id, %error, "the turn could not be stored");
            error.to_string()
        }),
        None => None,
    };
    let continuation = match session {
        _ if !paused => None,
        Some(session) if checkpointed => Some(Continuation::Saved(session)),
        Some(_) => None,
        None => paused_state
            .and_then(|held| held.take_paused())
            .map(|state| Continuation::Held(Box::new(state))),
    };
    shared.runs.end_with(
        &entry,
        RunOutcome {
            result: Arc::from(result),
            store_error,
        },
        continuation,
    );
}

/// The messages of `session` a run continues, or why there are none.
async fn load_history(shared: &Shared, session: &SessionRef) -> Result<Vec<Message>, String> {
    match shared.store.load(&session.stored).await {
        Ok(Some(conversation)) => Ok(conversation.messages),
        Ok(None) => Err(format!(
            "the session `{}` was deleted before the run started",
            session.id
        )),
        Err(error) => Err(format!("the session `{}` could not be loaded: {error}", session.id)),
    }
}

/// The state the interrupted run of `session` saved, held to this server's
/// agent policy of today (approvals, tools, budgets), if this agent can go
/// on with it: a state of another agent, provider or model, or one at odds
/// with itself, is refused.
async fn saved_state(shared: &Shared, session: &SessionRef) -> Result<RunState, String> {
    let saved = match shared.store.checkpoint(&session.stored).await {
        Ok(Some(saved)) => saved,
        Ok(None) => return Err(format!("the session `{}` has no interrupted run", session.id)),
        Err(error) => return Err(format!("the session `{}` could not be read: {error}", session.id)),
    };
    let state = SavedRun::decode(saved).map_err(|error| format!("the interrupted run of `{}` {error}", session.id))?;
    shared
        .agent
        .restore(state)
        .map_err(|error| format!("the interrupted run of `{}` cannot go on here: {error}", session.id))
}

/// Ends `entry` as a failed run that did nothing.
fn end_failed(shared: &Shared, entry: &RunEntry, message: String) {
    let client = shared.agent.client();
    let result = failed_result(message.clone(), client.provider(), client.model());
    entry.push(AgentEvent::Error { message });
    shared.runs.end(
        entry,
        RunOutcome {
            result: Arc::new(result),
            store_error: None,
        },
    );
}

/// The record of a run that failed before the agent ran.
pub(crate) fn failed_result(message: String, provider: &str, model: &str) -> AgentRunResult {
    AgentRunResult {
        response: String::new(),
        stop_reason: RunEnd::Error,
        stop_detail: Some(message),
        iterations: 0,
        tool_calls: Vec::new(),
        model_calls: Vec::new(),
        usage: Usage::default(),
        cost_usd: None,
        provider: provider.to_owned(),
        model: model.to_owned(),
        messages: Vec::new(),
        compactions: Vec::new(),
        pending_approvals: Vec::new(),
        scene: None,
        grounding: None,
        guardrail: None,
    }
}

/// The run of `state` for `context`, checkpointed when `checkpoints` is
/// given, with the server's run id and the session's id (`ids`).
fn resumed(
    agent: &agent_runner::Agent,
    state: agent_runner::RunState,
    context: agent_core::ToolContext,
    checkpoints: Option<std::sync::Arc<dyn agent_runner::RunCheckpoints>>,
    (run_id, session_id): (&str, Option<&str>),
) -> agent_runner::RunRequest {
    let mut request = agent.resume(state).context(context).run_id(run_id);
    if let Some(session_id) = session_id {
        request = request.conversation_id(session_id);
    }
    match checkpoints {
        Some(checkpoints) => request.checkpoints(checkpoints),
        None => request,
    }
}
