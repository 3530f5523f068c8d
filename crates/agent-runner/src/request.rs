//! [`RunRequest`]: the one way to run an agent. `agent.run(prompt)` (or
//! `agent.resume(state)`) describes the run; awaiting it runs it to the
//! end, [`stream`](RunRequest::stream) runs it as events.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use agent_core::{
    AgentEvent, AgentRunResult, Attachment, CancellationToken, ConversationStore, Message, RunEnd, StoreError,
    ToolContext,
};
use futures::{Stream, StreamExt};

use crate::agent::{Agent, RunError};
use crate::state::RunState;
use crate::stored::{StoreCheckpoints, store_turn};
use crate::{RunCheckpoints, RunConfig};

/// A conversation kept in a [`ConversationStore`] that a run continues:
/// its messages are the run's history, the run's state is saved there
/// after every step (so a crash can be resumed), and its turn is appended
/// when it ends.
#[derive(Clone)]
pub struct Session {
    store: Arc<dyn ConversationStore>,
    name: String,
}

impl Session {
    /// The conversation `name` of `store` (made on first use).
    pub fn new(store: Arc<dyn ConversationStore>, name: impl Into<String>) -> Self {
        Self {
            store,
            name: name.into(),
        }
    }

    /// The conversation's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A run ready to drive: the agent, its state, context and checkpoints,
/// and whether replies are streamed.
type Prepared = (Agent, RunState, ToolContext, Option<Arc<dyn RunCheckpoints>>, bool);

/// Where a run starts.
#[derive(Debug)]
enum Start {
    /// A new turn: `prompt` (and its attachments) after `history`.
    Prompt {
        history: Vec<Message>,
        prompt: String,
        attachments: Vec<Attachment>,
    },
    /// A saved or hand-stepped state, driven on.
    State(Box<RunState>),
}

/// One run of an [`Agent`], described before it starts: made by
/// [`Agent::run`] or [`Agent::resume`], configured by chaining, started by
/// awaiting it (the whole run, its [`AgentRunResult`]) or by
/// [`stream`](Self::stream) (its [`AgentEvent`]s as they happen).
///
/// ```
/// use agent_runner::Agent;
/// use agent_testing::{ScriptedClient, response};
/// use futures::StreamExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = ScriptedClient::new()
///     .respond(response::text("Hello!"))
///     .respond(response::text("You said hello."));
/// let agent = Agent::builder(client).build();
///
/// let first = agent.run("Hello").await?;
/// assert_eq!(first.response, "Hello!");
///
/// // The next turn continues the conversation, as events.
/// let mut events = agent.run("What did I say?").history(first.messages).stream();
/// let mut answer = None;
/// while let Some(event) = events.next().await {
///     if let agent_core::AgentEvent::RunFinished { result } = event {
///         answer = Some(result.response);
///     }
/// }
/// assert_eq!(answer.as_deref(), Some("You said hello."));
/// # Ok(())
/// # }
/// ```
#[must_use = "a run request does nothing until it is awaited or streamed"]
pub struct RunRequest {
    agent: Agent,
    start: Start,
    /// The caller's context; a fresh one when none is given (made only then).
    context: Option<ToolContext>,
    config: Option<RunConfig>,
    session: Option<Session>,
    checkpoints: Option<Arc<dyn RunCheckpoints>>,
    stream_replies: bool,
    /// The run's id and conversation, when the caller names them.
    run_id: Option<String>,
    conversation_id: Option<String>,
}

impl std::fmt::Debug for RunRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRequest")
            .field("agent", &self.agent.name())
            .field("start", &self.start)
            .field("context", &self.context)
            .field("options", &self.config)
            .field("session", &self.session)
            .field("checkpoints", &self.checkpoints.as_ref().map(|_| "set"))
            .field("stream_replies", &self.stream_replies)
            .field("run_id", &self.run_id)
            .field("conversation_id", &self.conversation_id)
            .finish()
    }
}

impl RunRequest {
    pub(crate) fn prompt(agent: &Agent, prompt: String) -> Self {
        Self::new(
            agent,
            Start::Prompt {
                history: Vec::new(),
                prompt,
                attachments: Vec::new(),
            },
        )
    }

    pub(crate) fn state(agent: &Agent, state: RunState) -> Self {
        Self::new(agent, Start::State(Box::new(state)))
    }

