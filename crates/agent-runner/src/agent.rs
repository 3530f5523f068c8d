//! The agent: configuration plus the entry points that run the loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_core::{
    AgentEvent, AgentRunResult, ChatRequest, IntoLlmClient, LlmClient, LlmError, Message, ModelCatalog, RegistryError,
    RunEnd, StoreError, ToolChoice, ToolContext, ToolProvider, ToolRegistry,
};
use agent_tools::TypedTool;
use futures::Stream;
use tokio::sync::mpsc;

use crate::assemble::ToolAssembly;
use crate::cache::ToolResultCache;
use crate::config::{AgentConfig, InvalidConfig, ModelSettings};
use crate::driver::{Driver, deadline_instant};
use crate::guardrails::Guardrails;
use crate::request::RunRequest;
use crate::state::RunState;
use crate::step::RunIdentity;
use crate::{Budget, ContextPolicy, Protocol, RunCheckpoints, RunConfig, ToolProtocol, prompts};

/// Stop sequences of a ReAct run, so the model cannot write an Observation.
pub const REACT_STOP_SEQUENCES: &[&str] = &["\nObservation:"];

/// A run that ended in failure. The partial record is kept: nothing of the
/// conversation or of the tool results is lost.
#[derive(Debug, Clone, thiserror::Error)]
pub struct RunError {
    /// Everything the run produced before it failed.
    pub result: Box<AgentRunResult>,
    /// The model error behind the failure, when there was one.
    pub source_error: Option<LlmError>,
    /// The store error of a run's [session](RunRequest::session) that
    /// could not be loaded, or whose turn could not be stored (the run's
    /// record is kept whole either way).
    pub store_error: Option<Box<StoreError>>,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.store_error, self.result.stop_reason) {
            (Some(error), RunEnd::Error) => write!(
                f,
                "agent run failed: {} ({error})",
                self.result.stop_detail.as_deref().unwrap_or("unknown error")
            ),
            (Some(error), _) => write!(f, "the run's turn could not be stored: {error}"),
            (None, _) => write!(
                f,
                "agent run failed: {}",
                self.result.stop_detail.as_deref().unwrap_or("unknown error")
            ),
        }
    }
}

