//! # agent-http
//!
//! HTTP plumbing shared by Agentry's remote providers, with no
//! provider-specific code: an [`HttpClient`] that retries retryable failures
//! (429, 408, 409, 5xx, 529, broken connections, timeouts before a stream
//! starts) with exponential backoff and full jitter, honouring `Retry-After`
//! and `retry-after-ms`; classification of failures into
//! [`LlmError`](agent_core::LlmError)s that keep the provider's own message and
//! request id; incremental [SSE](sse) and [NDJSON](ndjson) decoders; prompt
//! cancellation; and [`SecretString`], which keeps API keys out of logs.
//!
//! ```
//! use agent_http::sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! let mut events = Vec::new();
//! decoder.push(b"event: delta\ndata: {\"text\":", &mut events);
//! decoder.push(b"\"hi\"}\n\ndata: [DONE]\n\n", &mut events);
//! assert_eq!(events[0].event, "delta");
//! assert_eq!(events[0].data, r#"{"text":"hi"}"#);
//! assert!(events[1].is_done());
//! ```

mod client;
mod config;
mod decoded;
pub mod error;
mod lenient;
mod mapped;
pub mod ndjson;
mod secret;
pub mod sse;

pub use client::{AuthHeader, ByteStream, HttpClient};
pub use config::HttpConfig;
pub use decoded::{ChunkDecoder, Decoded};
pub use lenient::LenientStr;
pub use mapped::{EventMapper, map_events};
pub use secret::SecretString;
