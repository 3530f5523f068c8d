//! # agent-parse
//!
//! Robust parsing of model output, for models and providers without native
//! structured output or tool calling:
//!
//! - **JSON extraction** ([`extract`], [`extract_json`], [`JsonExtractor`]):
//!   the whole text, a code fence, or the first balanced `{...}` / `[...]`
//!   found by a string-aware scan. Lenient mode repairs what models get
//!   wrong ([`repair_json`]: trailing commas, single quotes, `True`/`None`,
//!   unquoted keys, truncated output) and says that it did. Errors say what
//!   was found and why it did not parse.
//! - **Tool calls in text** ([`ToolCallParser`]): `<tool_call>` blocks,
//!   bare or fenced JSON call objects, ReAct `Action:` lines and
//!   `use tool with a=1` lines; the text around the calls is kept.
//! - **ReAct steps** ([`parse_react_step`]): thought, action and input, or
//!   final answer.
//! - **Streaming** ([`StreamingToolCallFilter`]): hides `<tool_call>`
//!   blocks from streamed text as it arrives and collects the calls.
//!
//! Every parser is total (no panic on any input) and linear in the length
//! of its input.
//!
//! ```
//! use agent_parse::{ReactKind, ToolCallParser, extract, parse_react_step};
//! use serde_json::json;
//!
//! // Typed JSON from a chatty reply.
//! #[derive(serde::Deserialize)]
//! struct Answer { city: String, confidence: f64 }
//! let answer: Answer = extract("Sure!\n```json\n{\"city\": \"Paris\", \"confidence\": 0.9}\n```")?;
//! assert_eq!(answer.city, "Paris");
//!
//! // Tool calls written as text, with synthesised ids.
//! let reply = ToolCallParser::new().parse(
//!     "Checking.\n<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}</tool_call>",
//! );
//! assert_eq!(reply.text, "Checking.");
//! let calls = reply.tool_calls("call_");
//! assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("call_0", "calculator"));
//!
//! // A ReAct step.
//! let step = parse_react_step("Thought: easy\nAction: calculator(expression=\"6*7\")");
//! assert_eq!(step.kind, ReactKind::Action { tool: "calculator".into(), input: json!({"expression": "6*7"}) });
//! # Ok::<(), agent_parse::ExtractError>(())
//! ```

mod fence;
mod json;
mod kv;
mod react;
mod repair;
mod scan;
mod streaming;
mod text;
mod tool_calls;

pub use json::{
    ExtractError, Extracted, JsonExtractor, JsonKind, JsonSource, extract, extract_json, extract_json_lenient,
    extract_lenient,
};
pub use react::{ReactKind, ReactStep, parse_react_step};
pub use repair::{MAX_DEPTH, repair_json};
pub use streaming::{CLOSE_TAG, OPEN_TAG, StreamingToolCallFilter};
pub use tool_calls::{CallFormat, MalformedCall, ParsedCall, ParsedReply, ToolCallParser};
