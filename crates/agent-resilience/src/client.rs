//! [`ResilientClient`]: one provider's client behind its circuit breaker
//! and rate limiter.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, IntoLlmClient, LlmClient, LlmError,
    StreamEvent, Usage,
};
use async_trait::async_trait;
use futures::Stream;

use crate::{BreakerPermit, CallOutcome, CircuitBreaker, RateLimiter};

/// A client whose calls go through a [`CircuitBreaker`] (they fail at once
/// while it is open) and a [`RateLimiter`] (they wait for room), either or
/// both. Itself an [`LlmClient`], with the provider, model and
/// capabilities of the client it wraps.
///
/// ```
/// use std::sync::Arc;
/// use agent_resilience::{BreakerConfig, CircuitBreaker, RateLimitConfig, RateLimiter, ResilientClient};
/// use agent_testing::ScriptedClient;
///
/// # fn main() -> Result<(), agent_resilience::ConfigError> {
/// let breaker = Arc::new(CircuitBreaker::new("openai", BreakerConfig::default())?);
/// let limiter = Arc::new(RateLimiter::new(
///     "openai",
///     &RateLimitConfig { requests_per_minute: Some(500), ..RateLimitConfig::default() },
/// )?);
/// let client = ResilientClient::new(ScriptedClient::new())
///     .with_breaker(Arc::clone(&breaker))
///     .with_rate_limiter(limiter);
/// assert_eq!(breaker.snapshot().state, agent_resilience::BreakerState::Closed);
/// # let _ = client;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ResilientClient {
    inner: Arc<dyn LlmClient>,
    breaker: Option<Arc<CircuitBreaker>>,
    limiter: Option<Arc<RateLimiter>>,
}

impl std::fmt::Debug for ResilientClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResilientClient")
            .field("provider", &self.inner.provider())
            .field("model", &self.inner.model())
            .field("breaker", &self.breaker.as_ref().map(|breaker| breaker.name()))
            .field("limiter", &self.limiter.as_ref().map(|limiter| limiter.name()))
            .finish()
    }
}

impl ResilientClient {
    /// `inner` with neither a breaker nor a limiter yet.
    pub fn new(inner: impl IntoLlmClient) -> Self {
        Self {
            inner: inner.into_llm_client(),
            breaker: None,
            limiter: None,
        }
    }

    /// Calls go through `breaker`.
    #[must_use]
    pub fn with_breaker(mut self, breaker: Arc<CircuitBreaker>) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// Calls wait for room in `limiter`.
    #[must_use]
    pub fn with_rate_limiter(mut self, limiter: Arc<RateLimiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// The breaker calls go through, if any.
    pub fn breaker(&self) -> Option<&Arc<CircuitBreaker>> {
        self.breaker.as_ref()
    }

    /// The limiter calls wait in, if any.
    pub fn rate_limiter(&self) -> Option<&Arc<RateLimiter>> {
        self.limiter.as_ref()
    }

    /// Takes the breaker's permit first (an open breaker refuses without
    /// waiting), then room in the limiter. Returns the permit and the
    /// tokens charged.
    async fn admit(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<(Option<BreakerPermit>, u32), LlmError> {
        let permit = self.breaker.as_ref().map(CircuitBreaker::try_acquire).transpose()?;
        let charged = match &self.limiter {
            Some(limiter) => limiter.acquire(request, cancel).await?,
            None => 0,
        };
        Ok((permit, charged))
    }
}

#[async_trait]
impl LlmClient for ResilientClient {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let (permit, charged) = self.admit(request, cancel).await?;
        let result = self.inner.complete(request, cancel).await;
        if let Some(permit) = permit {
            permit.record_result(&result);
        }
        if let (Some(limiter), Ok(response)) = (&self.limiter, &result) {
            limiter.settle(charged, &response.usage);
        }
        result
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let (permit, charged) = self.admit(request, cancel).await?;
        match self.inner.stream(request, cancel).await {
            Ok(events) => Ok(Box::pin(Watched {
                events,
                permit,
                limiter: self.limiter.clone(),
                charged,
                usage: None,
            })),
            Err(error) => {
                if let Some(permit) = permit {
                    permit.record(CallOutcome::of_error(&error));
                }
                Err(error)
            }
        }
    }
}

/// A reply stream that tells the breaker how it ended (its stop event: the
/// endpoint answered; an error: as the error says; an end without a stop
/// event: failed) and, once dropped, settles the tokens it used with the
/// limiter.
struct Watched {
    events: EventStream,
    permit: Option<BreakerPermit>,
    limiter: Option<Arc<RateLimiter>>,
    charged: u32,
    usage: Option<Usage>,
}

impl Watched {
    fn record(&mut self, outcome: CallOutcome) {
        if let Some(permit) = self.permit.take() {
            permit.record(outcome);
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let (Some(limiter), Some(usage)) = (&self.limiter, &self.usage) {
            limiter.settle(self.charged, usage);
        }
    }
}

impl Stream for Watched {
    type Item = Result<StreamEvent, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.events.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(StreamEvent::Usage { usage }))) => self.usage = Some(*usage),
            Poll::Ready(Some(Ok(StreamEvent::Stop { .. }))) => self.record(CallOutcome::Answered),
            Poll::Ready(Some(Err(error))) => self.record(CallOutcome::of_error(error)),
            // Ended without its stop event: the reply was cut off.
            Poll::Ready(None) => self.record(CallOutcome::Failed),
            Poll::Ready(Some(Ok(_))) | Poll::Pending => {}
        }
        polled
    }
}
