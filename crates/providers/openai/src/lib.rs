//! # agent-provider-openai
//!
//! Agentry's provider for the OpenAI Chat Completions API, in three variants
//! chosen by configuration ([`OpenAiConfig`]): OpenAI itself, Azure OpenAI,
//! and any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, Ollama's
//! `/v1`, OpenRouter, …).
//!
//! The crate is split like every Agentry provider:
//!
//! - [`mapper`] (pure, no I/O): [`ChatRequest`](agent_core::ChatRequest) to
//!   a request body ([`mapper::build_request_body`]), a response body to a
//!   [`ChatResponse`](agent_core::ChatResponse) ([`mapper::parse_response`]),
//!   and stream chunks to [`StreamEvent`](agent_core::StreamEvent)s
//!   ([`mapper::StreamMapper`]);
//! - [`OpenAiClient`], the thin [`LlmClient`](agent_core::LlmClient) that
//!   sends the body through `agent-http` (retries, `Retry-After`, timeouts,
//!   cancellation, SSE) and hands the bytes back to the mapper;
//! - [`OpenAiConfig`], deserialisable from a `[providers.openai]` table.
//!
//! Building a request body needs no network:
//!
//! ```
//! use agent_core::{ChatRequest, Message, ToolDefinition};
//! use agent_provider_openai::mapper::{BodyOptions, build_request_body};
//! use serde_json::json;
//!
//! let request = ChatRequest::new(vec![Message::user("Weather in Paris?")])
//!     .with_system("You are terse.")
//!     .with_tools(vec![ToolDefinition::new(
//!         "get_weather",
//!         "Current weather for a city",
//!         json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//!     )]);
//! let body = build_request_body(&request, &BodyOptions::new("gpt-4o-mini"))?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["messages"][0], json!({"role": "system", "content": "You are terse."}));
//! assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
//! assert_eq!(body["tool_choice"], "auto");
//! # Ok::<(), agent_core::LlmError>(())
//! ```
//!
//! And a client is a configuration away (the key comes from
//! `OPENAI_API_KEY` unless the config says otherwise):
//!
//! ```no_run
//! use agent_core::{CancellationToken, ChatRequest, LlmClient, Message};
//! use agent_provider_openai::{OpenAiClient, OpenAiConfig};
//!
//! # async fn demo() -> Result<(), agent_core::LlmError> {
//! let client = OpenAiClient::new(OpenAiConfig::openai("gpt-4o-mini"))?;
//! let request = ChatRequest::new(vec![Message::user("Say hi")]);
//! let reply = client.complete(&request, &CancellationToken::new()).await?;
//! println!("{}", reply.message.content);
//! # Ok(())
//! # }
//! ```

mod client;
mod config;
pub mod mapper;

pub use client::OpenAiClient;
pub use config::{DEFAULT_AZURE_API_VERSION, DEFAULT_MODEL, DEFAULT_OPENAI_BASE_URL, OpenAiConfig, Variant};
#[allow(deprecated)]
pub use mapper::RequestOptions;
pub use mapper::{BodyOptions, DEFAULT_MEDIA_LIMITS, MaxTokensField, SystemRole};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
