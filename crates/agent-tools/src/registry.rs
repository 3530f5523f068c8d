//! [`ToolBox`]: the [`ToolRegistry`] implementation.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use agent_core::{CachePolicy, RegistryError, ToolContext, ToolDefinition, ToolExecution, ToolProvider, ToolRegistry};
use async_trait::async_trait;
use serde_json::Value;

use crate::approval::{ApprovalCondition, ApprovalPredicate};
use crate::validate::{ArgumentValidator, SchemaError};

/// The tool registry: providers registered enabled or disabled, toggled at
/// runtime by name, and a single execution path that checks roles,
/// validates arguments, guards against panics, cancellation and timeouts,
/// and records telemetry around every call (see [`crate::telemetry`]).
///
/// - [`definitions`](ToolRegistry::definitions) lists the enabled tools,
///   providers in registration order and tools in each provider's order. The
///   list is cached and rebuilt only when providers change.
/// - Tool names are unique across enabled providers: registering or enabling
///   a provider that would define a name twice fails with
///   [`RegistryError::DuplicateTool`]. A disabled provider may share names
///   with enabled ones.
/// - Each provider's [`tools`](ToolProvider::tools) is read once, at
///   registration, and every schema is compiled then. A schema that does not
///   compile does not fail registration (the port has no error for it);
///   it is logged, listed by [`invalid_schemas`](Self::invalid_schemas), and
///   calls to that tool fail with [`ToolError::Failed`](agent_core::ToolError::Failed)
///   without running it.
///
/// The registry is `Send + Sync`; share it behind an `Arc`. Locks are held
/// only for lookups, never while a tool runs.
pub struct ToolBox {
    state: RwLock<State>,
    timeout: Option<Duration>,
    /// Tools whose calls wait for the user's approval, besides those whose
    /// provider declares it.
    approval_required: HashSet<String>,
    /// Tools whose calls wait for approval when one of these predicates
    /// holds on their arguments.
    approval_rules: HashMap<String, Vec<ApprovalPredicate>>,
}

#[derive(Default)]
struct State {
    providers: Vec<ProviderEntry>,
    enabled: Snapshot,
}

struct ProviderEntry {
    name: String,
    provider: Arc<dyn ToolProvider>,
    enabled: bool,
    tools: Vec<Arc<ToolEntry>>,
}

/// One tool of a provider, with its compiled schema.
pub(crate) struct ToolEntry {
    pub(crate) definition: ToolDefinition,
    pub(crate) validator: Result<ArgumentValidator, SchemaError>,
    /// Its metrics' keys, labelled with its name and its provider's.
    pub(crate) metric_keys: crate::telemetry::ToolMetricKeys,
}

/// What the enabled providers offer, rebuilt on every change.
#[derive(Default)]
struct Snapshot {
    definitions: Arc<[ToolDefinition]>,
    /// Tool name -> (provider index, tool index).
    routes: HashMap<String, (usize, usize)>,
}

/// Where a call goes.
pub(crate) enum Resolved {
    /// An enabled provider has the tool.
    Found {
        provider: Arc<dyn ToolProvider>,
        provider_name: String,
        tool: Arc<ToolEntry>,
    },
    /// Only disabled providers have it.
    Disabled,
    /// No provider has it; the enabled tools' names.
    Unknown { available: Vec<String> },
}

