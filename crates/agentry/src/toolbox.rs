//! [`ToolBox`]: the enabled tool domains and the registry that runs them.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{RegistryError, ToolDefinition, ToolProvider};
use agent_tools::Registry;
use serde::Serialize;

/// How a [`ToolBox`]'s registry runs its tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolBoxOptions {
    /// How long one tool call may run (no limit when unset).
    pub timeout: Option<Duration>,
    /// Tools whose calls wait for the user's approval; each must be a tool
    /// of the box.
    pub require_approval: Vec<String>,
}

/// Why a [`ToolBox`] could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolBoxError {
    /// The registry refused the providers (two define the same tool, ...).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A tool that must wait for approval is not a tool of the box: a typo
    /// would let its calls run unapproved.
    #[error("`{name}` in require_approval is not an enabled tool; enabled tools: {}", enabled.join(", "))]
    UnknownApproval {
        /// The name given.
        name: String,
        /// The tools of the box.
        enabled: Vec<String>,
    },
}

/// The enabled tool providers (domains), in order, and the registry that
/// runs them: what an agent's `.tools(...)` takes, and what a program lists
/// to its users.
///
/// ```
/// # #[cfg(feature = "math")] {
/// use agentry::{ToolBox, ToolBoxOptions, ToolDomain};
///
/// let math = ToolDomain::Math.build(&serde_json::json!({}), |_| None)?;
/// let tools = ToolBox::new(vec![math], &ToolBoxOptions::default())?;
/// assert_eq!(tools.domains(), ["math"]);
/// assert!(tools.describe().contains("calculator("));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ToolBox {
    registry: Arc<Registry>,
    providers: Vec<Arc<dyn ToolProvider>>,
}

impl std::fmt::Debug for ToolBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBox").field("domains", &self.domains()).finish()
    }
}

/// One tool as a listing shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolListing {
    /// The domain (provider) it belongs to.
    pub domain: String,
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
}

impl ToolBox {
    /// A box of `providers`, all enabled, run as `options` say.
    pub fn new(providers: Vec<Arc<dyn ToolProvider>>, options: &ToolBoxOptions) -> Result<Self, ToolBoxError> {
        let mut builder = Registry::builder();
        if let Some(timeout) = options.timeout {
            builder = builder.timeout(timeout);
        }
        for provider in &providers {
            builder = builder.provider(Arc::clone(provider));
        }
        let registry = builder
            .require_approval(options.require_approval.iter().cloned())
            .build()?;
        let enabled: Vec<String> = registry
            .shared_definitions()
            .iter()
            .map(|tool| tool.name.clone())
            .collect();
        if let Some(unknown) = options.require_approval.iter().find(|name| !enabled.contains(name)) {
            return Err(ToolBoxError::UnknownApproval {
                name: unknown.clone(),
                enabled,
            });
        }
        Ok(Self {
            registry: Arc::new(registry),
            providers,
        })
    }

    /// The providers, in order (the tool domains scenes choose from).
    pub fn providers(&self) -> &[Arc<dyn ToolProvider>] {
        &self.providers
    }

    /// The registry, for an agent.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// The domains, in order.
    pub fn domains(&self) -> Vec<&str> {
        self.providers.iter().map(|provider| provider.name()).collect()
    }

    /// Every tool with its domain and schema.
    pub fn listing(&self) -> Vec<ToolListing> {
        self.providers
            .iter()
            .flat_map(|provider| {
                provider
                    .tools()
                    .into_iter()
                    .map(move |tool: ToolDefinition| ToolListing {
                        domain: provider.name().to_owned(),
                        name: tool.name,
                        description: tool.description,
                        input_schema: (*tool.input_schema).clone(),
                    })
            })
            .collect()
    }

    /// The listing as people read it: each domain, its tools with their
    /// arguments (`b?` for an optional one) and the first sentence of their
    /// description. Empty without a domain.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for provider in &self.providers {
            let _ = writeln!(out, "{} — {}", provider.name(), provider.description());
            for tool in provider.tools() {
                let _ = writeln!(out, "  {}({})", tool.name, arguments(&tool.input_schema));
                let _ = writeln!(out, "      {}", first_sentence(&tool.description));
            }
        }
        out
    }
}

/// `a, b?` from an object schema: required arguments plain, optional ones with `?`.
fn arguments(schema: &serde_json::Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .keys()
                .map(|name| {
                    if required.contains(&name.as_str()) {
                        name.clone()
                    } else {
                        format!("{name}?")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "travel")]
    #[test]
    fn the_listing_names_each_tool_and_its_arguments() {
        use crate::ToolDomain;
        let travel = ToolDomain::Travel
            .build(&serde_json::json!({}), |_| None)
            .unwrap_or_else(|e| panic!("{e}"));
        let tools = ToolBox::new(vec![travel], &ToolBoxOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = tools.listing().into_iter().map(|tool| tool.name).collect();
        assert!(names.contains(&"get_weather".to_owned()));
        let text = tools.describe();
        assert!(
            text.contains("get_flight_prices(origin?, destination?, date?)"),
            "{text}"
        );
    }

    #[cfg(feature = "math")]
    #[test]
    fn a_tool_that_must_wait_for_approval_must_be_a_tool_of_the_box() {
        use crate::ToolDomain;
        let math = || {
            ToolDomain::Math
                .build(&serde_json::json!({}), |_| None)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let options = ToolBoxOptions {
            require_approval: vec!["calculater".to_owned()],
            ..ToolBoxOptions::default()
        };
        let error = ToolBox::new(vec![math()], &options).err();
        assert!(
            matches!(&error, Some(ToolBoxError::UnknownApproval { name, enabled }) if name == "calculater" && enabled.contains(&"calculator".to_owned())),
            "{error:?}"
        );
        let twice = ToolBox::new(vec![math(), math()], &ToolBoxOptions::default()).err();
        assert!(matches!(twice, Some(ToolBoxError::Registry(_))), "{twice:?}");
    }
}
