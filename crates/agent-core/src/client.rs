//! The port every model provider implements.

use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;
use futures_core::Stream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{ChatRequest, ChatResponse, LlmError, StreamEvent};

/// A boxed stream of [`StreamEvent`]s, as returned by [`LlmClient::stream`].
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// What a client (provider + model) can do. Used by the runner to choose
/// between native tool calling and the text protocol, and so on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Capabilities {
    /// Tools are sent as definitions and calls come back structured.
    pub native_tools: bool,
    /// Several tool calls can come back in one turn.
    pub parallel_tool_calls: bool,
    /// Replies can be streamed as they are generated.
    pub streaming: bool,
    /// Explicit prompt caching is available ([`ChatRequest::prompt_caching`]).
    pub prompt_caching: bool,
    /// Replies can be constrained to a JSON schema.
    pub json_schema: bool,
    /// A response format applies to the answer without keeping the model
    /// from calling the tools offered with it (the local model's grammar
    /// admits a tool call or the answer). Without it, a run sends its
    /// answer format only with calls that cannot call tools: strict
    /// OpenAI-compatible servers such as vLLM stop calling tools when a
    /// format comes with them.
    pub format_with_tools: bool,
}

/// A chat model behind some provider. Object safe: use it as `Arc<dyn LlmClient>`.
///
/// Implementations map [`ChatRequest`] to their wire format and back; they must
/// stop promptly (returning [`LlmError::cancelled`]) when `cancel` fires.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// The provider's name (`openai`, `anthropic`, `llama`, ...), as used in
    /// telemetry (`gen_ai.provider.name`) and the model catalog.
    fn provider(&self) -> &str;

    /// The model requests go to unless [`ChatRequest::model`] overrides it.
    fn model(&self) -> &str;

    /// What this client can do.
    fn capabilities(&self) -> Capabilities;

    /// Sends a request and waits for the whole reply.
    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError>;

    /// Sends a request and returns the reply as it is generated.
    ///
    /// The default calls [`complete`](Self::complete) and replays the response
    /// as events, for providers that cannot stream.
    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let response = self.complete(request, cancel).await?;
        Ok(Box::pin(ReplayStream(
            crate::stream::response_to_events(response).into_iter(),
        )))
    }
}

/// A stream that yields already-known events.
struct ReplayStream(std::vec::IntoIter<StreamEvent>);

impl Stream for ReplayStream {
    type Item = Result<StreamEvent, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.next().map(Ok))
    }
}

/// A model client as an agent takes it: any [`LlmClient`] by value, or one
/// already shared (`Arc<dyn LlmClient>`, `Arc<C>`), so the same client can
/// serve several agents without being wrapped twice.
pub trait IntoLlmClient {
    /// The client, shared.
    fn into_llm_client(self) -> std::sync::Arc<dyn LlmClient>;
}

impl<C: LlmClient + 'static> IntoLlmClient for C {
    fn into_llm_client(self) -> std::sync::Arc<dyn LlmClient> {
        std::sync::Arc::new(self)
    }
}

impl IntoLlmClient for std::sync::Arc<dyn LlmClient> {
    fn into_llm_client(self) -> std::sync::Arc<dyn LlmClient> {
        self
    }
}

impl<C: LlmClient + 'static> IntoLlmClient for std::sync::Arc<C> {
    fn into_llm_client(self) -> std::sync::Arc<dyn LlmClient> {
        self
    }
}
