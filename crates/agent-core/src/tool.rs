//! Tools: their definitions, the context they run in, the providers that
//! group them by domain, and the registry port.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ToolApprover;

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Unique name the model calls it by.
    pub name: String,
    /// What it does and when to use it, written for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema). Shared: the same
    /// schema goes into every request, so copies of a definition are cheap.
    pub input_schema: Arc<Value>,
}

impl ToolDefinition {
    /// A definition.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema: Arc::new(input_schema),
        }
    }
}

/// What a tool returns on success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolOutput {
    /// Plain text.
    Text(String),
    /// A structured result, sent to the model as compact JSON.
    Json(Value),
    /// Text with images, documents or audio (a chart, a screenshot, a
    /// fetched PDF): providers that take media in a tool result get them
    /// there, the others in a user message right after it.
    Media {
        /// What the model reads besides the media.
        text: String,
        /// The media, in order.
        attachments: Vec<crate::Attachment>,
    },
}

impl ToolOutput {
    /// The text the model receives.
    pub fn to_content(&self) -> String {
        match self {
            Self::Text(text) | Self::Media { text, .. } => text.clone(),
            Self::Json(value) => compact_json(value),
        }
    }

    /// The text the model receives, the output consumed: text is moved,
    /// not copied.
    pub fn into_content(self) -> String {
        self.into_parts().0
    }

    /// The text and the media, the output consumed.
    pub fn into_parts(self) -> (String, Vec<crate::Attachment>) {
        match self {
            Self::Text(text) => (text, Vec::new()),
            Self::Json(value) => (compact_json(&value), Vec::new()),
            Self::Media { text, attachments } => (text, attachments),
        }
    }

    /// The media it carries (none for text and JSON).
    pub fn attachments(&self) -> &[crate::Attachment] {
        match self {
            Self::Media { attachments, .. } => attachments,
            _ => &[],
        }
    }
}

/// `value` as compact JSON, written into one buffer sized for a small
/// result (its `Display` grows a `String` from empty).
fn compact_json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

/// How the runner may reuse a tool's successful results: the tool is
/// idempotent (the same arguments give the same result and calling it again
/// changes nothing), so a call with canonically equal arguments (same
/// values, whatever the key order) may be answered from an earlier result
/// for up to `ttl`, without running the tool. Declared by
/// [`ToolProvider::cache_policy`]; failed calls are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CachePolicy {
    /// How long a result stays valid after the call that produced it.
    pub ttl: Duration,
}

impl CachePolicy {
    /// Results are reused for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self { ttl }
    }
}

/// Why a tool call failed. Its text is what the model reads, so it says what
/// to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// No enabled provider has a tool of this name.
    #[error("unknown tool `{name}`; available tools: {}", list(available))]
    UnknownTool {
        /// The requested name.
        name: String,
        /// Names of the enabled tools.
        available: Vec<String>,
    },
    /// The tool exists but its provider is disabled.
    #[error("tool `{name}` is disabled")]
    Disabled {
        /// The requested name.
        name: String,
    },
    /// The arguments do not match the tool's schema; the tool did not run.
    #[error("invalid arguments for `{tool}`: {}", problems.join("; "))]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// One line per problem, naming the argument and the rule.
        problems: Vec<String>,
    },
    /// The caller lacks a role the tool requires.
    #[error("permission denied for `{tool}`: requires role(s) {}", list(missing_roles))]
    PermissionDenied {
        /// The tool.
        tool: String,
        /// Roles the caller would need.
        missing_roles: Vec<String>,
    },
    /// The tool ran and failed.
    #[error("{message}")]
    Failed {
        /// What went wrong, for the model.
        message: String,
    },
    /// The tool panicked; the run goes on.
    #[error("tool `{tool}` crashed: {message}")]
    Panicked {
        /// The tool.
        tool: String,
        /// The panic message.
        message: String,
    },
    /// The tool did not finish in time.
    #[error("tool `{tool}` timed out after {} ms", after.as_millis())]
    TimedOut {
        /// The tool.
        tool: String,
        /// How long it was given.
        after: Duration,
    },
    /// The run was cancelled while the tool ran.
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    /// A tool's own failure with a message for the model.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
        }
    }
}

/// A tool's own failure from its message, so a tool can write
/// `Err("no such city".into())` or `.map_err(|e| e.to_string())?`.
impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::failed(message)
    }
}

/// A tool's own failure from its message (see `From<String>`).
impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::failed(message)
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

