//! The tools an [`AgentBuilder`](crate::AgentBuilder) gathers one at a time
//! ([`tool`](crate::AgentBuilder::tool)) or by domain
//! ([`tools_from`](crate::AgentBuilder::tools_from)), registered when the
//! agent is built.

use std::collections::HashSet;
use std::sync::Arc;

use agent_core::{CachePolicy, RegistryError, ToolContext, ToolDefinition, ToolExecution, ToolProvider, ToolRegistry};
use agent_tools::{ToolBox, ToolSet, TypedTool};
use async_trait::async_trait;
use serde_json::Value;

/// Tools and tool domains waiting to be registered.
#[derive(Clone, Default)]
pub(crate) struct ToolAssembly {
    tools: Vec<TypedTool>,
    providers: Vec<Arc<dyn ToolProvider>>,
}

impl ToolAssembly {
    /// Adds `tool`, replacing an earlier one of the same name in its place.
    pub(crate) fn add_tool(&mut self, tool: TypedTool) {
        match self.tools.iter_mut().find(|known| known.name() == tool.name()) {
            Some(known) => *known = tool,
            None => self.tools.push(tool),
        }
    }

    /// Adds a tool domain.
    pub(crate) fn add_provider(&mut self, provider: Arc<dyn ToolProvider>) {
        self.providers.push(provider);
    }

    /// The agent's tools: everything gathered, enabled, in front of
    /// `shared` (the registry of [`AgentBuilder::tools`](crate::AgentBuilder::tools),
    /// which is read, never changed), stopping at the first error.
    pub(crate) fn register(
        self,
        agent: &str,
        shared: Option<Arc<dyn ToolRegistry>>,
    ) -> Result<Arc<dyn ToolRegistry>, RegistryError> {
        if self.is_empty() {
            return Ok(shared.unwrap_or_else(|| Arc::new(ToolBox::new())));
        }
        let taken: Vec<ToolDefinition> = shared.as_ref().map(|shared| shared.definitions()).unwrap_or_default();
        let own = ToolBox::new();
        for provider in self.into_providers(agent) {
            if let Some(tool) = clash_with(&taken, provider.as_ref()) {
                return Err(RegistryError::DuplicateTool {
                    tool,
                    first: SHARED.to_owned(),
                    second: provider.name().to_owned(),
                });
            }
            own.register(provider, true)?;
        }
        Ok(layered(own, shared))
    }

    /// Like [`register`](Self::register), but registers what it can: a
    /// domain whose tool names clash with earlier ones (or the shared
    /// registry's) is registered disabled, one that cannot be registered at
    /// all is left out, each with a warning.
    pub(crate) fn register_leniently(
        self,
        agent: &str,
        shared: Option<Arc<dyn ToolRegistry>>,
    ) -> Arc<dyn ToolRegistry> {
        if self.is_empty() {
            return shared.unwrap_or_else(|| Arc::new(ToolBox::new()));
        }
        let taken: Vec<ToolDefinition> = shared.as_ref().map(|shared| shared.definitions()).unwrap_or_default();
        let own = ToolBox::new();
        for provider in self.into_providers(agent) {
            let outcome = match clash_with(&taken, provider.as_ref()) {
                Some(tool) => Err(RegistryError::DuplicateTool {
                    tool,
                    first: SHARED.to_owned(),
                    second: provider.name().to_owned(),
                }),
                None => own.register(Arc::clone(&provider), true),
            };
            if let Err(error) = outcome {
                let disabled =
                    matches!(error, RegistryError::DuplicateTool { .. }) && own.register(provider, false).is_ok();
                tracing::warn!(
                    agent,
                    %error,
                    registered_disabled = disabled,
                    "a tool domain of the agent could not be enabled; use AgentBuilder::try_build to get the error"
                );
            }
        }
        layered(own, shared)
    }

    fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.providers.is_empty()
    }

    /// The providers to register: the single tools first, as a set named
    /// after the agent, then the domains in the order they were added.
    fn into_providers(self, agent: &str) -> Vec<Arc<dyn ToolProvider>> {
        let mut providers: Vec<Arc<dyn ToolProvider>> = Vec::with_capacity(self.providers.len() + 1);
        if !self.tools.is_empty() {
            let set = self.tools.into_iter().fold(
                ToolSet::new(agent, format!("Tools of the agent `{agent}`")),
                ToolSet::tool,
            );
            providers.push(Arc::new(set));
        }
        providers.extend(self.providers);
        providers
    }
}

/// How the shared registry is named in a clash error.
const SHARED: &str = "the shared registry";

/// The first tool of `provider` already in `taken`.
fn clash_with(taken: &[ToolDefinition], provider: &dyn ToolProvider) -> Option<String> {
    provider
        .tools()
        .into_iter()
        .map(|tool| tool.name)
        .find(|name| taken.iter().any(|known| &known.name == name))
}

fn layered(own: ToolBox, shared: Option<Arc<dyn ToolRegistry>>) -> Arc<dyn ToolRegistry> {
    match shared {
        Some(shared) => {
            let own_names = own.shared_definitions().iter().map(|tool| tool.name.clone()).collect();
            Arc::new(Layered { own, own_names, shared })
        }
        None => Arc::new(own),
    }
}

/// The agent's own tools in front of a shared registry: listed first, and a
/// call goes to the own tools when they have the name (a name the shared
/// registry enables later is hidden behind them), else to the shared one.
struct Layered {
    own: ToolBox,
    /// The own tools' names, read once: nothing changes the own registry
    /// after the agent is built.
    own_names: HashSet<String>,
    shared: Arc<dyn ToolRegistry>,
}

impl Layered {
    fn owns(&self, tool: &str) -> bool {
        self.own_names.contains(tool)
    }
}

#[async_trait]
impl ToolRegistry for Layered {
    fn definitions(&self) -> Vec<ToolDefinition> {
        let own = self.own.shared_definitions();
        let mut definitions = own.to_vec();
        definitions.extend(
            self.shared
                .definitions()
                .into_iter()
                .filter(|tool| !self.own_names.contains(&tool.name)),
        );
        definitions
    }

    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        if self.owns(tool) {
            self.own.cache_policy(tool)
        } else {
            self.shared.cache_policy(tool)
        }
    }

    fn requires_approval(&self, tool: &str) -> bool {
        if self.owns(tool) {
            self.own.requires_approval(tool)
        } else {
            self.shared.requires_approval(tool)
        }
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> ToolExecution {
        if self.owns(tool) {
            self.own.execute(tool, arguments, context).await
        } else {
            self.shared.execute(tool, arguments, context).await
        }
    }
}
