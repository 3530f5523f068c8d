//! # agent-testing
//!
//! Test doubles for code built on Agentry (a dev-dependency, never shipped):
//!
//! - [`ScriptedClient`]: an [`LlmClient`](agent_core::LlmClient) that answers
//!   from a queue of responses, stream events or errors (optionally after a
//!   delay) and records every [`ChatRequest`](agent_core::ChatRequest) it got.
//! - [`TestTools`]: a [`ToolProvider`](agent_core::ToolProvider) whose tools
//!   reply, fail, sleep or panic as configured, counting their executions.
//! - [`response`]: builders for responses with text and tool calls.
//! - [`mocks`]: mockall mocks of the core traits, for expectation-style tests.
//! - [`wire`]: the official recorded wire examples in `../shared/wire` (or
//!   `AGENTRY_WIRE_DIR`), reached through [`require_wire!`], which skips the
//!   test, saying why, when they are absent.
//! - [`collect_events`]: a client's event stream drained up to its first error.
//! - [`canonical`]: the conversations every provider's request mapper is
//!   snapshot-tested on.
//! - [`store_contract`]: the checks every
//!   [`ConversationStore`](agent_core::ConversationStore) passes, for a
//!   store's own tests.
//! - `http_contract` (feature `http-contract`): the checks every remote
//!   provider's HTTP client passes against a local mock server, written as
//!   tests by `http_contract_tests!`.
//!
//! ```
//! use agent_core::{ChatRequest, LlmClient, Message, CancellationToken};
//! use agent_testing::{ScriptedClient, response};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = ScriptedClient::new()
//!     .respond(response::tool_calls([("get_weather", json!({"location": "Tokyo"}))]))
//!     .respond(response::text("Sunny, 21°C."));
//! let request = ChatRequest::new(vec![Message::user("Weather in Tokyo?")]);
//! let first = client.complete(&request, &CancellationToken::new()).await.unwrap();
//! assert_eq!(first.message.tool_calls[0].name, "get_weather");
//! assert_eq!(client.requests().len(), 1);
//! # }
//! ```

pub mod canonical;
mod events;
pub mod faults;
#[cfg(feature = "http-contract")]
pub mod http_contract;
pub mod loopback;
pub mod mcp_deps;
pub mod media;
pub mod mocks;
pub mod response;
mod schemas;
mod scripted;
pub mod skip;
/// The contract every [`ConversationStore`](agent_core::ConversationStore)
/// keeps, as `check_*` functions a store's tests run on a new store of
/// theirs, with the turn builders the checks use.
pub mod store_contract;
mod tools;
pub mod wire;

pub use events::collect_events;
pub use schemas::assert_invented_arguments_refused;
pub use scripted::{Script, ScriptedClient};
pub use tools::{ComputeFn, TestTool, TestTools, ToolBehaviour};
