//! A scripted tool provider for the integration tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{ToolContext, ToolDefinition, ToolError, ToolOutput, ToolProvider};
use async_trait::async_trait;
use serde_json::{Value, json};

/// What a scripted tool does when called.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// Returns `"{provider}:{tool}"` as text.
    Answer,
    /// Panics with this message.
    Panic(&'static str),
    /// Sleeps this long, then answers.
    Sleep(Duration),
    /// Fails with this message.
    Fail(&'static str),
}

/// A provider whose tools behave as scripted and which records every call.
pub struct Scripted {
    pub name: String,
    pub tools: Vec<(ToolDefinition, Behaviour)>,
    pub roles: Vec<(String, Vec<String>)>,
    pub calls: Mutex<Vec<(String, Value)>>,
    pub tools_reads: AtomicUsize,
}

impl Scripted {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            tools: Vec::new(),
            roles: Vec::new(),
            calls: Mutex::new(Vec::new()),
            tools_reads: AtomicUsize::new(0),
        }
    }

    /// Adds a tool taking any object.
    pub fn tool(self, name: &str, behaviour: Behaviour) -> Self {
        self.tool_with_schema(name, json!({"type": "object", "properties": {}}), behaviour)
    }

    pub fn tool_with_schema(mut self, name: &str, schema: Value, behaviour: Behaviour) -> Self {
        self.tools
            .push((ToolDefinition::new(name, format!("{name} tool"), schema), behaviour));
        self
    }

    pub fn require(mut self, tool: &str, roles: &[&str]) -> Self {
        self.roles
            .push((tool.to_owned(), roles.iter().map(|r| (*r).to_owned()).collect()));
        self
    }

    pub fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }

    pub fn shared(self) -> Arc<Self> {
        Arc::new(self)
    }
}

#[async_trait]
impl ToolProvider for Scripted {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &'static str {
        "scripted test tools"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.tools_reads.fetch_add(1, Ordering::SeqCst);
        self.tools.iter().map(|(definition, _)| definition.clone()).collect()
    }

    fn required_roles(&self, tool: &str) -> Vec<String> {
        self.roles
            .iter()
            .filter(|(name, _)| name == tool)
            .flat_map(|(_, roles)| roles.clone())
            .collect()
    }

    async fn execute(&self, tool: &str, arguments: &Value, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.lock().unwrap().push((tool.to_owned(), arguments.clone()));
        let behaviour = self
            .tools
            .iter()
            .find(|(definition, _)| definition.name == tool)
            .map(|(_, behaviour)| behaviour.clone())
            .ok_or_else(|| ToolError::failed("not scripted"))?;
        match behaviour {
            Behaviour::Answer => Ok(ToolOutput::Text(format!("{}:{tool}", self.name))),
            Behaviour::Panic(message) => panic!("{message}"),
            Behaviour::Sleep(duration) => {
                tokio::time::sleep(duration).await;
                Ok(ToolOutput::Text(format!("{}:{tool}", self.name)))
            }
            Behaviour::Fail(message) => Err(ToolError::failed(message)),
        }
    }

    fn span_attributes_hook(&self, tool: &str, arguments: &Value) -> Vec<(String, Value)> {
        vec![
            ("test.tool".to_owned(), json!(tool)),
            (
                "test.argument_count".to_owned(),
                json!(arguments.as_object().map_or(0, serde_json::Map::len)),
            ),
        ]
    }

    fn completion_attributes_hook(&self, _tool: &str, outcome: &Result<ToolOutput, ToolError>) -> Vec<(String, Value)> {
        vec![("test.ok".to_owned(), json!(outcome.is_ok()))]
    }
}

/// The text of a successful outcome; panics with the error otherwise.
pub fn text(outcome: &Result<ToolOutput, ToolError>) -> String {
    match outcome {
        Ok(output) => output.to_content(),
        Err(error) => panic!("expected success, got error: {error}"),
    }
}

/// The error of a failed outcome; panics on success.
pub fn error(outcome: &Result<ToolOutput, ToolError>) -> ToolError {
    match outcome {
        Ok(output) => panic!("expected an error, got {output:?}"),
        Err(error) => error.clone(),
    }
}