impl ToolBox {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            state: RwLock::new(State::default()),
            timeout: None,
            approval_required: HashSet::new(),
            approval_rules: HashMap::new(),
        }
    }

    /// A builder, to register providers and options in one expression.
    pub fn builder() -> ToolBoxBuilder {
        ToolBoxBuilder::default()
    }

    /// How long a tool may run before it fails with
    /// [`ToolError::TimedOut`](agent_core::ToolError::TimedOut); `None` for
    /// no limit (the default).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Names of all registered providers, in registration order.
    pub fn provider_names(&self) -> Vec<String> {
        self.read().providers.iter().map(|entry| entry.name.clone()).collect()
    }

    /// The tools whose calls wait for approval whatever their provider
    /// declares ([`ToolBoxBuilder::require_approval`]).
    pub fn approvals(&self) -> impl Iterator<Item = &str> {
        self.approval_required.iter().map(String::as_str)
    }

    /// The tools whose calls wait for approval when their arguments call
    /// for it ([`ToolBoxBuilder::require_approval_if`]).
    pub fn conditional_approvals(&self) -> impl Iterator<Item = &str> {
        self.approval_rules.keys().map(String::as_str)
    }

    /// Whether the provider serving the enabled tool `tool` declares that
    /// its calls wait for approval.
    fn provider_requires_approval(&self, tool: &str) -> bool {
        let provider = {
            let state = self.read();
            let Some(&(provider_index, _)) = state.enabled.routes.get(tool) else {
                return false;
            };
            Arc::clone(&state.providers[provider_index].provider)
        };
        provider.requires_approval(tool)
    }

    /// The enabled providers (the tool domains), in registration order.
    pub fn providers(&self) -> Vec<Arc<dyn ToolProvider>> {
        self.read()
            .providers
            .iter()
            .filter(|entry| entry.enabled)
            .map(|entry| Arc::clone(&entry.provider))
            .collect()
    }

    /// The names of the enabled providers, in registration order.
    pub fn domains(&self) -> Vec<String> {
        self.read()
            .providers
            .iter()
            .filter(|entry| entry.enabled)
            .map(|entry| entry.name.clone())
            .collect()
    }

    /// Whether a provider of this name is registered and enabled.
    pub fn is_enabled(&self, provider: &str) -> bool {
        self.read()
            .providers
            .iter()
            .any(|entry| entry.name == provider && entry.enabled)
    }

    /// The cached definitions of the enabled tools, without copying them.
    pub fn shared_definitions(&self) -> Arc<[ToolDefinition]> {
        Arc::clone(&self.read().enabled.definitions)
    }

    /// Tools (of any provider, enabled or not) whose input schema does not
    /// compile, with the reason: `(provider, tool, error)`.
    pub fn invalid_schemas(&self) -> Vec<(String, String, SchemaError)> {
        let state = self.read();
        let mut invalid = Vec::new();
        for entry in &state.providers {
            for tool in &entry.tools {
                if let Err(error) = &tool.validator {
                    invalid.push((entry.name.clone(), tool.definition.name.clone(), error.clone()));
                }
            }
        }
        invalid
    }

    /// Finds where a call to `tool` goes. The lock is released on return.
    pub(crate) fn resolve(&self, tool: &str) -> Resolved {
        let state = self.read();
        if let Some(&(provider_index, tool_index)) = state.enabled.routes.get(tool) {
            let entry = &state.providers[provider_index];
            return Resolved::Found {
                provider: Arc::clone(&entry.provider),
                provider_name: entry.name.clone(),
                tool: Arc::clone(&entry.tools[tool_index]),
            };
        }
        let disabled = state
            .providers
            .iter()
            .any(|entry| !entry.enabled && entry.tools.iter().any(|t| t.definition.name == tool));
        if disabled {
            Resolved::Disabled
        } else {
            Resolved::Unknown {
                available: state.enabled.definitions.iter().map(|d| d.name.clone()).collect(),
            }
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        // No code that can panic runs under the lock; recover if it ever did.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for ToolBox {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ToolBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read();
        let mut providers = f.debug_map();
        for entry in &state.providers {
            let tools: Vec<&str> = entry.tools.iter().map(|t| t.definition.name.as_str()).collect();
            providers.entry(
                &entry.name,
                &format_args!("{} {tools:?}", if entry.enabled { "enabled" } else { "disabled" }),
            );
        }
        providers.finish()
    }
}

