//! # agent-provider-anthropic
//!
//! Agentry's provider for Anthropic's **Messages API**: tool use (parallel
//! calls, forced and disabled tool choice), prompt caching, extended
//! thinking that round-trips unchanged, structured outputs, streaming, and
//! images and documents in user messages and tool results
//! ([`mapper::media`]: what is sent, what is refused, the size limits).
//!
//! The crate is split like every Agentry provider:
//!
//! - [`mapper`] (pure, no I/O): [`ChatRequest`](agent_core::ChatRequest) to
//!   a request body ([`mapper::build_request_body`]), a response body to a
//!   [`ChatResponse`](agent_core::ChatResponse) ([`mapper::parse_response`]),
//!   and stream events to [`StreamEvent`](agent_core::StreamEvent)s
//!   ([`mapper::StreamMapper`]);
//! - [`AnthropicClient`], the thin [`LlmClient`](agent_core::LlmClient) that
//!   sends the body through `agent-http` (retries on 429 and 529,
//!   `Retry-After`, timeouts, cancellation, SSE) and hands the bytes back to
//!   the mapper;
//! - [`AnthropicConfig`], deserialisable from a `[providers.anthropic]` table.
//!
//! Building a request body needs no network:
//!
//! ```
//! use agent_core::{ChatRequest, Message, ToolDefinition};
//! use agent_provider_anthropic::mapper::{BodyOptions, build_request_body};
//! use serde_json::json;
//!
//! let request = ChatRequest {
//!     prompt_caching: true,
//!     ..ChatRequest::new(vec![Message::user("Weather in Paris?")])
//!         .with_system("You are terse.")
//!         .with_tools(vec![ToolDefinition::new(
//!             "get_weather",
//!             "Current weather for a city",
//!             json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//!         )])
//! };
//! let body = build_request_body(&request, &BodyOptions::new("claude-sonnet-4-5"))?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["max_tokens"], 4096, "always sent: Anthropic requires it");
//! let ephemeral = json!({"type": "ephemeral"});
//! assert_eq!(body["system"][0]["cache_control"], ephemeral);
//! assert_eq!(body["tools"][0]["cache_control"], ephemeral);
//! assert_eq!(body["messages"][0]["content"][0]["cache_control"], ephemeral);
//! # Ok::<(), agent_core::LlmError>(())
//! ```
//!
//! And a client is a configuration away (the key comes from
//! `ANTHROPIC_API_KEY` unless the config says otherwise):
//!
//! ```no_run
//! use agent_core::{CancellationToken, ChatRequest, LlmClient, Message};
//! use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
//!
//! # async fn demo() -> Result<(), agent_core::LlmError> {
//! let client = AnthropicClient::new(AnthropicConfig::new("claude-sonnet-4-5"))?;
//! let request = ChatRequest::new(vec![Message::user("Say hi")]);
//! let reply = client.complete(&request, &CancellationToken::new()).await?;
//! println!("{}", reply.message.content);
//! # Ok(())
//! # }
//! ```

mod client;
mod config;
pub mod mapper;

pub use client::AnthropicClient;
pub use config::{
    AnthropicConfig, DEFAULT_ANTHROPIC_VERSION, DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_MODEL, PROVIDER_NAME,
    ThinkingConfig,
};
#[allow(deprecated)]
pub use mapper::RequestOptions;
pub use mapper::{BodyOptions, DEFAULT_MEDIA_LIMITS};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