/// Why [`AgentBuilder::try_build`] refused to build.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// A value of the configuration is out of range.
    #[error(transparent)]
    Config(#[from] InvalidConfig),
    /// The tools could not be registered.
    #[error(transparent)]
    Tools(#[from] RegistryError),
}

/// A configured agent: a model client, tools, a system prompt and the loop's
/// policies. Cheap to clone; runs share nothing mutable.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    description: String,
    system_prompt: Option<String>,
    client: Arc<dyn LlmClient>,
    registry: Arc<dyn ToolRegistry>,
    config: AgentConfig,
    catalog: Option<Arc<ModelCatalog>>,
    capture_content: bool,
    forced_answer_instruction: Option<String>,
    tool_cache: Option<ToolResultCache>,
    /// The calibration factor of the context estimate its runs learned
    /// (`f64` bits): a new run starts from it instead of from 1.
    calibration: AtomicU64,
    /// The keys of the client's chat metrics, made once.
    chat_metric_keys: crate::telemetry::ChatMetricKeys,
    /// What checks and changes the run's edges.
    guardrails: Guardrails,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.inner.name)
            .field("provider", &self.inner.client.provider())
            .field("model", &self.inner.client.model())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts configuring an agent that talks to `client`: any
    /// [`LlmClient`] by value, or an `Arc` of one shared with other agents.
    pub fn builder(client: impl IntoLlmClient) -> AgentBuilder {
        AgentBuilder::new(client.into_llm_client())
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The agent's description.
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// The tools it can use.
    pub fn registry(&self) -> &Arc<dyn ToolRegistry> {
        &self.inner.registry
    }

    /// The model client.
    pub fn client(&self) -> &Arc<dyn LlmClient> {
        &self.inner.client
    }

    /// Its guardrails and hooks.
    pub fn guardrails(&self) -> &Guardrails {
        &self.inner.guardrails
    }

    /// The loop's policies.
    pub fn config(&self) -> &RunConfig {
        &self.inner.config.run
    }

    /// The loop's policies and what every request carries.
    pub fn agent_config(&self) -> &AgentConfig {
        &self.inner.config
    }

    /// The state of a new run: `history` (a previous run's
    /// [`AgentRunResult::messages`], or empty) followed by `user_message`.
    /// Drive it with [`resume`](Self::resume), or step it yourself.
    pub fn start(&self, history: Vec<Message>, user_message: impl Into<String>) -> RunState {
        self.start_with(history, Message::user(user_message), None)
    }

    /// [`start`](Self::start) with a user message of its own: one with
    /// attachments ([`Message::user_with`]).
    pub fn start_message(&self, history: Vec<Message>, user_message: Message) -> RunState {
        self.start_with(history, user_message, None)
    }

    /// [`start`](Self::start) with `config` instead of the agent's policies.
    pub(crate) fn start_with(
        &self,
        history: Vec<Message>,
        user_message: Message,
        config: Option<RunConfig>,
    ) -> RunState {
        let inner = &self.inner;
        let mut messages = history;
        messages.push(user_message);
        let tools = inner.registry.shared_definitions();
        let approval_required: Vec<String> = tools
            .iter()
            .filter(|tool| inner.registry.requires_approval(&tool.name))
            .map(|tool| tool.name.clone())
            .collect();
        let protocol = self.protocol(&tools);
        let mut stop = inner.config.request.stop.clone();
        let (system, tools) = match &protocol {
            Protocol::Native => (self.system_prompt(), tools),
            Protocol::Text { .. } => {
                let instructions = inner.system_prompt.as_deref().unwrap_or_default();
                let system = prompts::text_protocol_system(&inner.name, &inner.description, instructions, &tools);
                (Some(system), Arc::default())
            }
            Protocol::React => {
                // The model must not write its own observations.
                for marker in REACT_STOP_SEQUENCES {
                    if !stop.iter().any(|s| s == marker) {
                        stop.push((*marker).to_owned());
                    }
                }
                let instructions = self.system_prompt().unwrap_or_default();
                (Some(prompts::react_system(&instructions, &tools)), Arc::default())
            }
        };
        let request = ChatRequest {
            model: None,
            system,
            messages,
            tools,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            max_tool_calls: None,
            max_tokens: inner.config.request.max_tokens,
            temperature: inner.config.request.temperature,
            stop,
            response_format: None,
            prompt_caching: inner.config.request.prompt_caching,
        };
        let identity = RunIdentity {
            agent: inner.name.clone(),
            provider: inner.client.provider().to_owned(),
            model: inner.client.model().to_owned(),
        };
        let info = inner.catalog.as_ref().and_then(|catalog| catalog.get(&identity.model));
        let pricing = info.map(|info| info.pricing);
        let mut config = config.unwrap_or_else(|| inner.config.run.clone());
        if config.context.window_tokens.is_none() {
            config.context.window_tokens = info.and_then(|info| info.context_window);
        }
        RunState::new(identity, config, request, pricing)
            .with_accepted_inputs(info.and_then(|info| info.inputs.clone()))
            .with_format_with_tools(inner.client.capabilities().format_with_tools)
            .with_protocol(protocol)
            .with_forced_answer(inner.forced_answer_instruction.clone())
            .with_calibration(f64::from_bits(inner.calibration.load(Ordering::Relaxed)))
            .with_approval_required(approval_required)
            .with_approval_check(approval_check(&inner.registry))
    }

    /// Keeps what `state` learned of the provider's token counts for the
    /// next runs.
    fn learn_from(&self, state: &RunState) {
        self.inner
            .calibration
            .store(state.calibration().to_bits(), Ordering::Relaxed);
    }

    /// A run of `prompt` as the next user turn: await the [`RunRequest`]
    /// for the whole run, or [`stream`](RunRequest::stream) it for its
    /// events. Chain [`history`](RunRequest::history),
    /// [`session`](RunRequest::session), [`context`](RunRequest::context),
    /// [`cancel_token`](RunRequest::cancel_token),
    /// [`options`](RunRequest::options) on it first.
    ///
    /// A cancelled run or one that hit a limit is a successful result with
    /// the matching [`RunEnd`]; a failed one is a [`RunError`] that keeps
    /// the partial record.
    pub fn run(&self, prompt: impl Into<String>) -> RunRequest {
        RunRequest::prompt(self, prompt.into())
    }

    /// A run that drives `state` (saved, read back or hand-stepped) on to
    /// its end, as [`run`](Self::run) does a new prompt. A state read back
    /// from storage is first held to this agent's
    /// [policy](Self::resume_policy) (see [`restore`](Self::restore)); one
    /// that is not this agent's run is refused: a failed run that did
    /// nothing.
    pub fn resume(&self, state: RunState) -> RunRequest {
        RunRequest::state(self, state)
    }

    /// Runs `user_message` as the first turn of a new conversation.
    #[deprecated(since = "0.2.0", note = "use `agent.run(prompt).await`")]
    pub async fn prompt(&self, user_message: impl Into<String>) -> Result<AgentRunResult, RunError> {
        self.run(user_message).await
    }

    /// [`prompt`](Self::prompt) as a stream of [`AgentEvent`]s.
    #[deprecated(since = "0.2.0", note = "use `agent.run(prompt).stream()`")]
    pub fn prompt_stream(
        &self,
        user_message: impl Into<String>,
    ) -> impl Stream<Item = AgentEvent> + Send + Unpin + 'static {
        self.run(user_message).stream()
    }

    /// Drives a run from `state` to the end, saving it with `checkpoints`.
    #[deprecated(
        since = "0.2.0",
        note = "use `agent.resume(state).context(context).checkpoints(checkpoints).await`"
    )]
    pub async fn resume_with_checkpoints(
        &self,
        state: RunState,
        context: &ToolContext,
        checkpoints: Option<Arc<dyn RunCheckpoints>>,
    ) -> Result<AgentRunResult, RunError> {
        self.drive_to_end(state, context.clone(), checkpoints).await
    }

    /// Runs one user turn as a stream of [`AgentEvent`]s.
    #[deprecated(
        since = "0.2.0",
        note = "use `agent.run(prompt).history(history).context(context).stream()`"
    )]
    pub fn run_stream(
        &self,
        history: Vec<Message>,
        user_message: impl Into<String>,
        context: ToolContext,
    ) -> impl Stream<Item = AgentEvent> + Send + Unpin + 'static {
        self.run(user_message).history(history).context(context).stream()
    }

    /// Drives a run from `state` as a stream of [`AgentEvent`]s.
    #[deprecated(
        since = "0.2.0",
        note = "use `agent.resume(state).context(context).checkpoints(checkpoints).stream()`"
    )]
    pub fn stream_from(
        &self,
        state: RunState,
        context: ToolContext,
        checkpoints: Option<Arc<dyn RunCheckpoints>>,
    ) -> impl Stream<Item = AgentEvent> + Send + Unpin + 'static {
        self.spawn_watched(state, context, checkpoints, true)
    }

    /// Drives a run from `state` as events, asking for whole replies.
    #[deprecated(
        since = "0.2.0",
        note = "use `agent.resume(state).context(context).whole_replies().stream()`"
    )]
    pub fn watch_from(
        &self,
        state: RunState,
        context: ToolContext,
        checkpoints: Option<Arc<dyn RunCheckpoints>>,
    ) -> impl Stream<Item = AgentEvent> + Send + Unpin + 'static {
        self.spawn_watched(state, context, checkpoints, false)
    }

    /// Drives a run from `state` to the end: the whole-run path of every
    /// [`RunRequest`].
    pub(crate) async fn drive_to_end(
        &self,
        state: RunState,
        context: ToolContext,
        checkpoints: Option<Arc<dyn RunCheckpoints>>,
    ) -> Result<AgentRunResult, RunError> {
        let mut state = self.held_to_policy(state)?;
        let deadline = state.start_deadline();
        // With a deadline, the run has its own token: reaching the deadline
        // cancels it (and so the tools' and the model's work), never the
        // caller's. Without one the run never cancels anything itself.
        let cancel = match deadline {
            Some(_) => context.cancel.child_token(),
            None => context.cancel.clone(),
        };
        let user_text = user_text(&context, &state);
        let context = ToolContext {
            cancel,
            user_text,
            ..context
        };
        self.driver(&context, None, deadline, checkpoints.as_deref())
            .drive(&mut state)
            .await;
        self.learn_from(&state);
        finish(state)
    }

    /// Spawns the run of `state`, its events sent to the returned stream;
    /// `stream_replies` says whether the model's replies are streamed.
    pub(crate) fn spawn_watched(
        &self,
        state: RunState,
        context: ToolContext,
        checkpoints: Option<Arc<dyn RunCheckpoints>>,
        stream_replies: bool,
    ) -> EventStream {
        let agent = self.clone();
        let cancel = context.cancel.child_token();
        let (sender, events) = event_channel(cancel.clone().drop_guard());
        let user_text = user_text(&context, &state);
        let context = ToolContext {
            cancel,
            user_text,
            ..context
        };
        tokio::spawn(async move {
            let _ = sender.send(AgentEvent::RunStarted {
                agent: agent.inner.name.clone(),
                provider: agent.inner.client.provider().to_owned(),
                model: agent.inner.client.model().to_owned(),
            });
            let mut state = match agent.held_to_policy(state) {
                Ok(state) => state,
                Err(refused) => {
                    let message = refused.to_string();
                    let _ = sender.send(AgentEvent::Error { message });
                    let _ = sender.send(AgentEvent::RunFinished { result: refused.result });
                    return;
                }
            };
            let deadline = state.start_deadline();
            let mut driver = agent.driver(&context, Some(&sender), deadline, checkpoints.as_deref());
            driver.stream_replies = stream_replies;
            driver.drive(&mut state).await;
            agent.learn_from(&state);
            let result = state.into_result();
            let _ = sender.send(AgentEvent::RunFinished {
                result: Box::new(result),
            });
        });
        events
    }

    /// The driver of a run that must end by `deadline`.
    fn driver<'a>(
        &'a self,
        context: &'a ToolContext,
        events: Option<&'a EventSender>,
        deadline: Option<std::time::SystemTime>,
        checkpoints: Option<&'a dyn RunCheckpoints>,
    ) -> Driver<'a> {
        let inner = &self.inner;
        Driver {
            client: inner.client.as_ref(),
            registry: inner.registry.as_ref(),
            context,
            deadline: deadline.map(deadline_instant),
            max_concurrent_tools: inner.config.run.max_concurrent_tools,
            capture_content: inner.capture_content,
            events,
            stream_replies: true,
            // One run, one driver: without a shared cache each run starts empty.
            shared_cache: inner.tool_cache.clone(),
            own_cache: std::sync::OnceLock::new(),
            cache_scope: std::sync::OnceLock::new(),
            checkpoints,
            chat_metric_keys: &inner.chat_metric_keys,
            guardrails: &inner.guardrails,
            tripped: std::sync::Mutex::new(None),
        }
    }

    /// The protocol of a run with these tools: native unless configured
    /// otherwise or the client has no native tool calling.
    fn protocol(&self, tools: &[agent_core::ToolDefinition]) -> Protocol {
        let text = || Protocol::Text {
            tool_names: tools.iter().map(|tool| tool.name.clone()).collect(),
        };
        match self.inner.config.run.tool_protocol {
            ToolProtocol::React => Protocol::React,
            _ if tools.is_empty() => Protocol::Native,
            ToolProtocol::Native => Protocol::Native,
            ToolProtocol::Auto if self.inner.client.capabilities().native_tools => Protocol::Native,
            ToolProtocol::Text | ToolProtocol::Auto => text(),
        }
    }

    fn system_prompt(&self) -> Option<String> {
        let inner = &self.inner;
        if inner.system_prompt.is_some() {
            return inner.system_prompt.clone();
        }
        if inner.description.is_empty() {
            return None;
        }
        Some(format!("You are {}: {}", inner.name, inner.description))
    }
}

