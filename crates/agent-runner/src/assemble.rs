//! The tools an [`AgentBuilder`](crate::AgentBuilder) gathers one at a time
//! ([`tool`](crate::AgentBuilder::tool)) or by domain
//! ([`tools_from`](crate::AgentBuilder::tools_from)), registered when the
//! agent is built.

use std::sync::Arc;

use agent_core::{RegistryError, ToolProvider, ToolRegistry};
use agent_tools::{Registry, ToolSet, TypedTool};

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

    /// Registers everything, enabled, into `registry` (a new one when
    /// `None`), stopping at the first error.
    pub(crate) fn register(
        self,
        agent: &str,
        registry: Option<Arc<dyn ToolRegistry>>,
    ) -> Result<Arc<dyn ToolRegistry>, RegistryError> {
        let registry = registry.unwrap_or_else(new_registry);
        for provider in self.into_providers(agent) {
            registry.register(provider, true)?;
        }
        Ok(registry)
    }

    /// Registers everything it can into `registry` (a new one when `None`):
    /// a domain whose tool names clash with earlier ones is registered
    /// disabled, one that cannot be registered at all is left out, each
    /// with a warning.
    pub(crate) fn register_leniently(
        self,
        agent: &str,
        registry: Option<Arc<dyn ToolRegistry>>,
    ) -> Arc<dyn ToolRegistry> {
        let registry = registry.unwrap_or_else(new_registry);
        for provider in self.into_providers(agent) {
            if let Err(error) = registry.register(Arc::clone(&provider), true) {
                let disabled =
                    matches!(error, RegistryError::DuplicateTool { .. }) && registry.register(provider, false).is_ok();
                tracing::warn!(
                    agent,
                    %error,
                    registered_disabled = disabled,
                    "a tool domain of the agent could not be enabled; use AgentBuilder::try_build to get the error"
                );
            }
        }
        registry
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

fn new_registry() -> Arc<dyn ToolRegistry> {
    Arc::new(Registry::new())
}
