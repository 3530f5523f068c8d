//! # agent-provider-ollama
//!
//! Agentry's provider for [Ollama](https://ollama.com)'s native chat API
//! (`POST /api/chat`): tool calls with object arguments, `tool` results,
//! model `options` (`num_predict`, `temperature`, `stop`, `num_ctx`, ...),
//! structured output through `format` with a JSON schema, `keep_alive`,
//! `think`, and NDJSON streaming with usage from the final `done` line.
//! (For Ollama's OpenAI-compatible `/v1`, use `agent-provider-openai`
//! instead; the native API is the one that carries `num_ctx` and `think`.)
//!
//! The crate is split like every Agentry provider:
//!
//! - [`mapper`] (pure, no I/O): [`ChatRequest`](agent_core::ChatRequest) to
//!   a body ([`mapper::build_request_body`]), a reply to a
//!   [`ChatResponse`](agent_core::ChatResponse) ([`mapper::parse_response`]),
//!   stream lines to [`StreamEvent`](agent_core::StreamEvent)s
//!   ([`mapper::StreamMapper`]);
//! - [`OllamaClient`], the thin [`LlmClient`](agent_core::LlmClient) that
//!   sends the body through `agent-http` (retries, timeouts, cancellation,
//!   NDJSON) and hands the bytes back to the mapper;
//! - [`OllamaConfig`], deserialisable from a `[providers.ollama]` table; the
//!   server is `base_url`, else `OLLAMA_HOST`, else `http://localhost:11434`.
//!
//! Building a request body needs no server:
//!
//! ```
//! use agent_core::{ChatRequest, Message, ToolDefinition};
//! use agent_provider_ollama::mapper::{BodyOptions, build_request_body};
//! use serde_json::json;
//!
//! let request = ChatRequest {
//!     max_tokens: Some(256),
//!     ..ChatRequest::new(vec![Message::user("Weather in Paris?")])
//!         .with_system("You are terse.")
//!         .with_tools(vec![ToolDefinition::new(
//!             "get_weather",
//!             "Current weather for a city",
//!             json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//!         )])
//! };
//! let body = build_request_body(&request, &BodyOptions::new("llama3.2"))?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["messages"][0], json!({"role": "system", "content": "You are terse."}));
//! assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
//! assert_eq!(body["options"], json!({"num_predict": 256}));
//! assert_eq!(body["stream"], false);
//! # Ok::<(), agent_core::LlmError>(())
//! ```
//!
//! And a client is a configuration away:
//!
//! ```no_run
//! use agent_core::{CancellationToken, ChatRequest, LlmClient, Message};
//! use agent_provider_ollama::{OllamaClient, OllamaConfig};
//!
//! # async fn demo() -> Result<(), agent_core::LlmError> {
//! let client = OllamaClient::new(OllamaConfig::new("llama3.2"))?;
//! let request = ChatRequest::new(vec![Message::user("Say hi")]);
//! let reply = client.complete(&request, &CancellationToken::new()).await?;
//! println!("{}", reply.message.content);
//! # Ok(())
//! # }
//! ```

mod client;
mod config;
pub mod mapper;

pub use client::OllamaClient;
pub use config::{DEFAULT_MODEL, DEFAULT_OLLAMA_PORT, DEFAULT_OLLAMA_URL, OLLAMA_HOST_ENV, OllamaConfig};
#[allow(deprecated)]
pub use mapper::RequestOptions;
pub use mapper::{BodyOptions, DEFAULT_MEDIA_LIMITS, KeepAlive, Think};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