fn finish(state: RunState) -> Result<AgentRunResult, RunError> {
    let error = state.error().cloned();
    let result = state.into_result();
    if result.stop_reason == RunEnd::Error {
        Err(RunError {
            result: Box::new(result),
            source_error: error,
            store_error: None,
        })
    } else {
        Ok(result)
    }
}

/// Where a spawned run sends its events. They travel boxed: the channel
/// allocates its slots in blocks of 32, which then hold pointers rather
/// than whole events (about 5 KiB less for each run in flight).
#[derive(Clone)]
pub(crate) struct EventSender(mpsc::UnboundedSender<Box<AgentEvent>>);

impl EventSender {
    /// Sends `event`; an error when nobody listens any more.
    pub(crate) fn send(&self, event: AgentEvent) -> Result<(), Box<AgentEvent>> {
        self.0.send(Box::new(event)).map_err(|error| error.0)
    }
}

/// A run's event channel: the sender for the run, the stream for its
/// watcher, which cancels the run when dropped.
pub(crate) fn event_channel(cancel_on_drop: tokio_util::sync::DropGuard) -> (EventSender, EventStream) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (
        EventSender(sender),
        EventStream {
            receiver,
            _cancel_on_drop: cancel_on_drop,
        },
    )
}

/// The events a spawned run sends, as a stream that cancels the run when it
/// is dropped ([`Agent::run_stream`], the scene router's stream).
pub(crate) struct EventStream {
    receiver: mpsc::UnboundedReceiver<Box<AgentEvent>>,
    _cancel_on_drop: tokio_util::sync::DropGuard,
}

