//! # agentry
//!
//! Agentry in one dependency: an agentic loop ([`Agent`](prelude::Agent)),
//! typed tools ([`TypedTool`](prelude::TypedTool)), the model providers and
//! tool domains you turn on with cargo features, and a [`prelude`] with
//! what a program needs.
//!
//! | feature | what it adds | default |
//! | --- | --- | --- |
//! | `openai` | [`openai`]: OpenAI, Azure OpenAI, any OpenAI-compatible server | yes |
//! | `anthropic` | `anthropic`: Claude (Messages API) | |
//! | `gemini` | `gemini`: Google Gemini | |
//! | `ollama` | `ollama`: an Ollama server | |
//! | `llama` | `llama`: a GGUF model in-process (builds llama.cpp: needs cmake and clang) | |
//! | `math` | [`math`]: calculator and arithmetic tools | yes |
//! | `travel` | `travel`: the travel-assistant demo tools | |
//! | `sql` | `sql`: read-only SQL over SQLite (bundles SQLite) | |
//! | `web` | `web`: guarded web fetch and search | |
//! | `mcp` | `mcp`: tools of MCP servers | |
//! | `full` | every feature above except `llama` | |
//!
//! The layers stay available as modules: [`core`] (messages, ports,
//! events), [`tools`] (registry, typed tools), [`runner`] (the loop),
//! [`prompts`], [`parse`], and one module per enabled provider and domain.
//! [`ProviderConfig`] picks a provider from configuration.
//!
//! ## Tool arguments: `serde` and `schemars`
//!
//! A typed tool's arguments derive `Deserialize` and `JsonSchema`; the
//! schema the model sees comes from the type and its doc comments.
//! `schemars` needs nothing in your `Cargo.toml`: its derive refers to
//! `schemars::…` by a relative path, which `use agentry::prelude::*;`
//! (or `use agentry::schemars;`) puts in scope, so it is always the version
//! Agentry uses. `serde`'s derive needs the `serde` crate itself: either
//! depend on `serde` (any 1.x, with its `derive` feature), or add
//! `#[serde(crate = "agentry::serde")]` to the type.
//!
//! ```
//! use std::sync::Arc;
//! use agentry::prelude::*;
//! use agent_testing::{ScriptedClient, response};
//!
//! /// Arguments of `add`.
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     /// First addend.
//!     a: f64,
//!     /// Second addend.
//!     b: f64,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Any LlmClient goes here (OpenAiClient, ...); this one replays a script.
//! let client = ScriptedClient::new()
//!     .respond(response::tool_calls([("add", serde_json::json!({"a": 2, "b": 3}))]))
//!     .respond(response::text("2 + 3 = 5"));
//! let agent = Agent::builder(Arc::new(client))
//!     .tool(TypedTool::new("add", "Adds two numbers.", |args: Add, _: ToolContext| async move {
//!         Ok((args.a + args.b).to_string())
//!     }))
//!     .build();
//! let result = agent.prompt("What is 2 + 3?").await?;
//! assert_eq!(result.tool_calls[0].result, "5");
//! assert_eq!(result.response, "2 + 3 = 5");
//! # Ok(())
//! # }
//! ```

pub mod prelude;
#[cfg(feature = "any-provider")]
mod provider;

#[cfg(feature = "any-provider")]
pub use provider::ProviderConfig;

/// The ports: messages, requests, `LlmClient`, tool traits, events, usage
/// and cost (`agent-core`).
pub use agent_core as core;
/// JSON and tool calls pulled out of model text, ReAct steps (`agent-parse`).
pub use agent_parse as parse;
/// `{{var}}` templates and the template store (`agent-prompts`).
pub use agent_prompts as prompts;
/// The agentic loop: [`Agent`](runner::Agent), its builder and policies
/// (`agent-runner`).
pub use agent_runner as runner;
/// The tool registry, typed tools and argument validation (`agent-tools`).
pub use agent_tools as tools;

/// HTTP plumbing of the remote providers: `HttpConfig`, `SecretString`
/// (`agent-http`).
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini", feature = "ollama"))]
pub use agent_http as http;

/// OpenAI, Azure OpenAI and OpenAI-compatible servers (`agent-provider-openai`).
#[cfg(feature = "openai")]
pub use agent_provider_openai as openai;

/// Anthropic's Messages API (`agent-provider-anthropic`).
#[cfg(feature = "anthropic")]
pub use agent_provider_anthropic as anthropic;

/// Google's Gemini API (`agent-provider-gemini`).
#[cfg(feature = "gemini")]
pub use agent_provider_gemini as gemini;

/// An Ollama server (`agent-provider-ollama`).
#[cfg(feature = "ollama")]
pub use agent_provider_ollama as ollama;

/// A GGUF model run in-process by llama.cpp (`agent-provider-llama`).
#[cfg(feature = "llama")]
pub use agent_provider_llama as llama;

/// The calculator and arithmetic tools: `tools_from(Arc::new(math::tool_set()))`
/// (`agent-tools-math`).
#[cfg(feature = "math")]
pub use agent_tools_math as math;

/// The travel-assistant demo tools (`agent-tools-travel`).
#[cfg(feature = "travel")]
pub use agent_tools_travel as travel;

/// Read-only SQL over SQLite (`agent-tools-sql`).
#[cfg(feature = "sql")]
pub use agent_tools_sql as sql;

/// Guarded web fetch and search (`agent-tools-web`).
#[cfg(feature = "web")]
pub use agent_tools_web as web;

/// Tools of MCP servers, and serving tools over MCP (`agent-tools-mcp`).
#[cfg(feature = "mcp")]
pub use agent_tools_mcp as mcp;

/// The `schemars` Agentry generates tool schemas with; its `JsonSchema`
/// derive finds it through [`prelude`] (see the crate documentation).
pub use schemars_crate as schemars;
/// `serde`, for `#[serde(crate = "agentry::serde")]`.
pub use serde;
/// `serde_json`, for JSON tool results and `json!`.
pub use serde_json;

/// The workspace README's example, compiled as a doctest.
#[cfg(all(doctest, feature = "openai"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExample;
