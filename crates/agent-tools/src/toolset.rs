//! [`ToolSet`]: a [`ToolProvider`] built from typed tools, and
//! [`RequireRoles`], a wrapper that puts a whole provider behind roles.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{CachePolicy, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolProvider};
use async_trait::async_trait;
use serde_json::Value;

use crate::typed::TypedTool;

/// Computes span attributes from a tool name and its (validated) arguments.
pub type SpanAttributesFn = dyn Fn(&str, &Value) -> Vec<(String, Value)> + Send + Sync;

/// Computes completion attributes from a tool name and its outcome.
pub type CompletionAttributesFn = dyn Fn(&str, &Result<ToolOutput, ToolError>) -> Vec<(String, Value)> + Send + Sync;

/// A named group of [`TypedTool`]s of one domain, usable as a
/// [`ToolProvider`]. Tool-domain crates (math, travel, SQL) build their
/// provider with it.
///
/// ```
/// use agent_core::{ToolContext, ToolError, ToolProvider};
/// use agent_tools::{NoArgs, ToolSet, TypedTool};
///
/// let set = ToolSet::new("admin", "Maintenance tools")
///     .tool(TypedTool::new("vacuum", "Compacts the database", |_: NoArgs, _: ToolContext| async {
///         Ok::<_, ToolError>("done")
///     }))
///     .require_roles(["admin"]);
/// assert_eq!(set.required_roles("vacuum"), ["admin"]);
/// assert_eq!(set.tools()[0].name, "vacuum");
/// ```
#[derive(Clone)]
pub struct ToolSet {
    name: String,
    description: String,
    tools: Vec<TypedTool>,
    required_roles: Vec<String>,
    cache_policies: Vec<(String, CachePolicy)>,
    approval_required: Vec<String>,
    span_attributes: Option<Arc<SpanAttributesFn>>,
    completion_attributes: Option<Arc<CompletionAttributesFn>>,
}

impl ToolSet {
    /// An empty set; `name` is what enables or disables it.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            tools: Vec::new(),
            required_roles: Vec::new(),
            cache_policies: Vec::new(),
            approval_required: Vec::new(),
            span_attributes: None,
            completion_attributes: None,
        }
    }

    /// Adds a tool ([`TypedTool`] or any [`Tool`](crate::Tool)). Tools keep
    /// the order they were added in. Two tools of the same name are
    /// rejected when the set is registered.
    pub fn tool(mut self, tool: impl Into<TypedTool>) -> Self {
        self.tools.push(tool.into());
        self
    }

    /// Adds roles a caller needs to run any tool of the set, on top of each
    /// tool's own.
    pub fn require_roles<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        add_roles(&mut self.required_roles, roles);
        self
    }

    /// Declares `tool` idempotent: its successful results may be reused for
    /// `ttl` by calls with the same arguments (see
    /// [`ToolProvider::cache_policy`]). Declaring it again replaces the TTL.
    pub fn cache_results(mut self, tool: impl Into<String>, ttl: Duration) -> Self {
        let tool = tool.into();
        self.cache_policies.retain(|(name, _)| *name != tool);
        self.cache_policies.push((tool, CachePolicy::new(ttl)));
        self
    }

    /// Calls of `tool` wait for the user's approval before they run (see
    /// [`ToolProvider::requires_approval`]).
    pub fn require_approval(mut self, tool: impl Into<String>) -> Self {
        let tool = tool.into();
        if !self.approval_required.contains(&tool) {
            self.approval_required.push(tool);
        }
        self
    }

    /// Adds attributes to each execution's record before the tool runs
    /// (see [`ToolProvider::span_attributes_hook`]).
    pub fn with_span_attributes(
        mut self,
        hook: impl Fn(&str, &Value) -> Vec<(String, Value)> + Send + Sync + 'static,
    ) -> Self {
        self.span_attributes = Some(Arc::new(hook));
        self
    }

    /// Adds attributes to each execution's record after the tool ran
    /// (see [`ToolProvider::completion_attributes_hook`]).
    pub fn with_completion_attributes(
        mut self,
        hook: impl Fn(&str, &Result<ToolOutput, ToolError>) -> Vec<(String, Value)> + Send + Sync + 'static,
    ) -> Self {
        self.completion_attributes = Some(Arc::new(hook));
        self
    }

    /// The tools, in order.
    pub fn typed_tools(&self) -> &[TypedTool] {
        &self.tools
    }

    /// How many tools the set has.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the set has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    fn find(&self, tool: &str) -> Option<&TypedTool> {
        self.tools.iter().find(|candidate| candidate.name() == tool)
    }
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSet")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("tools", &self.tools.iter().map(TypedTool::name).collect::<Vec<_>>())
            .field("required_roles", &self.required_roles)
            .field("cache_policies", &self.cache_policies)
            .field("approval_required", &self.approval_required)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl ToolProvider for ToolSet {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|tool| tool.definition().clone()).collect()
    }

    fn required_roles(&self, tool: &str) -> Vec<String> {
        let mut roles = self.required_roles.clone();
        if let Some(tool) = self.find(tool) {
            add_roles(&mut roles, tool.required_roles().iter().cloned());
        }
        roles
    }

    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        self.cache_policies
            .iter()
            .find(|(name, _)| name == tool)
            .map(|(_, policy)| *policy)
    }

    fn requires_approval(&self, tool: &str) -> bool {
        self.approval_required.iter().any(|name| name == tool)
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self.find(tool) {
            Some(typed) => typed.call(arguments, context).await,
            None => Err(ToolError::UnknownTool {
                name: tool.to_owned(),
                available: self.tools.iter().map(|t| t.name().to_owned()).collect(),
            }),
        }
    }

    fn span_attributes_hook(&self, tool: &str, arguments: &Value) -> Vec<(String, Value)> {
        self.span_attributes
            .as_ref()
            .map_or_else(Vec::new, |hook| hook(tool, arguments))
    }

    fn completion_attributes_hook(&self, tool: &str, outcome: &Result<ToolOutput, ToolError>) -> Vec<(String, Value)> {
        self.completion_attributes
            .as_ref()
            .map_or_else(Vec::new, |hook| hook(tool, outcome))
    }
}