impl Stream for EventStream {
    type Item = AgentEvent;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<AgentEvent>> {
        self.receiver.poll_recv(cx).map(|event| event.map(|event| *event))
    }
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    client: Arc<dyn LlmClient>,
    name: String,
    description: String,
    system_prompt: Option<String>,
    registry: Option<Arc<dyn ToolRegistry>>,
    own_tools: ToolAssembly,
    config: AgentConfig,
    catalog: Option<Arc<ModelCatalog>>,
    capture_content: bool,
    forced_answer_instruction: Option<String>,
    tool_cache: Option<ToolResultCache>,
    guardrails: Guardrails,
}

impl AgentBuilder {
    fn new(client: Arc<dyn LlmClient>) -> Self {
        Self {
            client,
            name: "agent".to_owned(),
            description: String::new(),
            system_prompt: None,
            registry: None,
            own_tools: ToolAssembly::default(),
            config: AgentConfig::default(),
            catalog: None,
            capture_content: false,
            forced_answer_instruction: None,
            tool_cache: None,
            guardrails: Guardrails::default(),
        }
    }

    /// The agent's name (telemetry, events, text-protocol prompt).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What the agent is for.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// The tools (default: none): a registry of providers, enabled or
    /// disabled, shared or the agent's own. Tools added with
    /// [`tool`](Self::tool) and [`tools_from`](Self::tools_from) are put in
    /// front of it in a registry of the agent's own: `registry` itself is
    /// never changed, so other agents sharing it do not see them.
    pub fn tools(mut self, registry: Arc<dyn ToolRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Adds one tool: a [`TypedTool`] or any [`Tool`](agent_tools::Tool)
    /// implementation. Each call adds one more; a tool named like an
    /// earlier one replaces it. No [`ToolSet`](agent_tools::ToolSet) or
    /// registry is needed: the tools go into a provider named after the
    /// agent ([`name`](Self::name)), registered first when the agent is built.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_core::ToolContext;
    /// use agent_runner::Agent;
    /// use agent_testing::{ScriptedClient, response};
    /// use agent_tools::{NoArgs, TypedTool};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = ScriptedClient::new()
    ///     .respond(response::tool_calls([("now", serde_json::json!({}))]))
    ///     .respond(response::text("It is noon."));
    /// let agent = Agent::builder(Arc::new(client))
    ///     .tool(TypedTool::new("now", "The time", |_: NoArgs, _: ToolContext| async { Ok("12:00") }))
    ///     .build();
    /// let result = agent.prompt("What time is it?").await?;
    /// assert_eq!(result.tool_calls[0].result, "12:00");
    /// # Ok(())
    /// # }
    /// ```
    pub fn tool(mut self, tool: impl Into<TypedTool>) -> Self {
        self.own_tools.add_tool(tool.into());
        self
    }

    /// Adds a whole tool domain (a [`ToolProvider`], say
    /// `agent_tools_math::tool_set()`), enabled, after the tools of
    /// [`tool`](Self::tool) and earlier domains.
    pub fn tools_from(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.own_tools.add_provider(provider);
        self
    }

    /// Replaces all loop policies and request options at once: the one
    /// value an application deserialises (see [`AgentConfig`]). Checked by
    /// [`try_build`](Self::try_build).
    pub fn agent_config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// Replaces all loop policies at once.
    pub fn config(mut self, config: RunConfig) -> Self {
        self.config.run = config;
        self
    }

    /// Replaces all request options at once.
    pub fn request_options(mut self, options: ModelSettings) -> Self {
        self.config.request = options;
        self
    }

    /// Model calls that may request tools before the answer is forced (default 10).
    pub fn max_iterations(mut self, max_iterations: u32) -> Self {
        self.config.run.max_iterations = max_iterations;
        self
    }

    /// Consecutive all-failing iterations before the run fails (default 3).
    pub fn max_consecutive_failures(mut self, max: u32) -> Self {
        self.config.run.max_consecutive_failures = max;
        self
    }

    /// Tools of one batch run at most this many at a time (default 8).
    pub fn max_concurrent_tools(mut self, max: usize) -> Self {
        self.config.run.max_concurrent_tools = max;
        self
    }

    /// The longest tool result, in bytes, that enters the history (default
    /// 32 KiB; 0 = no limit); longer ones are cut with a marker.
    pub fn max_tool_result_bytes(mut self, max: usize) -> Self {
        self.config.run.max_tool_result_bytes = max;
        self
    }

    /// Whether identical calls of one reply are collapsed into one (default on).
    pub fn deduplicate_calls(mut self, on: bool) -> Self {
        self.config.run.deduplicate_calls = on;
        self
    }

    /// Re-asks once, then forces the answer, when a reply only repeats calls
    /// already answered in the run (default on;
    /// [`RunConfig::reask_repeated_calls`](crate::RunConfig)).
    pub fn reask_repeated_calls(mut self, on: bool) -> Self {
        self.config.run.reask_repeated_calls = on;
        self
    }

    /// Keeps the tool choice for every request, not only the first.
    pub fn tool_choice_every_round(mut self, on: bool) -> Self {
        self.config.run.tool_choice_every_round = on;
        self
    }

    /// Tools whose successful call ends the run with their result as the answer.
    pub fn stop_at_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.run.stop_at_tools = names.into_iter().map(Into::into).collect();
        self
    }

