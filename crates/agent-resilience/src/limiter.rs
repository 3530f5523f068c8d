//! An outbound rate limiter for one provider: requests and tokens per
//! minute, as token buckets (`governor`'s GCRA). A call that would go over
//! waits for room when the wait is short enough, and fails at once
//! otherwise.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_core::{CancellationToken, ChatRequest, LlmError, Message, Usage};
use governor::clock::{Clock, DefaultClock};
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter as Bucket};
use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Bytes per token in the estimate of a request's size (as the runner's
/// context estimate: about four characters a token).
const BYTES_PER_TOKEN: usize = 4;

/// How fast calls may go out to a provider. The
/// `[providers.NAME.rate_limit]` table of `agentry.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Requests a minute; unset: no request limit.
    pub requests_per_minute: Option<u32>,
    /// How many requests may go at once after a quiet spell; unset: the
    /// whole minute's (`requests_per_minute`), as providers count.
    pub burst: Option<u32>,
    /// Tokens a minute, counted as providers do before a request runs: its
    /// estimated input (about 4 bytes a token) plus its `max_tokens`.
    /// Unset: no token limit.
    pub tokens_per_minute: Option<u32>,
    /// The longest a call waits for room, in seconds; a call that would
    /// wait longer fails at once with a rate-limit error.
    pub max_wait_secs: f64,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            requests_per_minute: None,
            burst: None,
            tokens_per_minute: None,
            max_wait_secs: 30.0,
        }
    }
}

impl RateLimitConfig {
    /// Checks the values, naming the first that is out of range.
    ///
    /// # Errors
    ///
    /// A limit of zero, or a wait that is not a number of seconds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("requests_per_minute", self.requests_per_minute),
            ("burst", self.burst),
            ("tokens_per_minute", self.tokens_per_minute),
        ] {
            if value == Some(0) {
                return Err(ConfigError {
                    key,
                    message: "0 would let nothing through; leave the key out for no limit".to_owned(),
                });
            }
        }
        if Duration::try_from_secs_f64(self.max_wait_secs).is_err() {
            return Err(ConfigError {
                key: "max_wait_secs",
                message: format!("{} is not a number of seconds", self.max_wait_secs),
            });
        }
        Ok(())
    }
}

/// What a limiter has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimiterCounts {
    /// Calls let through at once.
    pub immediate: u64,
    /// Calls let through after waiting for room.
    pub delayed: u64,
    /// Calls refused: the wait would have been over `max_wait_secs`.
    pub refused: u64,
}

type DirectBucket = Bucket<NotKeyed, InMemoryState, DefaultClock>;

/// Spaces one provider's calls within its request and token limits.
/// Share it (`Arc`) between the clients of the same account.
#[derive(Debug)]
pub struct RateLimiter {
    name: String,
    requests: Option<DirectBucket>,
    tokens: Option<(DirectBucket, NonZeroU32)>,
    max_wait: Duration,
    immediate: AtomicU64,
    delayed: AtomicU64,
    refused: AtomicU64,
}

