//! Staying up when providers fail.
//!
//! Three decorators of [`LlmClient`](agent_core::LlmClient), each itself an
//! `LlmClient`, so an agent takes them like any client:
//!
//! - [`FallbackClient`]: providers tried in order; a call moves to the next
//!   on a retryable error or an open circuit, and a streamed call only
//!   before any of the reply has reached the caller. Every reply says which
//!   provider answered and which failed first ([`agent_core::Route`]).
//! - [`CircuitBreaker`]: per provider endpoint; it opens after failures in
//!   a row or a failure rate over a window of calls, lets one probe through
//!   when it has been open a while, and closes on the probe's success. Its
//!   [`snapshot`](CircuitBreaker::snapshot) is what `agentry serve`'s
//!   `/readyz` shows, and its state is the `agentry.circuit_breaker.state`
//!   gauge (0 closed, 1 half-open, 2 open).
//! - [`RateLimiter`]: requests and tokens per minute (token buckets, from
//!   `governor`); a call waits for room when the wait is under a maximum,
//!   and fails at once with a rate-limit error otherwise, which a fallback
//!   chain takes as its cue to move on.
//!
//! [`ResilientClient`] puts one provider's client behind its breaker and
//! limiter; a chain of those is what `[agent] fallback` in `agentry.toml`
//! builds.
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmError, LlmErrorKind, Message};
//! use agent_resilience::{BreakerConfig, CircuitBreaker, FallbackClient, ResilientClient};
//! use agent_testing::{ScriptedClient, response};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let busy = ScriptedClient::new().with_provider("first").fail(LlmError::new(LlmErrorKind::Overloaded, "busy"));
//! let breaker = Arc::new(CircuitBreaker::new("first", BreakerConfig::default())?);
//! let first: Arc<dyn LlmClient> = Arc::new(ResilientClient::new(busy).with_breaker(breaker));
//! let second: Arc<dyn LlmClient> = Arc::new(ScriptedClient::new().with_provider("second").respond(response::text("hello")));
//! let chain = FallbackClient::new([first, second])?;
//!
//! let request = ChatRequest { messages: vec![Message::user("hi")], ..ChatRequest::default() };
//! let reply = chain.complete(&request, &CancellationToken::new()).await?;
//! let route = reply.route.expect("a chain says who answered");
//! assert_eq!((route.provider.as_str(), route.failed[0].provider.as_str()), ("second", "first"));
//! # Ok(())
//! # }
//! ```

mod breaker;
mod client;
mod fallback;
mod limiter;

pub use breaker::{BreakerConfig, BreakerPermit, BreakerSnapshot, BreakerState, CallOutcome, CircuitBreaker};
pub use client::ResilientClient;
pub use fallback::{EmptyChain, FallbackClient};
pub use limiter::{LimiterCounts, RateLimitConfig, RateLimiter, estimated_tokens};

/// A breaker or limiter setting out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}`: {message}")]
pub struct ConfigError {
    /// The key that is wrong.
    pub key: &'static str,
    /// What is wrong with it.
    pub message: String,
}

/// The code of docs/resilience.md, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/resilience.md")]
pub struct ResilienceGuide;
