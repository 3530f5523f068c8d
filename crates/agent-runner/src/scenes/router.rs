//! The scene router: one model call chooses the scene, then the scene's own
//! agent runs the request.

use std::sync::Arc;
use std::time::Instant;

use agent_core::{
    AgentEvent, AgentRunResult, Attachment, CallPurpose, LlmClient, LlmError, LlmErrorKind, Message, ModelCallRecord,
    ModelCatalog, RunEnd, ToolContext, ToolRegistry,
};
use futures::{Stream, StreamExt};
use tracing::Instrument;

use super::actor::{SceneContext, SceneRequest};
use super::matching::{MatchKind, match_name};
use super::routing::{RoutingSettings, requested_name, routing_request};
use super::{Scene, SceneError, SceneRouterBuilder};
use crate::{Agent, AgentBuilder, telemetry};

/// The user's message of a streamed run: its text and what is attached.
struct UserTurn {
    text: String,
    attachments: Vec<Attachment>,
}

/// Shared agent settings applied to every scene's agent.
pub(super) type Configure = Arc<dyn Fn(AgentBuilder) -> AgentBuilder + Send + Sync>;

/// Routes each request to one of several named scenes, then runs that
/// scene's agent: its own system prompt (with what its actors add), its own
/// tools, the shared loop settings.
///
/// The choice is one model call ([`route`](Self::route)): with native tool
/// calling, one function per scene (named after the scene, described by its
/// description) and `tool_choice = required`; with the text protocol
/// (configured, or a client without native tools), the scenes listed in the
/// system prompt and the name read from the reply. The name is matched
/// forgivingly ([`match_name`](super::match_name)); a name that matches no
/// scene goes to the default scene when there is one, else the request
/// fails with [`SceneError::UnknownScene`].
///
/// The routing call is part of the run's record: it is the first of
/// [`model_calls`](AgentRunResult::model_calls) (purpose
/// [`CallPurpose::Routing`]), its tokens and cost count in the totals, and
/// [`scene`](AgentRunResult::scene) names the scene that ran.
#[derive(Clone)]
pub struct SceneRouter {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) client: Arc<dyn LlmClient>,
    pub(super) scenes: Vec<Scene>,
    pub(super) function_names: Vec<String>,
    pub(super) registries: Vec<Arc<dyn ToolRegistry>>,
    pub(super) all_tools: Arc<dyn ToolRegistry>,
    pub(super) default: Option<usize>,
    pub(super) configure: Option<Configure>,
    pub(super) catalog: Option<Arc<ModelCatalog>>,
    pub(super) routing: RoutingSettings,
    pub(super) native: bool,
    /// The keys of the routing client's chat metrics, made once.
    pub(super) chat_metric_keys: telemetry::ChatMetricKeys,
}

impl std::fmt::Debug for SceneRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SceneRouter")
            .field("scenes", &self.inner.scenes)
            .field("default", &self.default_scene())
            .field("native", &self.inner.native)
            .finish_non_exhaustive()
    }
}

/// The scene the router chose for a request, and the call that chose it.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneChoice {
    /// The scene that runs.
    pub scene: String,
    /// The name the model wrote; `None` when it named none.
    pub requested: Option<String>,
    /// How the name matched the scene; `None` when it matched none and the
    /// default scene was taken.
    pub matched: Option<MatchKind>,
    /// The routing call.
    pub call: ModelCallRecord,
}

impl SceneChoice {
    /// `result` (the scene's run) with the routing call added: first of its
    /// model calls, in its usage and cost, and the scene named.
    pub fn apply(&self, mut result: AgentRunResult) -> AgentRunResult {
        result.usage += self.call.usage;
        result.cost_usd = match (result.cost_usd, self.call.cost_usd) {
            (Some(run), Some(routing)) => Some(run + routing),
            _ => None,
        };
        result.model_calls.insert(0, self.call.clone());
        result.scene = Some(self.scene.clone());
        result
    }
}

impl SceneRouter {
    /// Starts configuring a router whose calls (routing and scenes) go to
    /// `client`.
    pub fn builder(client: Arc<dyn LlmClient>) -> SceneRouterBuilder {
        SceneRouterBuilder::new(client)
    }

