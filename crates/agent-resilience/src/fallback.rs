//! [`FallbackClient`]: a chain of providers, each tried when the one before
//! failed in a way another provider may not.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError, ProviderAttempt,
    Route, StreamEvent,
};
use async_trait::async_trait;
use futures::StreamExt;
use tracing::Instrument;

/// A fallback chain was given no client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a fallback chain needs at least one client")]
pub struct EmptyChain;

/// Clients tried in order: a call goes to the first, and moves to the next
/// when it fails with a retryable error (rate limited, overloaded, a server
/// error, a timeout, a broken connection) or an open circuit breaker. Any
/// other error (a rejected key, a malformed request, a cancellation) ends
/// the call: the next provider would refuse it too, or it was not wanted.
///
/// A streamed call moves on only **before any of the reply has reached the
/// caller**: the events before the first piece of the reply (start, usage)
/// are held back until it comes, and an error after it is the caller's,
/// never a switch in the middle of a reply.
///
/// Every reply says which provider answered and which failed first
/// ([`ChatResponse::route`], [`StreamEvent::Routed`]); the agent loop keeps
/// it in the run's record and tags the reply's reasoning blocks with the
/// provider that answered, so that their signatures are sent back to that
/// provider only. Each attempt is a `fallback_attempt` tracing span.
///
/// A request's `model` override is meant for the first client: the others
/// get the request without it and use their own model. The chain's
/// capabilities are those every client has (native tool calls only if all
/// of them make them), so a conversation stays sendable to each.
///
/// ```
/// use std::sync::Arc;
/// use agent_core::LlmClient;
/// use agent_resilience::FallbackClient;
/// use agent_testing::ScriptedClient;
///
/// let primary: Arc<dyn LlmClient> = Arc::new(ScriptedClient::new().with_model("big"));
/// let backup: Arc<dyn LlmClient> = Arc::new(ScriptedClient::new().with_model("small"));
/// let chain = FallbackClient::new([primary, backup]).expect("two clients");
/// assert_eq!(chain.model(), "big");
/// ```
#[derive(Clone)]
pub struct FallbackClient {
    clients: Vec<Arc<dyn LlmClient>>,
    capabilities: Capabilities,
}

impl std::fmt::Debug for FallbackClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.clients.iter().map(|client| (client.provider(), client.model())))
            .finish()
    }
}

impl FallbackClient {
    /// The chain `clients`, tried in this order.
    ///
    /// # Errors
    ///
    /// `clients` is empty.
    pub fn new(clients: impl IntoIterator<Item = Arc<dyn LlmClient>>) -> Result<Self, EmptyChain> {
        let clients: Vec<_> = clients.into_iter().collect();
        let capabilities = clients
            .iter()
            .map(|client| client.capabilities())
            .reduce(common)
            .ok_or(EmptyChain)?;
        Ok(Self { clients, capabilities })
    }

    /// The clients, in the order they are tried.
    pub fn clients(&self) -> &[Arc<dyn LlmClient>] {
        &self.clients
    }

    /// The request as client `index` gets it: without the first client's
    /// model override.
    fn request_for(index: usize, request: &ChatRequest) -> Cow<'_, ChatRequest> {
        if index == 0 || request.model.is_none() {
            Cow::Borrowed(request)
        } else {
            Cow::Owned(ChatRequest {
                model: None,
                ..request.clone()
            })
        }
    }

    /// Whether the call moves on from client `index` after `error`; if so
    /// the attempt is added to `failed`, else the error to return is given.
    fn move_on(
        &self,
        index: usize,
        error: LlmError,
        started: Instant,
        failed: &mut Vec<ProviderAttempt>,
    ) -> Result<(), LlmError> {
        let client = &self.clients[index];
        let next = self.clients.get(index + 1);
        match next {
            Some(next) if error.is_retryable() => {
                tracing::warn!(
                    provider = client.provider(),
                    model = client.model(),
                    error = %error,
                    next = next.provider(),
                    "model call failed; falling back to the next provider"
                );
                failed.push(ProviderAttempt {
                    provider: client.provider().to_owned(),
                    model: client.model().to_owned(),
                    error,
                    duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                });
                Ok(())
            }
            _ => Err(with_attempts(error, failed)),
        }
    }

    /// The route of a reply from client `index`, after `failed`; a nested
    /// chain's own route (`inner`) goes on from ours.
    fn route(&self, index: usize, failed: Vec<ProviderAttempt>, inner: Option<Route>) -> Route {
        let client = &self.clients[index];
        match inner {
            Some(inner) => Route {
                failed: failed.into_iter().chain(inner.failed).collect(),
                ..inner
            },
            None => Route {
                provider: client.provider().to_owned(),
                model: client.model().to_owned(),
                failed,
            },
        }
    }
}

