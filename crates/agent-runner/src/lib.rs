//! # agent-runner
//!
//! The agentic loop. An [`Agent`] sends the conversation and its tools to a
//! model, runs the tools the model asks for (concurrently, validated,
//! identical calls of one reply collapsed into one, at most
//! [`DEFAULT_MAX_CALLS_PER_REPLY`] per reply unless configured, results of
//! idempotent tools reused from a [`ToolResultCache`]), feeds the
//! results back and repeats until the model answers, with guards against
//! loops, runaway iterations, failing tools and budgets, and keeps the
//! conversation within the model's context window: before a call that would
//! not fit, large old tool results are elided and the oldest turns summarised
//! by the model ([`context`], [`ContextPolicy`]; recorded in
//! [`AgentRunResult::compactions`](agent_core::AgentRunResult)), and a
//! provider's context-length error is met with one compaction and a retry.
//! `docs/loop.md` in the repository lists every behaviour.
//!
//! The decisions live in [`RunState`], a serde state machine that does no I/O;
//! [`Agent::run`] drives it. A run can therefore be saved between steps and
//! resumed ([`Agent::resume`]), or stepped by hand.
//!
//! Scenes and handoffs ([`scenes`]): a [`SceneRouter`] lets the model pick
//! one of several named sub-agents ([`Scene`]s, each with its own prompt,
//! tools and context-adding actors) through a function call, matching the
//! name forgivingly; an [`AgentTool`] offers an agent as another agent's
//! tool, its usage counted in the caller's run.
//!
//! Typed output: [`Agent::run_typed`] (a `serde` + `schemars` type) and
//! [`Agent::run_json`] (a JSON Schema value) send the schema as the
//! requests' response format, validate the answer and retry once with the
//! violations ([`typed`]).
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::{RunEnd, ToolContext, ToolRegistry};
//! use agent_runner::Agent;
//! use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = ScriptedClient::new()
//!     .respond(response::tool_calls([("lookup", json!({"q": "rust"}))]))
//!     .respond(response::text("Rust is a language."));
//! let registry = agent_tools::ToolBox::new();
//! let tools = TestTools::new("demo").with(TestTool::new("lookup", ToolBehaviour::Reply("a language".into())));
//! registry.register(Arc::new(tools), true).unwrap();
//!
//! let agent = Agent::builder(Arc::new(client)).tools(Arc::new(registry)).build();
//! let result = agent.run("What is Rust?").await.unwrap();
//! assert_eq!(result.stop_reason, RunEnd::Completed);
//! assert_eq!(result.tool_calls[0].result, "a language");
//! # }
//! ```

mod agent;
mod assemble;
mod batch;
mod budget;
mod cache;
mod chat;
mod checkpoint;
mod config;
pub mod context;
mod cutoff;
mod driver;
mod forced;
pub mod grounding;
pub mod guardrails;
pub mod history;
mod loops;
mod prompts;
mod protocol;
mod react;
mod request;
mod restore;
pub mod scenes;
mod state;
mod step;
mod stored;
mod telemetry;
pub mod typed;

pub use agent::{Agent, AgentBuilder, BuildError, RunError};
pub use cache::ToolResultCache;
pub use chat::ChatSession;
pub use checkpoint::RunCheckpoints;
#[allow(deprecated)]
pub use config::RequestOptions;
pub use config::{
    AgentConfig, Budget, ContextPolicy, DEFAULT_COMPACT_AT, DEFAULT_MAX_CALLS_PER_REPLY, DEFAULT_MAX_TOOL_RESULT_BYTES,
    Grounding, InvalidConfig, ModelSettings, RunConfig, ToolProtocol,
};
pub use guardrails::{Guardrail, Guardrails, RunHook, Verdict};
pub use protocol::Protocol;
pub use react::{ReactAgent, ReactOutcome, ReactStepRecord};
pub use request::{RunRequest, Session};
pub use scenes::{AgentTool, Scene, SceneActor, SceneError, SceneRouter};
pub use state::{ApprovalCheck, ApprovalError, ResumeError, ResumePolicy, RunState};
pub use step::{RunIdentity, Step, StepError, ToolOutcome};
pub use stored::{SAVED_RUN_FORMAT, SavedRun, SavedRunError, StoreCheckpoints, store_turn};
pub use typed::{SchemaViolation, TypedError, TypedRun, check_schema, schema_of};