    /// The scenes, in the order they were added.
    pub fn scenes(&self) -> &[Scene] {
        &self.inner.scenes
    }

    /// The default scene, if there is one.
    pub fn default_scene(&self) -> Option<&str> {
        self.inner.default.map(|index| self.inner.scenes[index].name())
    }

    /// The model client.
    pub fn client(&self) -> &Arc<dyn LlmClient> {
        &self.inner.client
    }

    /// Every tool of the router's providers (what the scenes choose from).
    pub fn registry(&self) -> &Arc<dyn ToolRegistry> {
        &self.inner.all_tools
    }

    /// The tools of the scene named `scene` (exactly), if there is one.
    pub fn scene_registry(&self, scene: &str) -> Option<&Arc<dyn ToolRegistry>> {
        self.index_of(scene).map(|index| &self.inner.registries[index])
    }

    /// Whether the routing call offers the scenes as functions (else the
    /// scene name is read from the reply's text).
    pub fn routes_natively(&self) -> bool {
        self.inner.native
    }

    fn index_of(&self, scene: &str) -> Option<usize> {
        self.inner.scenes.iter().position(|candidate| candidate.name() == scene)
    }

    fn names(&self) -> Vec<String> {
        self.inner.scenes.iter().map(|scene| scene.name().to_owned()).collect()
    }

    /// Chooses the scene for `user_message` (after `history`) with one
    /// model call.
    pub async fn route(
        &self,
        history: &[Message],
        user_message: &str,
        context: &ToolContext,
    ) -> Result<SceneChoice, SceneError> {
        self.route_attached(history, user_message, &[], context).await
    }

    /// [`route`](Self::route) for a message with attachments: the routing
    /// call reads their names and types, not their bytes.
    pub async fn route_attached(
        &self,
        history: &[Message],
        user_message: &str,
        attachments: &[Attachment],
        context: &ToolContext,
    ) -> Result<SceneChoice, SceneError> {
        let inner = &self.inner;
        let request = routing_request(
            &inner.scenes,
            history,
            user_message,
            attachments,
            inner.native,
            &inner.routing,
        );
        let client = inner.client.as_ref();
        let span = telemetry::chat_span(client.provider(), client.model(), &request, 0, telemetry::RunIds::NONE);
        let started = Instant::now();
        let outcome = client
            .complete(&request, &context.cancel)
            .instrument(span.clone())
            .await;
        let elapsed = started.elapsed();
        let metrics = telemetry::ChatMetrics::new(&inner.chat_metric_keys);
        telemetry::record_chat(
            &span,
            &metrics,
            client.provider(),
            client.model(),
            outcome.as_ref(),
            elapsed,
            false,
            &request,
        );
        let response = outcome.map_err(SceneError::Routing)?;
        let model = if response.model.is_empty() {
            client.model().to_owned()
        } else {
            response.model.clone()
        };
        let call = ModelCallRecord {
            iteration: 1,
            cost_usd: inner
                .catalog
                .as_ref()
                .and_then(|catalog| catalog.cost(&model, &response.usage)),
            model,
            usage: response.usage,
            stop_reason: response.stop_reason,
            duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            purpose: CallPurpose::Routing,
            route: response.route.clone(),
        };
        let requested = requested_name(&response);
        let matched = requested.as_deref().and_then(|name| self.match_scene(name));
        let (index, matched) = match (matched, inner.default, &requested) {
            (Some((index, kind)), _, _) => (index, Some(kind)),
            (None, Some(default), _) => (default, None),
            (None, None, Some(requested)) => {
                return Err(SceneError::UnknownScene {
                    requested: requested.clone(),
                    available: self.names(),
                });
            }
            (None, None, None) => {
                return Err(SceneError::NoSceneChosen {
                    available: self.names(),
                });
            }
        };
        let scene = inner.scenes[index].name().to_owned();
        tracing::debug!(scene = %scene, requested = ?requested, matched = ?matched, "scene chosen");
        Ok(SceneChoice {
            scene,
            requested,
            matched,
            call,
        })
    }