    fn new(agent: &Agent, start: Start) -> Self {
        Self {
            agent: agent.clone(),
            start,
            context: None,
            config: None,
            session: None,
            checkpoints: None,
            stream_replies: true,
            run_id: None,
            conversation_id: None,
        }
    }

    /// The conversation so far (a previous result's
    /// [`messages`](AgentRunResult::messages)) that the prompt follows.
    /// A resumed state holds its own conversation: this is ignored for it.
    pub fn history(mut self, messages: Vec<Message>) -> Self {
        if let Start::Prompt { history, .. } = &mut self.start {
            *history = messages;
        }
        self
    }

    /// Who is asking: user, roles, attributes, approver (default: an
    /// anonymous caller). Its cancellation token is the run's, unless
    /// [`cancel_token`](Self::cancel_token) comes after it.
    pub fn context(mut self, context: ToolContext) -> Self {
        self.context = Some(context);
        self
    }

    /// Cancels the run when `token` fires: a cancelled run is a result with
    /// [`RunEnd::Cancelled`], keeping what it did.
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.context.get_or_insert_with(ToolContext::default).cancel = token;
        self
    }

    /// This run's policies instead of the agent's (iterations, budget,
    /// deadline, context, ...). A resumed state keeps the policies it was
    /// saved with: this applies to a new prompt.
    pub fn options(mut self, config: RunConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Continues the stored conversation of `session`: its messages are the
    /// history (instead of [`history`](Self::history)), the run is
    /// checkpointed there after every step, and its turn is appended when
    /// it ends, as [`store_turn`] does. A store failure is a [`RunError`]
    /// with [`store_error`](RunError::store_error) set.
    pub fn session(mut self, session: Session) -> Self {
        self.session = Some(session);
        self
    }

    /// Sends these images, documents or recordings with the prompt (after
    /// its text). Ignored for a run that goes on from a saved state.
    pub fn attach(mut self, attachments: impl IntoIterator<Item = Attachment>) -> Self {
        if let Start::Prompt { attachments: own, .. } = &mut self.start {
            own.extend(attachments);
        }
        self
    }

    /// Gives the run this id (a server's id for it) instead of a new one:
    /// its spans carry it as `agentry.run.id`.
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Names the conversation the run is a turn of: its spans carry it as
    /// `gen_ai.conversation.id`. A [`session`](Self::session)'s name is the
    /// default.
    pub fn conversation_id(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// Saves the run's state with `checkpoints` after every step and every
    /// finished tool call (a [`session`](Self::session) does this by
    /// itself, in its store).
    pub fn checkpoints(mut self, checkpoints: Arc<dyn RunCheckpoints>) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// Asks the model for whole replies instead of streamed ones when the
    /// run is [streamed](Self::stream): the events report each step, but no
    /// [`AgentEvent::TextDelta`] or [`AgentEvent::ModelProgress`] comes.
    pub fn whole_replies(mut self) -> Self {
        self.stream_replies = false;
        self
    }

    /// Runs it as a stream of [`AgentEvent`]s, the model's text arriving as
    /// it is generated, ending with [`AgentEvent::RunFinished`]. Dropping
    /// the stream cancels the run.
    pub fn stream(self) -> impl Stream<Item = AgentEvent> + Send + Unpin + 'static {
        let Some(session) = self.session.clone() else {
            let (agent, state, context, checkpoints, stream_replies) = self.prepared(None);
            return agent.spawn_watched(state, context, checkpoints, stream_replies).boxed();
        };
        // Loading the history and storing the turn wrap the run's events.
        futures::stream::once(async move { self.stream_in(session).await })
            .flatten()
            .boxed()
    }

    async fn stream_in(self, session: Session) -> futures::stream::BoxStream<'static, AgentEvent> {
        let (started, continued, provider) = match self.start_session(&session).await {
            Ok(started) => started,
            Err(failed) => {
                let events = [
                    AgentEvent::Error {
                        message: failed.to_string(),
                    },
                    AgentEvent::RunFinished { result: failed.result },
                ];
                return futures::stream::iter(events).boxed();
            }
        };
        let (agent, state, context, checkpoints, stream_replies) = started;
        let events = agent.spawn_watched(state, context, checkpoints, stream_replies);
        events
            .then(move |event| {
                let session = session.clone();
                let provider = provider.clone();
                async move {
                    let AgentEvent::RunFinished { result } = &event else {
                        return vec![event];
                    };
                    match store_turn(session.store.as_ref(), &session.name, &provider, continued, result).await {
                        Ok(_) => vec![event],
                        Err(error) => vec![
                            AgentEvent::Error {
                                message: stored_failure(&session, &error),
                            },
                            event,
                        ],
                    }
                }
            })
            .flat_map(futures::stream::iter)
            .boxed()
    }

    /// The run's state, context and checkpoints, the session's history and
    /// checkpoints in place when there is one.
    fn prepared(self, session: Option<(&Session, Vec<Message>)>) -> Prepared {
        let (session, stored) = session.unzip();
        let mut checkpoints = self.checkpoints;
        if checkpoints.is_none()
            && let Some(session) = session
        {
            checkpoints = Some(Arc::new(StoreCheckpoints::new(
                session.store.clone(),
                session.name.clone(),
            )));
        }
        let mut state = match self.start {
            Start::Prompt {
                history,
                prompt,
                attachments,
            } => self.agent.start_with(
                stored.unwrap_or(history),
                Message::user_with(prompt, attachments),
                self.config,
            ),
            Start::State(state) => *state,
        };
        if let Some(id) = self.run_id {
            state = state.with_run_id(id);
        }
        let conversation = self
            .conversation_id
            .or_else(|| session.map(|session| session.name.clone()));
        if let Some(id) = conversation {
            state = state.with_conversation_id(id);
        }
        let context = self.context.unwrap_or_default();
        (self.agent, state, context, checkpoints, self.stream_replies)
    }

    /// The session's history loaded and the run prepared on it, with how
    /// many stored messages the run continues and the provider its turn is
    /// stored under; the failed run when the session cannot be loaded.
    async fn start_session(self, session: &Session) -> Result<(Prepared, usize, String), RunError> {
        let history = match session.store.load_or_create(&session.name).await {
            Ok(conversation) => conversation.messages,
            Err(error) => return Err(self.failed_to_load(session, &error)),
        };
        let loaded = history.len();
        let provider = self.agent.client().provider().to_owned();
        let prepared = self.prepared(Some((session, history)));
        let continued = prepared.1.continued_messages().unwrap_or(loaded);
        Ok((prepared, continued, provider))
    }

    /// The failed run of a session that could not be loaded.
    fn failed_to_load(&self, session: &Session, error: &StoreError) -> RunError {
        let mut state = match &self.start {
            Start::Prompt {
                prompt, attachments, ..
            } => self.agent.start_with(
                Vec::new(),
                Message::user_with(prompt.clone(), attachments.clone()),
                self.config.clone(),
            ),
            Start::State(state) => (**state).clone(),
        };
        state.interrupt(
            RunEnd::Error,
            format!("the session `{}` could not be loaded: {error}", session.name),
        );
        RunError {
            result: Box::new(state.into_result()),
            source_error: None,
            store_error: Some(Box::new(error.clone())),
        }
    }

    async fn run_to_end(self) -> Result<AgentRunResult, RunError> {
        let Some(session) = self.session.clone() else {
            let (agent, state, context, checkpoints, _) = self.prepared(None);
            return agent.drive_to_end(state, context, checkpoints).await;
        };
        let ((agent, state, context, checkpoints, _), continued, provider) = self.start_session(&session).await?;
        let outcome = agent.drive_to_end(state, context, checkpoints).await;
        let result = match &outcome {
            Ok(result) => result,
            Err(error) => &error.result,
        };
        match store_turn(session.store.as_ref(), &session.name, &provider, continued, result).await {
            Ok(_) => outcome,
            Err(error) => {
                let (result, source_error) = match outcome {
                    Ok(result) => (Box::new(result), None),
                    Err(failed) => (failed.result, failed.source_error),
                };
                Err(RunError {
                    result,
                    source_error,
                    store_error: Some(Box::new(error)),
                })
            }
        }
    }
}

fn stored_failure(session: &Session, error: &StoreError) -> String {
    format!(
        "the turn could not be stored in the session `{}`: {error}",
        session.name
    )
}

impl IntoFuture for RunRequest {
    type Output = Result<AgentRunResult, RunError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    /// Runs it to the end. A cancelled run or one that hit a limit is a
    /// successful result with the matching [`RunEnd`]; a failed one is
    /// a [`RunError`] that keeps the partial record.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run_to_end())
    }
}