impl ToolBox {
    /// Adds a provider, enabled or disabled.
    ///
    /// # Errors
    ///
    /// [`RegistryError::DuplicateProvider`] if a provider of this name is
    /// registered; [`RegistryError::DuplicateTool`] if the provider lists a
    /// tool name twice, or, `enabled`, shares one with an enabled provider.
    pub fn register(&self, provider: Arc<dyn ToolProvider>, enabled: bool) -> Result<(), RegistryError> {
        // Call into the provider and compile schemas before taking the lock.
        let name = provider.name().to_owned();
        let definitions = provider.tools();
        let mut seen = HashSet::new();
        for definition in &definitions {
            if !seen.insert(definition.name.as_str()) {
                return Err(RegistryError::DuplicateTool {
                    tool: definition.name.clone(),
                    first: name.clone(),
                    second: name,
                });
            }
        }
        let tools: Vec<Arc<ToolEntry>> = definitions
            .into_iter()
            .map(|definition| {
                let validator = ArgumentValidator::new(&definition.input_schema);
                if let Err(error) = &validator {
                    tracing::warn!(
                        target: crate::telemetry::EVENT_TARGET,
                        provider = %name,
                        gen_ai.tool.name = %definition.name,
                        %error,
                        "tool input schema does not compile; calls to this tool will fail"
                    );
                }
                let metric_keys = crate::telemetry::ToolMetricKeys::new(&definition.name, &name);
                Arc::new(ToolEntry {
                    definition,
                    validator,
                    metric_keys,
                })
            })
            .collect();

        let mut state = self.write();
        if state.providers.iter().any(|entry| entry.name == name) {
            return Err(RegistryError::DuplicateProvider(name));
        }
        if enabled && let Some(error) = clash(&state, &name, state.providers.len(), &tools) {
            return Err(error);
        }
        state.providers.push(ProviderEntry {
            name,
            provider,
            enabled,
            tools,
        });
        if enabled {
            rebuild(&mut state);
        }
        Ok(())
    }

    /// Enables or disables a provider by name.
    ///
    /// # Errors
    ///
    /// [`RegistryError::UnknownProvider`] for a name not registered;
    /// [`RegistryError::DuplicateTool`] if enabling it would define a tool
    /// name twice.
    pub fn set_enabled(&self, provider: &str, enabled: bool) -> Result<(), RegistryError> {
        let mut state = self.write();
        let Some(index) = state.providers.iter().position(|entry| entry.name == provider) else {
            return Err(RegistryError::UnknownProvider {
                name: provider.to_owned(),
                registered: state.providers.iter().map(|entry| entry.name.clone()).collect(),
            });
        };
        if state.providers[index].enabled == enabled {
            return Ok(());
        }
        if enabled {
            let entry = &state.providers[index];
            if let Some(error) = clash(&state, &entry.name, index, &entry.tools) {
                return Err(error);
            }
        }
        state.providers[index].enabled = enabled;
        rebuild(&mut state);
        Ok(())
    }
}

#[async_trait]
impl ToolRegistry for ToolBox {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.read().enabled.definitions.to_vec()
    }

    fn shared_definitions(&self) -> Arc<[ToolDefinition]> {
        ToolBox::shared_definitions(self)
    }

    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        // The provider is called outside the lock.
        let provider = {
            let state = self.read();
            let &(provider_index, _) = state.enabled.routes.get(tool)?;
            Arc::clone(&state.providers[provider_index].provider)
        };
        provider.cache_policy(tool)
    }

    fn requires_approval(&self, tool: &str) -> bool {
        if self.approval_required.contains(tool) || self.approval_rules.contains_key(tool) {
            return true;
        }
        self.provider_requires_approval(tool)
    }

    fn approval_needed(&self, tool: &str, arguments: &Value) -> bool {
        if self.approval_required.contains(tool) || self.provider_requires_approval(tool) {
            return true;
        }
        self.approval_rules
            .get(tool)
            .is_some_and(|rules| rules.iter().any(|rule| rule(arguments)))
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> ToolExecution {
        crate::execution::execute(self, tool, arguments, context).await
    }
}

/// The error if the tools of provider `name` (at registration position
/// `index`) would share a name with an enabled provider.
fn clash(state: &State, name: &str, index: usize, tools: &[Arc<ToolEntry>]) -> Option<RegistryError> {
    tools.iter().find_map(|tool| {
        let &(other_index, _) = state.enabled.routes.get(&tool.definition.name)?;
        let other = state.providers[other_index].name.clone();
        let (first, second) = if other_index < index {
            (other, name.to_owned())
        } else {
            (name.to_owned(), other)
        };
        Some(RegistryError::DuplicateTool {
            tool: tool.definition.name.clone(),
            first,
            second,
        })
    })
}

/// Rebuilds the enabled snapshot from the providers.
fn rebuild(state: &mut State) {
    let mut definitions = Vec::new();
    let mut routes = HashMap::new();
    for (provider_index, entry) in state.providers.iter().enumerate().filter(|(_, entry)| entry.enabled) {
        for (tool_index, tool) in entry.tools.iter().enumerate() {
            routes
                .entry(tool.definition.name.clone())
                .or_insert((provider_index, tool_index));
            definitions.push(tool.definition.clone());
        }
    }
    state.enabled = Snapshot {
        definitions: definitions.into(),
        routes,
    };
}