#[async_trait]
impl LlmClient for FallbackClient {
    /// The first client's provider.
    fn provider(&self) -> &str {
        self.clients[0].provider()
    }

    /// The first client's model.
    fn model(&self) -> &str {
        self.clients[0].model()
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let mut failed = Vec::new();
        for (index, client) in self.clients.iter().enumerate() {
            let started = Instant::now();
            let request = Self::request_for(index, request);
            let outcome = client
                .complete(&request, cancel)
                .instrument(attempt_span(client.as_ref(), index))
                .await;
            match outcome {
                Ok(mut response) => {
                    response.route = Some(self.route(index, failed, response.route.take()));
                    return Ok(response);
                }
                Err(error) => self.move_on(index, error, started, &mut failed)?,
            }
        }
        Err(with_attempts(no_client(), &failed))
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let mut failed = Vec::new();
        for (index, client) in self.clients.iter().enumerate() {
            let started = Instant::now();
            let request = Self::request_for(index, request);
            let opened = until_output(client.as_ref(), &request, cancel)
                .instrument(attempt_span(client.as_ref(), index))
                .await;
            match opened {
                Ok((mut held, rest)) => {
                    let inner = held
                        .iter()
                        .position(|event| matches!(event, StreamEvent::Routed { .. }));
                    let inner = inner.and_then(|at| match held.remove(at) {
                        StreamEvent::Routed { route } => Some(route),
                        _ => None,
                    });
                    let route = self.route(index, failed, inner);
                    let head = std::iter::once(StreamEvent::Routed { route }).chain(held).map(Ok);
                    return Ok(Box::pin(futures::stream::iter(head).chain(rest)));
                }
                Err(error) => self.move_on(index, error, started, &mut failed)?,
            }
        }
        Err(with_attempts(no_client(), &failed))
    }
}

/// Opens `client`'s stream and reads it up to its first piece of the reply
/// (or its end), returning the events read and the rest of the stream. An
/// error before that is the attempt's failure.
async fn until_output(
    client: &dyn LlmClient,
    request: &ChatRequest,
    cancel: &CancellationToken,
) -> Result<(Vec<StreamEvent>, EventStream), LlmError> {
    let mut events = client.stream(request, cancel).await?;
    let mut held = Vec::new();
    while let Some(event) = events.next().await {
        let event = event?;
        let output = is_output(&event);
        held.push(event);
        if output {
            break;
        }
    }
    Ok((held, events))
}

/// Whether `event` is part of the reply itself (text, reasoning, a tool
/// call, the stop), as opposed to news about it (start, usage, progress).
fn is_output(event: &StreamEvent) -> bool {
    !matches!(
        event,
        StreamEvent::Started { .. }
            | StreamEvent::Usage { .. }
            | StreamEvent::Progress { .. }
            | StreamEvent::Routed { .. }
    )
}

fn attempt_span(client: &dyn LlmClient, index: usize) -> tracing::Span {
    tracing::info_span!(
        "fallback_attempt",
        gen_ai.provider.name = client.provider(),
        gen_ai.request.model = client.model(),
        agentry.attempt = index + 1,
    )
}

/// What two clients can both do.
fn common(a: Capabilities, b: Capabilities) -> Capabilities {
    Capabilities {
        native_tools: a.native_tools && b.native_tools,
        parallel_tool_calls: a.parallel_tool_calls && b.parallel_tool_calls,
        streaming: a.streaming && b.streaming,
        prompt_caching: a.prompt_caching && b.prompt_caching,
        json_schema: a.json_schema && b.json_schema,
        format_with_tools: a.format_with_tools && b.format_with_tools,
    }
}

/// `error`, naming the attempts that failed before it.
fn with_attempts(mut error: LlmError, failed: &[ProviderAttempt]) -> LlmError {
    if !failed.is_empty() {
        let before: Vec<String> = failed.iter().map(|attempt| attempt.error.to_string()).collect();
        error.message = format!("{}; tried before it: {}", error.message, before.join("; "));
    }
    error
}

/// Never returned: a chain has at least one client, and the last one's
/// error ends the call.
fn no_client() -> LlmError {
    LlmError::invalid_request("the fallback chain has no client left to try")
}