/// Puts every tool of a provider behind extra roles, without changing the
/// provider.
///
/// ```
/// use std::sync::Arc;
/// use agent_core::ToolProvider;
/// use agent_tools::{RequireRoles, ToolSet};
///
/// let guarded = RequireRoles::new(Arc::new(ToolSet::new("sql", "Read-only SQL")), ["analyst"]);
/// assert_eq!(guarded.name(), "sql");
/// assert_eq!(guarded.required_roles("query"), ["analyst"]);
/// ```
#[derive(Clone)]
pub struct RequireRoles {
    inner: Arc<dyn ToolProvider>,
    roles: Vec<String>,
}

impl RequireRoles {
    /// Wraps `inner`, requiring `roles` for all its tools in addition to
    /// the roles it requires itself.
    pub fn new<I, S>(inner: Arc<dyn ToolProvider>, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut unique = Vec::new();
        add_roles(&mut unique, roles);
        Self { inner, roles: unique }
    }
}

impl fmt::Debug for RequireRoles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequireRoles")
            .field("provider", &self.inner.name())
            .field("roles", &self.roles)
            .finish()
    }
}

#[async_trait]
impl ToolProvider for RequireRoles {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.inner.tools()
    }

    fn required_roles(&self, tool: &str) -> Vec<String> {
        let mut roles = self.roles.clone();
        add_roles(&mut roles, self.inner.required_roles(tool));
        roles
    }

    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        self.inner.cache_policy(tool)
    }

    fn requires_approval(&self, tool: &str) -> bool {
        self.inner.requires_approval(tool)
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.inner.execute(tool, arguments, context).await
    }

    fn span_attributes_hook(&self, tool: &str, arguments: &Value) -> Vec<(String, Value)> {
        self.inner.span_attributes_hook(tool, arguments)
    }

    fn completion_attributes_hook(&self, tool: &str, outcome: &Result<ToolOutput, ToolError>) -> Vec<(String, Value)> {
        self.inner.completion_attributes_hook(tool, outcome)
    }
}

/// Appends `roles` to `list`, skipping those already in it (order kept).
pub(crate) fn add_roles<I, S>(list: &mut Vec<String>, roles: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    for role in roles {
        let role = role.into();
        if !list.contains(&role) {
            list.push(role);
        }
    }
}