/// Builds a [`ToolBox`] in one expression.
///
/// ```
/// use std::sync::Arc;
/// use agent_tools::{ToolBox, ToolSet};
///
/// let registry = ToolBox::builder()
///     .provider(Arc::new(ToolSet::new("math", "Arithmetic")))
///     .disabled_provider(Arc::new(ToolSet::new("admin", "Maintenance")))
///     .timeout(std::time::Duration::from_secs(30))
///     .build()?;
/// assert_eq!(registry.provider_names(), ["math", "admin"]);
/// assert!(!registry.is_enabled("admin"));
/// # Ok::<(), agent_core::RegistryError>(())
/// ```
#[derive(Default)]
pub struct ToolBoxBuilder {
    providers: Vec<(Arc<dyn ToolProvider>, bool)>,
    timeout: Option<Duration>,
    approval_required: HashSet<String>,
    approval_rules: HashMap<String, Vec<ApprovalPredicate>>,
}

impl ToolBoxBuilder {
    /// Adds an enabled provider.
    pub fn provider(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.providers.push((provider, true));
        self
    }

    /// Adds a disabled provider, to be enabled later with
    /// [`set_enabled`](ToolBox::set_enabled).
    pub fn disabled_provider(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.providers.push((provider, false));
        self
    }

    /// Adds a provider, enabled or not.
    pub fn provider_enabled(mut self, provider: Arc<dyn ToolProvider>, enabled: bool) -> Self {
        self.providers.push((provider, enabled));
        self
    }

    /// Fails any tool that runs longer than `timeout` with
    /// [`ToolError::TimedOut`](agent_core::ToolError::TimedOut). Needs a
    /// Tokio runtime with the time driver enabled.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Calls of these tools wait for the user's approval (see
    /// [`ToolApprover`](agent_core::ToolApprover)), whatever their provider
    /// declares.
    pub fn require_approval<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.approval_required.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Calls of `tool` wait for the user's approval when `predicate` holds
    /// on their arguments (any of its predicates, when given several); a
    /// tool also named by [`require_approval`](Self::require_approval), or
    /// whose provider declares it, always waits.
    ///
    /// ```
    /// use agent_core::ToolRegistry;
    /// use agent_tools::ToolBox;
    /// use serde_json::json;
    ///
    /// let registry = ToolBox::builder()
    ///     .require_approval_if("transfer", |args| args["amount"].as_f64().is_none_or(|amount| amount > 100.0))
    ///     .build()?;
    /// assert!(registry.approval_needed("transfer", &json!({"amount": 250})));
    /// assert!(!registry.approval_needed("transfer", &json!({"amount": 20})));
    /// # Ok::<(), agent_core::RegistryError>(())
    /// ```
    pub fn require_approval_if(
        mut self,
        tool: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.approval_rules
            .entry(tool.into())
            .or_default()
            .push(Arc::new(predicate));
        self
    }

    /// Calls of `tool` wait for the user's approval when `condition`
    /// holds on their arguments ([`require_approval_if`](Self::require_approval_if)
    /// with a configured condition).
    pub fn require_approval_when(mut self, tool: impl Into<String>, condition: ApprovalCondition) -> Self {
        self.approval_rules
            .entry(tool.into())
            .or_default()
            .push(condition.into_predicate());
        self
    }

    /// Registers the providers in order; the first error wins.
    pub fn build(self) -> Result<ToolBox, RegistryError> {
        let registry = ToolBox {
            state: RwLock::new(State::default()),
            timeout: self.timeout,
            approval_required: self.approval_required,
            approval_rules: self.approval_rules,
        };
        for (provider, enabled) in self.providers {
            registry.register(provider, enabled)?;
        }
        Ok(registry)
    }
}

impl fmt::Debug for ToolBoxBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolBoxBuilder")
            .field(
                "providers",
                &self
                    .providers
                    .iter()
                    .map(|(p, enabled)| (p.name(), *enabled))
                    .collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("approval_required", &self.approval_required)
            .field("approval_rules", &self.approval_rules.keys().collect::<Vec<_>>())
            .finish()
    }
}