/// Who is asking, and the run's cancellation signal. Tools use it for
/// permission checks and to stop early.
#[derive(Clone, Default)]
pub struct ToolContext {
    /// The end user, when known.
    pub user_id: Option<String>,
    /// Roles the caller holds.
    pub roles: BTreeSet<String>,
    /// Free-form attributes (guild, channel, tenant, ...).
    pub attributes: BTreeMap<String, Value>,
    /// Fires when the run is cancelled.
    pub cancel: CancellationToken,
    /// The id of the tool call being executed (the runner sets it for each
    /// call; it is recorded as `gen_ai.tool.call.id`).
    pub call_id: Option<String>,
    /// The user's own words in the conversation, for tools that check that
    /// an argument came from the user (`agent_tools::UserWords` matches
    /// phrases against it): the text of every user message, joined with
    /// newlines, leaving out the user messages the runner writes on the
    /// user's behalf in text tool-call protocols (`<tool_response>` blocks,
    /// ReAct `Observation:` lines). The runner fills it from the
    /// conversation when it is unset; `None` means the conversation is not
    /// known.
    pub user_text: Option<Arc<str>>,
    /// Who decides, while the run waits, on calls of tools that require
    /// approval; without one such a run pauses
    /// ([`RunEnd::AwaitingApproval`](crate::RunEnd::AwaitingApproval)).
    pub approver: Option<Arc<dyn ToolApprover>>,
    /// Where a tool reports the usage of its own model calls (a handed-off
    /// sub-agent's run, [`report_usage`](Self::report_usage)); the runner
    /// sets a fresh one for each call and adds what was reported to the run.
    pub usage_sink: Option<crate::UsageSink>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("user_id", &self.user_id)
            .field("roles", &self.roles)
            .field("attributes", &self.attributes)
            .field("cancel", &self.cancel)
            .field("call_id", &self.call_id)
            .field("user_text", &self.user_text)
            .field("approver", &self.approver.as_ref().map(|_| "set"))
            .field("usage_sink", &self.usage_sink)
            .finish()
    }
}

impl ToolContext {
    /// An anonymous context with no roles.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the user id.
    pub fn with_user(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// Adds a role.
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.roles.insert(role.into());
        self
    }

    /// Adds an attribute.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }

    /// Sets the id of the tool call being executed.
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// Uses this cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Uses `text` as what the user has written in the conversation
    /// ([`user_text`](Self::user_text)).
    pub fn with_user_text(mut self, text: impl Into<Arc<str>>) -> Self {
        self.user_text = Some(text.into());
        self
    }

    /// Lets `approver` decide on calls that require approval, while the run
    /// waits.
    pub fn with_approver(mut self, approver: Arc<dyn ToolApprover>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Reports tokens (and their cost) the running tool spent on its own
    /// model calls, e.g. a sub-agent it handed a task to, so the calling run
    /// counts them. Does nothing outside a runner's tool call.
    pub fn report_usage(&self, usage: crate::Usage, cost_usd: Option<f64>) {
        if let Some(sink) = &self.usage_sink {
            sink.report(crate::DelegatedUsage::new(usage, cost_usd));
        }
    }

    /// The roles of `required` the caller does not hold.
    pub fn missing_roles(&self, required: &[String]) -> Vec<String> {
        required
            .iter()
            .filter(|role| !self.roles.contains(*role))
            .cloned()
            .collect()
    }
}

/// A named group of tools of one domain (math, travel, SQL, ...).
///
/// Implementations only run their tools; the registry validates arguments,
/// checks roles and records telemetry around [`execute`](Self::execute), so
/// those cannot be skipped. The `*_hook` methods let a provider add its own
/// attributes to that record.
#[async_trait]
pub trait ToolProvider: Send + Sync {
    /// The domain name used to enable or disable the group (`math`, `travel`).
    fn name(&self) -> &str;

    /// One line on what the group is for.
    fn description(&self) -> &str;

    /// The tools, in a stable order.
    fn tools(&self) -> Vec<ToolDefinition>;

    /// Roles a caller needs to run `tool` (default: none).
    fn required_roles(&self, tool: &str) -> Vec<String> {
        let _ = tool;
        Vec::new()
    }

    /// Whether `tool` is idempotent and its successful results may be
    /// reused, and for how long (default: `None`, every call runs).
    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        let _ = tool;
        None
    }

    /// Whether a call of `tool` must be approved by the user before it runs
    /// (see [`ToolApprover`]); default: no.
    fn requires_approval(&self, tool: &str) -> bool {
        let _ = tool;
        false
    }

    /// Runs `tool` with arguments already validated against its schema.
    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Attributes to record on the execution span before the tool runs.
    fn span_attributes_hook(&self, tool: &str, arguments: &Value) -> Vec<(String, Value)> {
        let _ = (tool, arguments);
        Vec::new()
    }

    /// Attributes to record with the completion event after the tool ran.
    fn completion_attributes_hook(&self, tool: &str, outcome: &Result<ToolOutput, ToolError>) -> Vec<(String, Value)> {
        let _ = (tool, outcome);
        Vec::new()
    }
}