    /// At most this many calls of one reply run (default 16; 0 = no cap);
    /// later ones are left out of the history and recorded as not run.
    pub fn max_calls_per_reply(mut self, max: usize) -> Self {
        self.config.run.max_calls_per_reply = max;
        self
    }

    /// Tool choice of the first request; later ones use `auto`.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.config.run.tool_choice = choice;
        self
    }

    /// Checks final answers against the turn's evidence ([`Grounding`](crate::Grounding)).
    pub fn grounding(mut self, grounding: crate::Grounding) -> Self {
        self.config.run.grounding = grounding;
        self
    }

    /// Native tool calling, the text protocol, or automatic choice.
    pub fn tool_protocol(mut self, protocol: ToolProtocol) -> Self {
        self.config.run.tool_protocol = protocol;
        self
    }

    /// Budgets (tokens, cost, tool calls, deadline).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.config.run.budget = budget;
        self
    }

    /// Wall-clock limit of a run. It starts when the run does
    /// ([`Agent::start`]) and is kept in the [`RunState`]: a saved run
    /// resumed later has what was left of it, or none.
    pub fn deadline(mut self, limit: Duration) -> Self {
        self.config.run.budget.deadline = Some(limit);
        self
    }

    /// The model's context window in tokens (say a local model's `n_ctx`),
    /// for the compaction of conversations that outgrow it. Without it the
    /// [catalog](Self::catalog)'s window for the model is used, if it has
    /// one. See [`ContextPolicy`].
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.config.run.context.window_tokens = Some(tokens);
        self
    }

    /// How conversations are kept within the model's context window
    /// (default: compact at 80% of a known window, keeping 4 recent turns).
    pub fn context_policy(mut self, policy: ContextPolicy) -> Self {
        self.config.run.context = policy;
        self
    }

    /// Upper bound on generated tokens per model call. With a token or cost
    /// budget, it is also what the next call is assumed to generate at most
    /// when the budget is checked before the call.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.config.request.max_tokens = Some(max_tokens);
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.config.request.temperature = Some(temperature);
        self
    }

    /// Stop sequences sent with every request.
    pub fn stop_sequences<S: Into<String>>(mut self, stop: impl IntoIterator<Item = S>) -> Self {
        self.config.request.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// Ask the provider to cache the stable prompt prefix.
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.config.request.prompt_caching = on;
        self
    }

    /// Prices usage with this catalog, which also gives the model's context
    /// window when [`context_window`](Self::context_window) is not set.
    pub fn catalog(mut self, catalog: Arc<ModelCatalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// Record message content in telemetry (off by default: it may be sensitive).
    pub fn capture_content(mut self, on: bool) -> Self {
        self.capture_content = on;
        self
    }

    /// The instruction sent with a forced final answer.
    pub fn forced_answer_instruction(mut self, instruction: impl Into<String>) -> Self {
        self.forced_answer_instruction = Some(instruction.into());
        self
    }

    /// Shares `cache` among every run of the agent (say, the turns of one
    /// chat session), so an idempotent tool's result from one run answers
    /// the same call in the next while it is fresh. Without it each run
    /// (and each resumed run) gets its own, empty cache. Only tools that
    /// declare a [`CachePolicy`](agent_core::CachePolicy) are cached.
    pub fn tool_cache(mut self, cache: ToolResultCache) -> Self {
        self.tool_cache = Some(cache);
        self
    }

    /// The agent. Tools of [`tool`](Self::tool) and
    /// [`tools_from`](Self::tools_from) that cannot be registered (a domain
    /// whose tool names clash with earlier ones, a second domain of the
    /// same name) are left out with a warning logged (`tracing`), a clashing
    /// domain registered disabled, and an out-of-range configuration is
    /// logged too; [`try_build`](Self::try_build) reports them instead.
    pub fn build(self) -> Agent {
        if let Err(error) = self.config.validate() {
            tracing::warn!(agent = %self.name, %error, "use AgentBuilder::try_build to get the error");
        }
        let (builder, registry) = self.take_registry();
        let registry = builder.own_tools.clone().register_leniently(&builder.name, registry);
        builder.finish(registry)
    }

    /// Checks and changes at the run's edges: input, output, tool-call and
    /// tool-result guardrails, and hooks around model and tool calls
    /// ([`guardrails`](crate::guardrails)). Replaces any set before.
    pub fn guardrails(mut self, guardrails: Guardrails) -> Self {
        self.guardrails = guardrails;
        self
    }

    /// The agent, or what is wrong with it: an out-of-range
    /// [configuration](AgentConfig::validate), or the first registration
    /// error of the tools of [`tool`](Self::tool) and
    /// [`tools_from`](Self::tools_from) (tool names that clash across
    /// domains or with the [shared registry](Self::tools), or two domains
    /// of the same name).
    pub fn try_build(self) -> Result<Agent, BuildError> {
        self.config.validate()?;
        let (builder, registry) = self.take_registry();
        let registry = builder.own_tools.clone().register(&builder.name, registry)?;
        Ok(builder.finish(registry))
    }

    /// Splits off the registry given with [`tools`](Self::tools).
    fn take_registry(mut self) -> (Self, Option<Arc<dyn ToolRegistry>>) {
        let registry = self.registry.take();
        (self, registry)
    }

    /// The agent over `registry`.
    fn finish(self, registry: Arc<dyn ToolRegistry>) -> Agent {
        let chat_metric_keys = crate::telemetry::ChatMetricKeys::new(self.client.provider(), self.client.model());
        Agent {
            inner: Arc::new(Inner {
                name: self.name,
                description: self.description,
                system_prompt: self.system_prompt,
                client: self.client,
                registry,
                config: self.config,
                catalog: self.catalog,
                capture_content: self.capture_content,
                forced_answer_instruction: self.forced_answer_instruction,
                tool_cache: self.tool_cache,
                calibration: AtomicU64::new(1.0_f64.to_bits()),
                chat_metric_keys,
                guardrails: self.guardrails,
            }),
        }
    }
}

