//! Building a [`SceneRouter`]: its scenes, their tools and shared settings,
//! checked once.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{LlmClient, ModelCatalog, ToolProvider, ToolRegistry};

use super::matching::{MatchKind, match_name};
use super::router::{Configure, Inner, SceneRouter};
use super::routing::{RoutingSettings, function_name};
use super::tools::scene_registry;
use super::{Scene, SceneError};
use crate::{Agent, AgentBuilder, ToolProtocol};

/// Builds a [`SceneRouter`].
pub struct SceneRouterBuilder {
    client: Arc<dyn LlmClient>,
    scenes: Vec<Scene>,
    providers: Vec<Arc<dyn ToolProvider>>,
    default: Option<String>,
    configure: Option<Configure>,
    catalog: Option<Arc<ModelCatalog>>,
    routing: RoutingSettings,
    tool_timeout: Option<Duration>,
    require_approval: Vec<String>,
}

impl std::fmt::Debug for SceneRouterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SceneRouterBuilder")
            .field("scenes", &self.scenes)
            .field(
                "providers",
                &self
                    .providers
                    .iter()
                    .map(|provider| provider.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

impl SceneRouterBuilder {
    /// A builder whose calls go to `client`, with no scenes yet.
    pub(super) fn new(client: Arc<dyn LlmClient>) -> Self {
        Self {
            client,
            scenes: Vec::new(),
            providers: Vec::new(),
            default: None,
            configure: None,
            catalog: None,
            routing: RoutingSettings::default(),
            tool_timeout: None,
            require_approval: Vec::new(),
        }
    }

    /// Adds a scene (offered to the model in the order added).
    #[must_use]
    pub fn scene(mut self, scene: Scene) -> Self {
        self.scenes.push(scene);
        self
    }

    /// Adds scenes.
    #[must_use]
    pub fn scenes(mut self, scenes: impl IntoIterator<Item = Scene>) -> Self {
        self.scenes.extend(scenes);
        self
    }

    /// Adds a tool domain the scenes can name (whole, or tool by tool).
    #[must_use]
    pub fn provider(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.providers.push(provider);
        self
    }

    /// Adds tool domains.
    #[must_use]
    pub fn providers(mut self, providers: impl IntoIterator<Item = Arc<dyn ToolProvider>>) -> Self {
        self.providers.extend(providers);
        self
    }

    /// The scene that runs when the model names none of the scenes (matched
    /// forgivingly when the router is built).
    #[must_use]
    pub fn default_scene(mut self, name: impl Into<String>) -> Self {
        self.default = Some(name.into());
        self
    }

    /// Settings every scene's agent gets (iterations, budgets, tokens,
    /// temperature, tool protocol, ...); the scene's name, description,
    /// tools and prompt are set after it, so they win. The tool protocol
    /// set here also decides how the routing call offers the scenes.
    #[must_use]
    pub fn configure(mut self, configure: impl Fn(AgentBuilder) -> AgentBuilder + Send + Sync + 'static) -> Self {
        self.configure = Some(Arc::new(configure));
        self
    }

    /// Prices the routing call and every scene's calls.
    #[must_use]
    pub fn catalog(mut self, catalog: Arc<ModelCatalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// Upper bound on the tokens the routing call generates.
    #[must_use]
    pub fn routing_max_tokens(mut self, max_tokens: u32) -> Self {
        self.routing.max_tokens = Some(max_tokens);
        self
    }

    /// Sampling temperature of the routing call.
    #[must_use]
    pub fn routing_temperature(mut self, temperature: f32) -> Self {
        self.routing.temperature = Some(temperature);
        self
    }

    /// How long one tool call of a scene may run.
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Calls of these tools wait for the user's approval in every scene
    /// that has them, whatever their provider declares (see
    /// [`ToolApprover`](agent_core::ToolApprover)).
    #[must_use]
    pub fn require_approval<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.require_approval.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The router. Fails when there are no scenes, two scene names differ
    /// only in case or separators, the default is not a scene, or a scene
    /// names a tool no provider has (or two tools of the same name).
    pub fn build(self) -> Result<SceneRouter, SceneError> {
        if self.scenes.is_empty() {
            return Err(SceneError::NoScenes);
        }
        let names: Vec<&str> = self.scenes.iter().map(Scene::name).collect();
        let function_names: Vec<String> = names.iter().map(|name| function_name(name)).collect();
        for (later, name) in names.iter().enumerate() {
            let clash = names[..later].iter().enumerate().find(|(earlier, other)| {
                function_names[*earlier].eq_ignore_ascii_case(&function_names[later])
                    || match_name(name, &[**other])
                        .is_some_and(|found| matches!(found.kind, MatchKind::Exact | MatchKind::Normalized))
            });
            if let Some((_, first)) = clash {
                return Err(SceneError::DuplicateScene {
                    first: (*first).to_owned(),
                    second: (*name).to_owned(),
                });
            }
        }
        let default = match &self.default {
            None => None,
            Some(name) => {
                let found = match_name(name, &names)
                    .filter(|found| matches!(found.kind, MatchKind::Exact | MatchKind::Normalized));
                match found {
                    Some(found) => Some(found.index),
                    None => {
                        return Err(SceneError::UnknownDefault {
                            name: name.clone(),
                            available: names.iter().map(|name| (*name).to_owned()).collect(),
                        });
                    }
                }
            }
        };
        let registries = self
            .scenes
            .iter()
            .map(|scene| {
                scene_registry(scene, &self.providers, self.tool_timeout, &self.require_approval)
                    .map(|registry| Arc::new(registry) as Arc<dyn ToolRegistry>)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let all_tools = agent_tools::ToolBox::new();
        for provider in &self.providers {
            // A provider whose tools clash with an earlier one's is left out
            // of the listing; the scenes that name it have it.
            let _ = all_tools.register(Arc::clone(provider), true);
        }
        let probe = match &self.configure {
            Some(configure) => configure(Agent::builder(Arc::clone(&self.client))),
            None => Agent::builder(Arc::clone(&self.client)),
        }
        .build();
        let native = match probe.config().tool_protocol {
            ToolProtocol::Native => true,
            ToolProtocol::Auto => self.client.capabilities().native_tools,
            ToolProtocol::Text | ToolProtocol::React => false,
        };
        Ok(SceneRouter {
            inner: Arc::new(Inner {
                chat_metric_keys: crate::telemetry::ChatMetricKeys::new(self.client.provider(), self.client.model()),
                client: self.client,
                scenes: self.scenes,
                function_names,
                registries,
                all_tools: Arc::new(all_tools),
                default,
                configure: self.configure,
                catalog: self.catalog,
                routing: self.routing,
                native,
            }),
        })
    }
}