/// The record of one execution through a [`ToolRegistry`].
#[derive(Debug, Clone)]
pub struct ToolExecution {
    /// The tool's output or why it failed.
    pub outcome: Result<ToolOutput, ToolError>,
    /// How long the call took, validation included.
    pub duration: Duration,
    /// The provider that ran it, when one was found.
    pub provider: Option<String>,
    /// Attributes added by the provider's hooks.
    pub attributes: Vec<(String, Value)>,
}

/// Problems registering or toggling providers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// A provider of this name is already registered.
    #[error("a tool provider named `{0}` is already registered")]
    DuplicateProvider(String),
    /// Two enabled providers define the same tool name.
    #[error("tool `{tool}` is defined by both `{first}` and `{second}`; disable one of them or rename the tool")]
    DuplicateTool {
        /// The tool name.
        tool: String,
        /// The provider registered first.
        first: String,
        /// The provider that clashes with it.
        second: String,
    },
    /// No provider of this name is registered.
    #[error("no tool provider named `{name}`; registered: {}", list(registered))]
    UnknownProvider {
        /// The requested name.
        name: String,
        /// Names of registered providers.
        registered: Vec<String>,
    },
}

/// The tools an agent can use, as the runner sees them: what to offer the
/// model ([`definitions`](Self::definitions)) and how to run a call
/// ([`execute`](Self::execute)), plus two per-tool policies with defaults.
///
/// Registration is not part of the port: the implementation (`agent-tools`'
/// `ToolBox`) has its own `register` and `set_enabled` methods, so anything
/// that can list and run tools (a remote tool server, a fixed table in a
/// test) can stand behind an agent.
#[async_trait]
pub trait ToolRegistry: Send + Sync {
    /// Definitions of every enabled tool, providers in registration order.
    fn definitions(&self) -> Vec<ToolDefinition>;

    /// The same definitions, shared: what every request of a run offers. A
    /// registry that keeps them (agent-tools' `ToolBox` does) hands out its
    /// own without copying; the default copies [`definitions`](Self::definitions).
    fn shared_definitions(&self) -> std::sync::Arc<[ToolDefinition]> {
        self.definitions().into()
    }

    /// The [`CachePolicy`] of the enabled tool `tool`, as its provider
    /// declares it; `None` for tools that are not cached, disabled or unknown
    /// (the default, for registries that do not support caching).
    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        let _ = tool;
        None
    }

    /// Whether calls of the enabled tool `tool` wait for the user's approval
    /// (its provider declares it, or the registry was told so); default: no.
    fn requires_approval(&self, tool: &str) -> bool {
        let _ = tool;
        false
    }

    /// Whether this call of `tool`, with these arguments, waits for the
    /// user's approval: a tool whose approval depends on its arguments
    /// (agent-tools' `require_approval_if`) asks only when they call for
    /// it. Default: [`requires_approval`](Self::requires_approval).
    fn approval_needed(&self, tool: &str, arguments: &Value) -> bool {
        let _ = arguments;
        self.requires_approval(tool)
    }

    /// Runs a tool by name on the first enabled provider that has it, after
    /// checking roles and validating `arguments` against its schema.
    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> ToolExecution;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn errors_read_as_instructions() {
        let error = ToolError::UnknownTool {
            name: "get_wether".into(),
            available: vec!["get_weather".into(), "calculator".into()],
        };
        assert_eq!(
            error.to_string(),
            "unknown tool `get_wether`; available tools: get_weather, calculator"
        );
        let error = ToolError::PermissionDenied {
            tool: "drop".into(),
            missing_roles: vec!["admin".into()],
        };
        assert_eq!(
            error.to_string(),
            "permission denied for `drop`: requires role(s) admin"
        );
    }

    #[test]
    fn messages_convert_into_tool_failures() {
        assert_eq!(ToolError::from("no such city"), ToolError::failed("no such city"));
        assert_eq!(ToolError::from(String::from("late")).to_string(), "late");
    }

    #[test]
    fn json_output_is_sent_compact() {
        assert_eq!(ToolOutput::from(json!({"a": [1, 2]})).to_content(), r#"{"a":[1,2]}"#);
        assert_eq!(ToolOutput::from("plain").to_content(), "plain");
        let value = json!({"city": "Paris", "temperature": 21.5, "tags": ["a", "b"], "nested": {"x": null}});
        let output = ToolOutput::from(value.clone());
        assert_eq!(
            output.to_content(),
            value.to_string(),
            "compact JSON, as Display writes it"
        );
        assert_eq!(output.clone().into_content(), output.to_content());
        assert_eq!(ToolOutput::from("plain").into_content(), "plain");
    }

    #[test]
    fn missing_roles_lists_only_what_is_absent() {
        let context = ToolContext::new().with_role("user");
        assert_eq!(
            context.missing_roles(&["user".into(), "admin".into()]),
            vec!["admin".to_owned()]
        );
    }
}