/// The caller's user text, else the conversation's: what tools may check
/// their arguments against ([`ToolContext::user_text`]).
fn user_text(context: &ToolContext, state: &RunState) -> Option<Arc<str>> {
    context
        .user_text
        .clone()
        .or_else(|| Some(users_own_text(&state.request().messages)))
}

/// The text of the user messages of `messages`, joined with newlines,
/// leaving out the ones the runner writes on the user's behalf in text
/// protocols (`<tool_response>` blocks, ReAct `Observation:` lines).
fn users_own_text(messages: &[Message]) -> Arc<str> {
    let users_own = || {
        messages.iter().filter_map(|message| match message {
            Message::User { content, .. } if !written_by_the_runner(content) => Some(content.as_str()),
            _ => None,
        })
    };
    // One message (a first turn) is shared as it is, without joining.
    let mut each = users_own();
    if let (Some(only), None) = (each.next(), each.next()) {
        return Arc::from(only);
    }
    let mut text = String::with_capacity(users_own().map(|content| content.len() + 1).sum());
    for content in users_own() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(content);
    }
    Arc::from(text)
}

/// Whether a user message is one the runner wrote: a tool response of a
/// text protocol or a ReAct observation.
fn written_by_the_runner(content: &str) -> bool {
    let trimmed = content.trim_start();
    trimmed.starts_with("<tool_response") || trimmed.starts_with("Observation:")
}

/// Which calls of `registry`'s tools that need approval ask for it, by
/// their arguments. A tool the registry has no approval rule for (one a
/// saved state required) always asks.
pub(crate) fn approval_check(registry: &Arc<dyn ToolRegistry>) -> crate::ApprovalCheck {
    let registry = Arc::clone(registry);
    crate::ApprovalCheck::new(move |call| {
        !registry.requires_approval(&call.name) || registry.approval_needed(&call.name, &call.arguments)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_user_wrote_counts() {
        let messages = [
            Message::user("Weather in Tokyo?"),
            Message::assistant("Which city: Paris or Oslo?"),
            Message::user("<tool_response name=\"get_weather\">\n{\"location\": \"Rome\"}\n</tool_response>"),
            Message::user("Observation: Berlin is sunny"),
            Message::user("and Lima"),
        ];
        let text = users_own_text(&messages);
        assert_eq!(&*text, "Weather in Tokyo?\nand Lima");
        let words = agent_tools::UserWords::from_text(&text);
        assert!(words.contains("tokyo") && words.contains("lima"));
        for other in ["paris", "oslo", "rome", "berlin"] {
            assert!(!words.contains(other), "{other}");
        }
    }
}