    /// The scene `name` means: a function name offered exactly, else the
    /// forgiving match over the scene names.
    fn match_scene(&self, name: &str) -> Option<(usize, MatchKind)> {
        let inner = &self.inner;
        if let Some(index) = inner.function_names.iter().position(|function| function == name) {
            return Some((index, MatchKind::Exact));
        }
        match_name(name, &inner.scenes.iter().map(Scene::name).collect::<Vec<_>>())
            .map(|found| (found.index, found.kind))
    }

    /// The agent of the scene named `scene` (exactly) for this request: its
    /// actors run and its prompt is rendered with what they add.
    pub async fn scene_agent(
        &self,
        scene: &str,
        history: &[Message],
        user_message: &str,
        context: &ToolContext,
    ) -> Result<Agent, SceneError> {
        let inner = &self.inner;
        let Some(index) = self.index_of(scene) else {
            return Err(SceneError::UnknownScene {
                requested: scene.to_owned(),
                available: self.names(),
            });
        };
        let scene = &inner.scenes[index];
        let request = SceneRequest {
            scene: scene.name(),
            user_message,
            history,
            context,
        };
        let mut values = SceneContext::new();
        for actor in scene.actors() {
            let added = actor.context(&request).await.map_err(|error| SceneError::Actor {
                scene: scene.name().to_owned(),
                actor: actor.name().to_owned(),
                message: error.to_string(),
            })?;
            values.extend(added);
        }
        let prompt = scene.render_prompt(&values).map_err(|source| SceneError::Prompt {
            scene: scene.name().to_owned(),
            source,
        })?;
        let mut builder = Agent::builder(Arc::clone(&inner.client));
        if let Some(catalog) = &inner.catalog {
            builder = builder.catalog(Arc::clone(catalog));
        }
        if let Some(configure) = &inner.configure {
            builder = configure(builder);
        }
        if let Some(guardrails) = scene.own_guardrails() {
            builder = builder.guardrails(guardrails.clone());
        }
        builder = builder
            .name(scene.name())
            .description(scene.description())
            .tools(Arc::clone(&inner.registries[index]));
        if let Some(prompt) = prompt {
            builder = builder.system_prompt(prompt);
        }
        Ok(builder.build())
    }

    /// Routes `user_message` (after `history`) and runs the chosen scene to
    /// the end. The result is the scene's run with the routing call added
    /// ([`SceneChoice::apply`]); a failed scene run is
    /// [`SceneError::Run`], which keeps that record.
    pub async fn run(
        &self,
        history: Vec<Message>,
        user_message: impl Into<String>,
        context: &ToolContext,
    ) -> Result<AgentRunResult, SceneError> {
        self.run_attached(history, user_message, Vec::new(), context).await
    }

    /// [`run`](Self::run) of a message with images, documents or audio:
    /// the routing call reads their names and types
    /// ([`route_attached`](Self::route_attached)), the scene's agent the
    /// media itself.
    pub async fn run_attached(
        &self,
        history: Vec<Message>,
        user_message: impl Into<String>,
        attachments: Vec<Attachment>,
        context: &ToolContext,
    ) -> Result<AgentRunResult, SceneError> {
        let user_message = user_message.into();
        let choice = self
            .route_attached(&history, &user_message, &attachments, context)
            .await?;
        let agent = self
            .scene_agent(&choice.scene, &history, &user_message, context)
            .await?;
        let request = agent.run(user_message).attach(attachments).history(history);
        match request.context(context.clone()).await {
            Ok(result) => Ok(choice.apply(result)),
            Err(mut error) => {
                *error.result = choice.apply(std::mem::replace(&mut *error.result, placeholder()));
                Err(SceneError::Run {
                    scene: choice.scene,
                    source: Box::new(error),
                })
            }
        }
    }

