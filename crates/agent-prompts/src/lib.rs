//! # agent-prompts
//!
//! Prompt templates for Agentry.
//!
//! - [`PromptTemplate`]: text with `{{name}}` placeholders (`{{ name }}` works
//!   too), parsed once. [`render`](PromptTemplate::render) fails with one
//!   error listing *every* missing variable, and inserts values literally (a
//!   value that contains `{{x}}` is never expanded). Write `{{{{` for a
//!   literal `{{`; single braces and `}}` need no escaping, so JSON examples
//!   can be written as they are.
//! - [`PromptStore`]: templates read from a directory (`NAME.md`, else
//!   `NAME.txt`), parsed once and cached (thread-safe).
//! - [`builtin`]: the prompts Agentry ships (classification, JSON extraction,
//!   question answering, the agent system prompt, ReAct, the text tool-call
//!   protocol, the forced final answer, the conversation summary).
//! - [`PromptSource`]: "load a template by name", implemented by the store,
//!   the built-ins and [`LayeredSource`] (e.g. a directory of overrides with
//!   the built-ins as fallback: [`PromptStore::with_builtin_fallback`]).
//! - [`render_tool_list`] and [`tool_names`]: tool definitions written out
//!   for the `tools` and `tool_names` variables.
//!
//! ```
//! use agent_prompts::{PromptError, PromptTemplate, builtin, render_tool_list};
//! use agent_core::ToolDefinition;
//! use serde_json::json;
//!
//! // Templates: strict rendering that reports every missing variable.
//! let template = PromptTemplate::parse("Dear {{ name }}, your order {{order_id}} ships {{when}}.")?;
//! assert_eq!(template.required_variables(), ["name", "order_id", "when"]);
//! match template.render([("name", "Ada")]) {
//!     Err(PromptError::MissingVariables { missing }) => assert_eq!(missing, ["order_id", "when"]),
//!     other => panic!("unexpected: {other:?}"),
//! }
//!
//! // Built-ins: the text tool-call protocol with a tool list.
//! let tools = [ToolDefinition::new("clock", "The current time.", json!({"type": "object"}))];
//! let prompt = builtin::get(builtin::TOOL_CALL_PROTOCOL)?.render([("tools", render_tool_list(&tools))])?;
//! assert!(prompt.contains("- clock: The current time."));
//! assert!(prompt.contains("<tool_call>"));
//! # Ok::<(), PromptError>(())
//! ```

pub mod builtin;
mod error;
mod source;
mod store;
mod template;
mod tools;

pub use error::{PromptError, SearchLocation, SyntaxErrorKind};
pub use source::{LayeredSource, PromptSource};
pub use store::{EXTENSIONS, PromptStore};
pub use template::PromptTemplate;
pub use tools::{render_tool_list, tool_names};