impl RateLimiter {
    /// A limiter for the provider `name` (named in its errors and metrics).
    ///
    /// # Errors
    ///
    /// `config` is out of range ([`RateLimitConfig::validate`]).
    pub fn new(name: impl Into<String>, config: &RateLimitConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let requests = config.requests_per_minute.and_then(NonZeroU32::new).map(|per_minute| {
            let burst = config.burst.and_then(NonZeroU32::new).unwrap_or(per_minute);
            Bucket::direct(Quota::per_minute(per_minute).allow_burst(burst))
        });
        let tokens = config
            .tokens_per_minute
            .and_then(NonZeroU32::new)
            .map(|per_minute| (Bucket::direct(Quota::per_minute(per_minute)), per_minute));
        Ok(Self {
            name: name.into(),
            requests,
            tokens,
            max_wait: Duration::try_from_secs_f64(config.max_wait_secs).unwrap_or_default(),
            immediate: AtomicU64::new(0),
            delayed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// The provider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the limiter has done so far.
    pub fn counts(&self) -> LimiterCounts {
        LimiterCounts {
            immediate: self.immediate.load(Ordering::Relaxed),
            delayed: self.delayed.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// Waits until `request` may go out: one request and its estimated
    /// tokens ([`estimated_tokens`]). Returns the tokens charged.
    ///
    /// # Errors
    ///
    /// A rate-limit error when the wait would be over `max_wait_secs` (its
    /// retry delay is the wait), or when the request alone is larger than
    /// the token limit; a cancellation error when `cancel` fires first.
    pub async fn acquire(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<u32, LlmError> {
        let tokens = estimated_tokens(request);
        let needed = match &self.tokens {
            Some((_, per_minute)) if tokens > per_minute.get() => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return Err(self.error(&format!(
                    "the request is estimated at {tokens} tokens, more than the limit of {per_minute} tokens a \
                     minute; shorten the conversation or lower max_tokens"
                )));
            }
            Some((bucket, _)) => NonZeroU32::new(tokens).map(|cells| (bucket, cells)),
            None => None,
        };
        let started = tokio::time::Instant::now();
        let mut waited = false;
        if let Some(bucket) = &self.requests {
            waited |= self.take(bucket, NonZeroU32::MIN, started, cancel, "requests").await?;
        }
        if let Some((bucket, cells)) = needed {
            waited |= self.take(bucket, cells, started, cancel, "tokens").await?;
        }
        let charged = needed.map_or(0, |(_, cells)| cells.get());
        let counter = if waited { &self.delayed } else { &self.immediate };
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(
            "agentry.rate_limiter.calls",
            "agentry.endpoint" => self.name.clone(),
            "agentry.waited" => if waited { "true" } else { "false" }
        )
        .increment(1);
        Ok(charged)
    }

    /// Charges the tokens a call used beyond the `charged` estimate, when
    /// there is room for them (a bucket cannot go into debt: a call that
    /// used more than estimated takes what is left).
    pub fn settle(&self, charged: u32, usage: &Usage) {
        let Some((bucket, per_minute)) = &self.tokens else {
            return;
        };
        let used = usage.input_tokens.saturating_add(usage.output_tokens);
        let extra = u32::try_from(used.saturating_sub(u64::from(charged))).unwrap_or(u32::MAX);
        if let Some(extra) = NonZeroU32::new(extra.min(per_minute.get())) {
            let _ = bucket.check_n(extra);
        }
    }

    /// Takes `cells` from `bucket`, waiting while the whole wait since
    /// `started` stays within `max_wait`. Returns whether it waited.
    async fn take(
        &self,
        bucket: &DirectBucket,
        cells: NonZeroU32,
        started: tokio::time::Instant,
        cancel: &CancellationToken,
        what: &str,
    ) -> Result<bool, LlmError> {
        let mut waited = false;
        loop {
            let wait = match bucket.check_n(cells) {
                Ok(Ok(())) => return Ok(waited),
                Ok(Err(not_until)) => not_until.wait_time_from(DefaultClock::default().now()),
                // `acquire` checked the size against the limit.
                Err(_) => return Err(self.error(&format!("{cells} {what} never fit in the limit"))),
            };
            let spent = started.elapsed();
            if spent.saturating_add(wait) > self.max_wait {
                self.refused.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("agentry.rate_limiter.refused", "agentry.endpoint" => self.name.clone()).increment(1);
                return Err(self
                    .error(&format!(
                        "the {what} limit needs a wait of {:.2} s, over max_wait_secs ({:.2} s)",
                        (spent + wait).as_secs_f64(),
                        self.max_wait.as_secs_f64()
                    ))
                    .with_retry_after(Some(wait)));
            }
            tracing::debug!(endpoint = %self.name, wait_ms = wait.as_millis() as u64, what, "waiting for the rate limit");
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::cancelled().with_provider(self.name.clone())),
                () = tokio::time::sleep(wait) => {}
            }
            waited = true;
        }
    }

    fn error(&self, message: &str) -> LlmError {
        LlmError::rate_limited(format!("local rate limit: {message}"), None).with_provider(self.name.clone())
    }
}

/// The tokens `request` is counted at before it is sent: about one per
/// four bytes of its system prompt, messages and tool definitions, plus its
/// `max_tokens` (what the reply may take), as providers count their
/// per-minute token limits.
pub fn estimated_tokens(request: &ChatRequest) -> u32 {
    let tools: usize = request
        .tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.input_schema.to_string().len())
        .sum();
    let messages: usize = request.messages.iter().map(message_bytes).sum();
    let system = request.system.as_deref().map_or(0, str::len);
    let input = (system + messages + tools).div_ceil(BYTES_PER_TOKEN);
    u32::try_from(input)
        .unwrap_or(u32::MAX)
        .saturating_add(request.max_tokens.unwrap_or(0))
}

fn message_bytes(message: &Message) -> usize {
    match message {
        Message::System { content } | Message::User { content, .. } => content.len(),
        Message::Assistant(reply) => {
            reply.content.len()
                + reply
                    .tool_calls
                    .iter()
                    .map(|call| call.name.len() + call.arguments_text().len())
                    .sum::<usize>()
        }
        Message::Tool(result) => result.content.len(),
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{Message, ToolDefinition};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_request_is_counted_by_its_size_and_its_max_tokens() {
        let mut request = ChatRequest {
            system: Some("x".repeat(40)),
            messages: vec![Message::user("y".repeat(40))],
            max_tokens: Some(100),
            ..ChatRequest::default()
        };
        assert_eq!(estimated_tokens(&request), 20 + 100);
        request.tools = vec![ToolDefinition::new("t", "d", json!({}))].into();
        assert_eq!(estimated_tokens(&request), 21 + 100, "4 more bytes: t, d, {{}}");
    }

    #[tokio::test]
    async fn a_request_over_the_token_limit_is_refused_by_name() {
        let limiter = RateLimiter::new(
            "p",
            &RateLimitConfig {
                tokens_per_minute: Some(50),
                ..RateLimitConfig::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let request = ChatRequest {
            max_tokens: Some(51),
            ..ChatRequest::default()
        };
        let error = limiter
            .acquire(&request, &CancellationToken::new())
            .await
            .err()
            .unwrap_or_else(|| panic!("a request over the limit went through"));
        assert_eq!(error.kind, agent_core::LlmErrorKind::RateLimited);
        assert!(
            error.message.contains("51 tokens") && error.message.contains("50"),
            "{error}"
        );
        assert_eq!(limiter.counts().refused, 1);
    }

    #[test]
    fn a_zero_limit_is_refused_by_name() {
        let error = RateLimitConfig {
            burst: Some(0),
            ..RateLimitConfig::default()
        }
        .validate()
        .err()
        .map(|e| e.key);
        assert_eq!(error, Some("burst"));
    }
}