    /// [`run`](Self::run) as a stream of [`AgentEvent`]s:
    /// [`AgentEvent::SceneEntered`] once the scene is chosen, then the
    /// events of the scene's streamed run, its `RunFinished` carrying the
    /// record with the routing call added. When no scene can run (the
    /// routing call failed, no scene matched and there is no default, an
    /// actor failed) the stream has an [`AgentEvent::Error`] and a
    /// `RunFinished` whose record says why (`stop_reason` `error`, or
    /// `cancelled`). Dropping the stream cancels the run.
    pub fn run_stream(
        &self,
        history: Vec<Message>,
        user_message: impl Into<String>,
        context: ToolContext,
    ) -> impl Stream<Item = AgentEvent> + Send + 'static {
        self.run_stream_attached(history, user_message, Vec::new(), context)
    }

    /// [`run_stream`](Self::run_stream) of a message with attachments (as
    /// [`run_attached`](Self::run_attached)).
    pub fn run_stream_attached(
        &self,
        history: Vec<Message>,
        user_message: impl Into<String>,
        attachments: Vec<Attachment>,
        context: ToolContext,
    ) -> impl Stream<Item = AgentEvent> + Send + 'static {
        let router = self.clone();
        let user_message = user_message.into();
        let cancel = context.cancel.child_token();
        let (sender, events) = crate::agent::event_channel(cancel.clone().drop_guard());
        let context = ToolContext { cancel, ..context };
        tokio::spawn(async move {
            let message = UserTurn {
                text: user_message,
                attachments,
            };
            router.stream_into(history, message, context, &sender).await;
        });
        events
    }

    async fn stream_into(
        &self,
        history: Vec<Message>,
        message: UserTurn,
        context: ToolContext,
        sender: &crate::agent::EventSender,
    ) {
        let routed = self
            .route_attached(&history, &message.text, &message.attachments, &context)
            .await;
        let choice = match routed {
            Ok(choice) => choice,
            Err(error) => {
                self.send_failure(sender, &error, None, history, message);
                return;
            }
        };
        let agent = match self.scene_agent(&choice.scene, &history, &message.text, &context).await {
            Ok(agent) => agent,
            Err(error) => {
                self.send_failure(sender, &error, Some(&choice), history, message);
                return;
            }
        };
        let entered = AgentEvent::SceneEntered {
            scene: choice.scene.clone(),
            requested: choice.requested.clone(),
        };
        if sender.send(entered).is_err() {
            return;
        }
        let request = agent.run(message.text).attach(message.attachments).history(history);
        let mut events = Box::pin(request.context(context).stream());
        while let Some(event) = events.next().await {
            let event = match event {
                AgentEvent::RunFinished { result } => AgentEvent::RunFinished {
                    result: Box::new(choice.apply(*result)),
                },
                other => other,
            };
            if sender.send(event).is_err() {
                return;
            }
        }
    }

    /// Reports a request no scene ran: an error event, then a record of the
    /// routing call (if it was made) saying why.
    fn send_failure(
        &self,
        sender: &crate::agent::EventSender,
        error: &SceneError,
        choice: Option<&SceneChoice>,
        history: Vec<Message>,
        message: UserTurn,
    ) {
        let cancelled = matches!(
            error,
            SceneError::Routing(LlmError {
                kind: LlmErrorKind::Cancelled,
                ..
            })
        );
        let _ = sender.send(AgentEvent::Error {
            message: error.to_string(),
        });
        let mut messages = history;
        // The message stays in the record, media and all: it can be sent again.
        messages.push(Message::user_with(message.text, message.attachments));
        let mut result = placeholder();
        result.stop_reason = if cancelled { RunEnd::Cancelled } else { RunEnd::Error };
        result.stop_detail = Some(error.to_string());
        // Nothing ran but the routing call: its cost is the whole cost.
        result.cost_usd = choice.map(|_| 0.0);
        self.inner.client.provider().clone_into(&mut result.provider);
        self.inner.client.model().clone_into(&mut result.model);
        result.messages = messages;
        let result = match choice {
            Some(choice) => choice.apply(result),
            None => result,
        };
        let _ = sender.send(AgentEvent::RunFinished {
            result: Box::new(result),
        });
    }
}

/// An empty record: no answer, no calls, stopped with an error.
fn placeholder() -> AgentRunResult {
    AgentRunResult {
        response: String::new(),
        stop_reason: RunEnd::Error,
        stop_detail: None,
        iterations: 0,
        tool_calls: Vec::new(),
        model_calls: Vec::new(),
        usage: agent_core::Usage::default(),
        cost_usd: None,
        provider: String::new(),
        model: String::new(),
        messages: Vec::new(),
        compactions: Vec::new(),
        pending_approvals: Vec::new(),
        scene: None,
        grounding: None,
        guardrail: None,
    }
}
