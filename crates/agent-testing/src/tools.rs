//! A configurable [`ToolProvider`] for tests.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{ToolContext, ToolDefinition, ToolError, ToolOutput, ToolProvider};
use async_trait::async_trait;
use serde_json::{Value, json};

/// A function computing a tool's output from its arguments.
pub type ComputeFn = Arc<dyn Fn(&Value) -> Result<ToolOutput, ToolError> + Send + Sync>;

/// What a [`TestTool`] does when called.
#[derive(Clone)]
pub enum ToolBehaviour {
    /// Returns this output.
    Reply(ToolOutput),
    /// Returns the arguments it was given, as JSON.
    Echo,
    /// Computes the output from the arguments.
    Compute(ComputeFn),
    /// Fails with this message.
    Fail(String),
    /// Panics with this message.
    Panic(String),
}

impl std::fmt::Debug for ToolBehaviour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Reply(output) => f.debug_tuple("Reply").field(output).finish(),
            Self::Echo => f.write_str("Echo"),
            Self::Compute(_) => f.write_str("Compute(..)"),
            Self::Fail(message) => f.debug_tuple("Fail").field(message).finish(),
            Self::Panic(message) => f.debug_tuple("Panic").field(message).finish(),
        }
    }
}

/// One tool of a [`TestTools`] provider.
#[derive(Debug, Clone)]
pub struct TestTool {
    definition: ToolDefinition,
    behaviour: ToolBehaviour,
    delay: Duration,
    roles: Vec<String>,
    calls: Arc<AtomicUsize>,
}

impl TestTool {
    /// A tool that accepts any object and behaves as told.
    pub fn new(name: impl Into<String>, behaviour: ToolBehaviour) -> Self {
        let name = name.into();
        Self {
            definition: ToolDefinition::new(
                name.clone(),
                format!("Test tool {name}."),
                json!({"type": "object", "properties": {}}),
            ),
            behaviour,
            delay: Duration::ZERO,
            roles: Vec::new(),
            calls: Arc::default(),
        }
    }

    /// Replaces the argument schema.
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.definition.input_schema = std::sync::Arc::new(schema);
        self
    }

    /// Sleeps this long before answering (cancellable).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Requires these roles.
    pub fn with_roles<R: Into<String>>(mut self, roles: impl IntoIterator<Item = R>) -> Self {
        self.roles = roles.into_iter().map(Into::into).collect();
        self
    }

    /// A counter of executions that stays valid after the tool is moved into
    /// a provider.
    pub fn call_counter(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.calls)
    }
}

/// A [`ToolProvider`] made of [`TestTool`]s.
#[derive(Debug, Clone)]
pub struct TestTools {
    name: String,
    tools: BTreeMap<String, TestTool>,
    order: Vec<String>,
}

impl TestTools {
    /// An empty provider named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tools: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    /// Adds a tool.
    pub fn with(mut self, tool: TestTool) -> Self {
        let name = tool.definition.name.clone();
        if self.tools.insert(name.clone(), tool).is_none() {
            self.order.push(name);
        }
        self
    }

    /// How many times `tool` ran.
    pub fn calls(&self, tool: &str) -> usize {
        self.tools.get(tool).map_or(0, |t| t.calls.load(Ordering::SeqCst))
    }
}

#[async_trait]
impl ToolProvider for TestTools {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &'static str {
        "Configurable tools for tests."
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.order
            .iter()
            .filter_map(|name| self.tools.get(name))
            .map(|tool| tool.definition.clone())
            .collect()
    }

    fn required_roles(&self, tool: &str) -> Vec<String> {
        self.tools.get(tool).map(|t| t.roles.clone()).unwrap_or_default()
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(test_tool) = self.tools.get(tool) else {
            return Err(ToolError::failed(format!("test provider has no tool `{tool}`")));
        };
        test_tool.calls.fetch_add(1, Ordering::SeqCst);
        if !test_tool.delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(test_tool.delay) => {}
                () = context.cancel.cancelled() => return Err(ToolError::Cancelled),
            }
        }
        match &test_tool.behaviour {
            ToolBehaviour::Reply(output) => Ok(output.clone()),
            ToolBehaviour::Echo => Ok(ToolOutput::Json(arguments.clone())),
            ToolBehaviour::Compute(compute) => compute(arguments),
            ToolBehaviour::Fail(message) => Err(ToolError::failed(message.clone())),
            ToolBehaviour::Panic(message) => panic!("{message}"),
        }
    }
}
