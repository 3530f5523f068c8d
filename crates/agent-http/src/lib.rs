//! # agent-http
//!
//! HTTP plumbing shared by Agentry's remote providers, with no
//! provider-specific code: an [`HttpClient`] that retries with exponential
//! backoff and full jitter, honouring `Retry-After` and `retry-after-ms`;
//! classification of failures into [`LlmError`](agent_core::LlmError)s that
//! keep the provider's own message and request id; incremental [SSE](sse)
//! and [NDJSON](ndjson) decoders; prompt cancellation; and
//! [`SecretString`], which keeps API keys out of logs; and [`ApiKeyConfig`]
//! with [`KeyRule`], the one way every provider finds its key.
//!
//! ## Retries
//!
//! A request is sent again only when that cannot run the model call twice:
//! after a failure to connect (nothing was sent), or when the server
//! answered 408, 409, 429, 5xx or 529, or said `x-should-retry: true`. A
//! request that may have been delivered (a timeout or a broken connection
//! after sending, a body that broke off) is not sent again, and its error
//! says so. A wait the server asks for that `max_total_wait_secs` cannot
//! cover (an hour, or a number too large to represent) ends the retries at
//! once, with a message naming the wait.
//!
//! ## Redirects
//!
//! Redirects are followed only within the origin (scheme, host, port) of
//! the URL asked for. A redirect elsewhere fails with
//! [`HttpError::CrossOriginRedirect`], naming the target origin, so no
//! credential (`Authorization`, `api-key`, `x-api-key`, configured extra
//! headers) and no request body reaches another server.
//!
//! ## Limits
//!
//! [`HttpConfig`] bounds what a server can make the client buffer or wait
//! for, each failure an [`HttpError`] naming its setting:
//!
//! | setting | default | bounds |
//! |---|---|---|
//! | `max_response_bytes` | 16 MiB | a non-streamed response body |
//! | `max_event_bytes` | 1 MiB | an SSE line or event, an NDJSON line |
//! | `stream_timeout_secs` | 600 | a streamed body, from its headers to its end |
//!
//! [`HttpClient::post_sse`] and [`HttpClient::post_ndjson`] decode with the
//! configured `max_event_bytes`; [`sse::sse_events`] and
//! [`ndjson::ndjson_lines`] with the 1 MiB default.
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

mod body;
mod client;
mod config;
mod decoded;
pub mod error;
mod http_error;
mod key;
mod lenient;
mod mapped;
pub mod ndjson;
mod redirect;
mod retry;
mod secret;
pub mod sse;
mod url;

pub use client::{AuthHeader, ByteStream, HttpClient};
pub use config::HttpConfig;
pub use decoded::{ChunkDecoder, Decoded};
pub use http_error::HttpError;
pub use key::{ApiKeyConfig, KeyRule};
pub use lenient::LenientStr;
pub use mapped::{EventMapper, decode_body, map_events};
pub use redirect::same_origin_only;
pub use secret::SecretString;
pub use url::{RequestUrl, Url, parse_url};
