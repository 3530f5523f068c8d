//! A scripted [`LlmClient`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError, StreamAccumulator,
    StreamEvent, response_to_events,
};
use async_trait::async_trait;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Script {
    /// A complete response (streamed as replayed events by `stream`).
    Response(ChatResponse),
    /// Stream events (assembled into a response by `complete`). An `Err`
    /// item is yielded as a stream error at that point.
    Events(Vec<Result<StreamEvent, LlmError>>),
    /// The call fails.
    Error(LlmError),
}

#[derive(Debug, Clone)]
struct Entry {
    script: Script,
    delay: Duration,
}

#[derive(Debug, Default)]
struct Inner {
    queue: VecDeque<Entry>,
    requests: Vec<ChatRequest>,
}

/// An [`LlmClient`] that answers from a queue and records every request.
///
/// When the queue is empty a call fails with an `invalid_request` error saying
/// so, which makes a test that expected fewer calls fail loudly.
#[derive(Debug, Clone)]
pub struct ScriptedClient {
    inner: Arc<Mutex<Inner>>,
    capabilities: Capabilities,
    provider: String,
    model: String,
}

impl Default for ScriptedClient {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedClient {
    /// An empty script, with native tools, parallel calls and streaming.
    pub fn new() -> Self {
        Self {
            inner: Arc::default(),
            capabilities: Capabilities {
                native_tools: true,
                parallel_tool_calls: true,
                streaming: true,
                prompt_caching: false,
                json_schema: false,
                format_with_tools: false,
            },
            provider: "scripted".into(),
            model: "scripted-model".into(),
        }
    }

    /// Replaces the advertised capabilities (e.g. `native_tools: false` for a
    /// text-only model).
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sets the provider name reported by [`LlmClient::provider`].
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// Sets the model name reported by [`LlmClient::model`].
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Queues a response.
    pub fn respond(self, response: ChatResponse) -> Self {
        self.push(Script::Response(response), Duration::ZERO)
    }

    /// Queues a response that arrives after `delay` (cancellable).
    pub fn respond_after(self, delay: Duration, response: ChatResponse) -> Self {
        self.push(Script::Response(response), delay)
    }

    /// Queues a stream of events.
    pub fn stream_events(self, events: Vec<StreamEvent>) -> Self {
        self.push(Script::Events(events.into_iter().map(Ok).collect()), Duration::ZERO)
    }

    /// Queues a failure.
    pub fn fail(self, error: LlmError) -> Self {
        self.push(Script::Error(error), Duration::ZERO)
    }

    /// Queues any scripted answer after `delay`.
    pub fn push(self, script: Script, delay: Duration) -> Self {
        self.lock().queue.push_back(Entry { script, delay });
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// How many scripted answers are left.
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn next(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<Script, LlmError> {
        let entry = {
            let mut inner = self.lock();
            inner.requests.push(request.clone());
            inner.queue.pop_front()
        };
        let Some(entry) = entry else {
            return Err(LlmError::invalid_request("the scripted client has no more responses"));
        };
        if !entry.delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(entry.delay) => {}
                () = cancel.cancelled() => return Err(LlmError::cancelled()),
            }
        }
        if cancel.is_cancelled() {
            return Err(LlmError::cancelled());
        }
        Ok(entry.script)
    }
}

#[async_trait]
impl LlmClient for ScriptedClient {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        match self.next(request, cancel).await? {
            Script::Response(response) => Ok(response),
            Script::Error(error) => Err(error),
            Script::Events(events) => {
                let mut accumulator = StreamAccumulator::new();
                for event in events {
                    accumulator.push(event?)?;
                }
                accumulator.finish()
            }
        }
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let events = match self.next(request, cancel).await? {
            Script::Response(response) => response_to_events(response).into_iter().map(Ok).collect(),
            Script::Events(events) => events,
            Script::Error(error) => return Err(error),
        };
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{LlmErrorKind, Message, StopReason, Usage};
    use futures::StreamExt;

    use super::*;
    use crate::response;

    #[tokio::test]
    async fn answers_in_order_records_requests_and_fails_when_exhausted() {
        let client = ScriptedClient::new()
            .respond(response::text("one"))
            .fail(LlmError::auth("bad key"));
        let request = ChatRequest::new(vec![Message::user("hi")]);
        let cancel = CancellationToken::new();
        assert_eq!(
            client.complete(&request, &cancel).await.map(|r| r.message.content).ok(),
            Some("one".to_owned())
        );
        assert_eq!(
            client.complete(&request, &cancel).await.err().map(|e| e.kind),
            Some(LlmErrorKind::Auth)
        );
        let exhausted = client.complete(&request, &cancel).await.err();
        assert!(exhausted.is_some_and(|e| e.message.contains("no more responses")));
        assert_eq!(client.requests().len(), 3);
    }

    #[tokio::test]
    async fn events_are_assembled_by_complete_and_streamed_by_stream() {
        let events = vec![
            StreamEvent::TextDelta { text: "Hel".into() },
            StreamEvent::TextDelta { text: "lo".into() },
            StreamEvent::Usage {
                usage: Usage::new(3, 2),
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn,
            },
        ];
        let client = ScriptedClient::new()
            .stream_events(events.clone())
            .stream_events(events.clone());
        let request = ChatRequest::default();
        let cancel = CancellationToken::new();
        let response = client.complete(&request, &cancel).await.ok();
        assert_eq!(
            response.map(|r| (r.message.content, r.usage)),
            Some(("Hello".into(), Usage::new(3, 2)))
        );
        let stream = client.stream(&request, &cancel).await.ok();
        let streamed: Vec<_> = match stream {
            Some(stream) => stream.filter_map(|e| async move { e.ok() }).collect().await,
            None => Vec::new(),
        };
        assert_eq!(streamed, events);
    }

    #[tokio::test]
    async fn a_delayed_answer_is_cancellable() {
        let client = ScriptedClient::new().respond_after(Duration::from_secs(30), response::text("late"));
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            trigger.cancel();
        });
        let started = std::time::Instant::now();
        let result = client.complete(&ChatRequest::default(), &cancel).await;
        assert_eq!(result.err().map(|e| e.kind), Some(LlmErrorKind::Cancelled));
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
