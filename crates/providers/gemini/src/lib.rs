//! # agent-provider-gemini
//!
//! Agentry's provider for the Google **Gemini API** (`generateContent` and
//! `streamGenerateContent?alt=sse` at `generativelanguage.googleapis.com`),
//! with function calling, JSON-schema output, thinking, streaming, and
//! images, documents and audio in user messages and tool results
//! ([`mapper::media`]: the parts sent, the size limits).
//!
//! The crate is split like every Agentry provider:
//!
//! - [`mapper`] (pure, no I/O): [`ChatRequest`](agent_core::ChatRequest) to
//!   a request body ([`mapper::build_request_body`]), a response body to a
//!   [`ChatResponse`](agent_core::ChatResponse) ([`mapper::parse_response`]),
//!   stream chunks to [`StreamEvent`](agent_core::StreamEvent)s
//!   ([`mapper::StreamMapper`]), and JSON Schema to Gemini's OpenAPI-style
//!   schema subset ([`mapper::schema`]);
//! - [`GeminiClient`], the thin [`LlmClient`](agent_core::LlmClient) that
//!   sends the body through `agent-http` (retries, `Retry-After`, timeouts,
//!   cancellation, SSE) with the key in the `x-goog-api-key` header;
//! - [`GeminiConfig`], deserialisable from a `[providers.gemini]` table.
//!
//! ## Thought signatures and call ids
//!
//! Gemini 2.5+ puts an opaque `thoughtSignature` on function-call parts
//! (and sometimes on text or thought parts) that must come back on the same
//! part in the next request. Agentry's [`ToolCall`](agent_core::ToolCall)
//! has no field for it, so each signature is kept in a
//! [`ReasoningBlock`](agent_core::ReasoningBlock) of the assistant message
//! whose `data` names the part: `{"gemini_part": "function_call",
//! "call_id": ...}`, `{"gemini_part": "text"}` or `{"gemini_part":
//! "thought"}` (a signed thought keeps its text in the block). The request
//! mapper puts each signature back on that part; a turn whose calls carry
//! no Gemini signature (another provider's, or injected) gets
//! [`mapper::PLACEHOLDER_THOUGHT_SIGNATURE`] on its first call, since
//! Gemini 3 refuses unsigned calls in the current turn. Unsigned thought text
//! (`thought: true` parts, returned with `include_thoughts`) becomes
//! reasoning text, never visible content, and is not sent back: Gemini does
//! not need it.
//!
//! Gemini usually gives function calls no `id`. The mapper then makes up a
//! stable one, `gemini_synth_{responseId}_{n}` (or a hash of the call when
//! there is no `responseId`): the same reply always maps to the same ids.
//! Ids with that prefix are never sent back; ids Gemini issued are.
//!
//! Building a request body needs no network:
//!
//! ```
//! use agent_core::{ChatRequest, Message, ToolDefinition};
//! use agent_provider_gemini::mapper::{BodyOptions, build_request_json};
//! use serde_json::json;
//!
//! let request = ChatRequest::new(vec![Message::user("Weather in Paris?")])
//!     .with_system("You are terse.")
//!     .with_tools(vec![ToolDefinition::new(
//!         "get_weather",
//!         "Current weather for a city",
//!         json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
//!                "additionalProperties": false}),
//!     )]);
//! let body = build_request_json(&request, &BodyOptions::new("gemini-2.5-flash"))?;
//! assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "You are terse."}]}));
//! assert_eq!(body["contents"][0], json!({"role": "user", "parts": [{"text": "Weather in Paris?"}]}));
//! assert_eq!(
//!     body["tools"][0]["functionDeclarations"][0]["parameters"],
//!     json!({"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]})
//! );
//! assert_eq!(body["toolConfig"], json!({"functionCallingConfig": {"mode": "AUTO"}}));
//! # Ok::<(), agent_core::LlmError>(())
//! ```

mod client;
mod config;
pub mod mapper;

pub use client::GeminiClient;
pub use config::{
    DEFAULT_API_VERSION, DEFAULT_GEMINI_BASE_URL, DEFAULT_MODEL, GEMINI_API_KEY_ENV, GOOGLE_API_KEY_ENV, GeminiConfig,
    PROVIDER_NAME,
};
#[allow(deprecated)]
pub use mapper::RequestOptions;
pub use mapper::{BodyOptions, DEFAULT_MEDIA_LIMITS};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
