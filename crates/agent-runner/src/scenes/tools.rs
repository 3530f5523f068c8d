//! Each scene's registry: the tool domains and single tools it names, out
//! of the router's providers, with the router's timeout and tools that
//! require approval.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{CachePolicy, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolProvider};
use agent_tools::ToolBox;
use async_trait::async_trait;
use serde_json::Value;

use super::{Scene, SceneError};

/// The registry of `scene`: in the providers' order, each provider the
/// scene names whole, and for the tools it names one by one, their
/// provider limited to them.
pub(super) fn scene_registry(
    scene: &Scene,
    providers: &[Arc<dyn ToolProvider>],
    timeout: Option<Duration>,
    require_approval: &[String],
) -> Result<ToolBox, SceneError> {
    let mut whole = vec![false; providers.len()];
    let mut single: Vec<Vec<String>> = vec![Vec::new(); providers.len()];
    for entry in scene.tool_entries() {
        if let Some(index) = providers.iter().position(|provider| provider.name() == entry) {
            whole[index] = true;
        } else if let Some(index) = providers
            .iter()
            .position(|provider| provider.tools().iter().any(|tool| tool.name == *entry))
        {
            if !single[index].contains(entry) {
                single[index].push(entry.clone());
            }
        } else {
            return Err(SceneError::UnknownTool {
                scene: scene.name().to_owned(),
                entry: entry.clone(),
                domains: providers.iter().map(|provider| provider.name().to_owned()).collect(),
            });
        }
    }
    let mut builder = ToolBox::builder().require_approval(require_approval.iter().cloned());
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    for ((provider, whole), tools) in providers.iter().zip(whole).zip(single) {
        if whole {
            builder = builder.provider(Arc::clone(provider));
        } else if !tools.is_empty() {
            builder = builder.provider(Arc::new(ToolSubset {
                inner: Arc::clone(provider),
                tools,
            }));
        }
    }
    builder.build().map_err(|source| SceneError::Registry {
        scene: scene.name().to_owned(),
        source,
    })
}

/// Some of a provider's tools, under the provider's own name (so telemetry
/// and errors name the real domain).
struct ToolSubset {
    inner: Arc<dyn ToolProvider>,
    tools: Vec<String>,
}

impl ToolSubset {
    fn has(&self, tool: &str) -> bool {
        self.tools.iter().any(|name| name == tool)
    }
}

#[async_trait]
impl ToolProvider for ToolSubset {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.inner
            .tools()
            .into_iter()
            .filter(|tool| self.has(&tool.name))
            .collect()
    }

    fn required_roles(&self, tool: &str) -> Vec<String> {
        self.inner.required_roles(tool)
    }

    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        self.inner.cache_policy(tool)
    }

    fn requires_approval(&self, tool: &str) -> bool {
        self.inner.requires_approval(tool)
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        if !self.has(tool) {
            return Err(ToolError::UnknownTool {
                name: tool.to_owned(),
                available: self.tools.clone(),
            });
        }
        self.inner.execute(tool, arguments, context).await
    }

    fn span_attributes_hook(&self, tool: &str, arguments: &Value) -> Vec<(String, Value)> {
        self.inner.span_attributes_hook(tool, arguments)
    }

    fn completion_attributes_hook(&self, tool: &str, outcome: &Result<ToolOutput, ToolError>) -> Vec<(String, Value)> {
        self.inner.completion_attributes_hook(tool, outcome)
    }
}
