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
//! | `telemetry` | [`telemetry`]: OTLP/HTTP export of the GenAI spans and metrics | |
//! | `config` | [`config`]: `agentry.toml`, environment and flags, read with figment | |
//! | `full` | every feature above except `llama` and `telemetry` | |
//!
//! The layers stay available as modules: [`core`] (messages, ports,
//! events), [`tools`] (registry, typed tools), [`runner`] (the loop),
//! [`prompts`], [`parse`], and one module per enabled provider and domain.
//!
//! ## Configuration: the provider and tool-domain factory
//!
//! Agentry's one factory from configuration to parts, which the `agentry`
//! CLI uses too:
//!
//! - [`ProviderKind`] names every provider (`llama`, `openai`,
//!   `azure-openai`, `openai-compatible`, `anthropic`, `gemini`,
//!   `ollama`), its cargo feature, whether this build has it, its key
//!   variable; [`ProviderConfig::from_table`] reads one from its
//!   `[providers.NAME]` table, where every option, `model` and `base_url`
//!   included, is a key; [`ProviderConfig::client_with_env`] makes the
//!   client, looking the key up with the function you give.
//! - [`ToolDomain`] names the built-in tool domains (`math`, `travel`,
//!   `sql`, `web`); [`ToolDomain::build`] makes one from its `[tools.NAME]`
//!   table, `mcp_domain` (feature `mcp`) an MCP server's from its
//!   `[mcp.servers.NAME]` table; a [`ToolBox`] (agent-tools' registry)
//!   holds the enabled ones and runs their calls.
//! - [`SceneConfig`] is a `[scenes.NAME]` table, a scene of a
//!   [`SceneRouter`](runner::SceneRouter).
//!
//! Tables come in any serde format; with a deserializer that tracks paths
//! (figment's, `serde_path_to_error`) errors name the key at fault. A part
//! whose feature is off is still known, and asking for it is a
//! [`NotCompiled`] error naming the feature.
//!
//! ## Adding a provider
//!
//! A provider is its own crate (`crates/providers/NAME`: `mapper`, `client`,
//! `config`, see `docs/providers.md`) plus one entry here, in
//! `src/provider.rs`: a [`ProviderKind`] variant with its row of
//! `ProviderKind::spec` (name, feature, key variable, key hosts), and a
//! [`ProviderConfig`] variant with its arm in `from_table` and in
//! `client_with_env`; the crate goes behind a feature of this crate's
//! `Cargo.toml`, which an application forwards (agent-app's `NAME =
//! ["agentry/NAME"]`). Nothing else changes: the CLI's `--provider`,
//! `[providers.NAME]`, its help and errors, the trust check of where a
//! key is sent, all read [`ProviderKind`].
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

#[cfg(feature = "config")]
pub mod config;
mod domain;
mod error;
mod guardrails;
pub mod media;
pub mod prelude;
mod provider;
mod scene;
pub mod telemetry;

/// The enabled tool domains and the registry that runs them (`agent-tools`).
pub use agent_tools::{ToolBox, ToolListing};
#[cfg(feature = "mcp")]
pub use domain::mcp_domain;
pub use domain::{ToolDomain, check_mcp_name};
pub use error::{DomainError, NotCompiled, TableError};
pub use guardrails::{GuardrailError, GuardrailSpec, GuardrailTables, PatternSpec};
pub use provider::{ProviderConfig, ProviderKind};
pub use scene::SceneConfig;

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
/// `InMemoryStore` and the helpers every conversation store shares
/// (`agent-store`).
pub use agent_store as store;
/// The tool registry, typed tools and argument validation (`agent-tools`).
pub use agent_tools as tools;

/// HTTP plumbing of the remote providers: `HttpConfig`, `SecretString`
/// (`agent-http`).
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini", feature = "ollama"))]
pub use agent_http as http;

/// OpenAI, Azure OpenAI and OpenAI-compatible servers (`agent-provider-openai`).
#[cfg(feature = "resilience")]
pub use agent_resilience as resilience;

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
