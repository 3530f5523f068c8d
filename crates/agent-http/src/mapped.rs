//! The one driver every provider's streamed reply goes through: decoded
//! body items in, [`StreamEvent`]s out, with the same handling of errors,
//! truncation and cancellation for every provider.

use std::collections::VecDeque;

use agent_core::{CancellationToken, EventStream, LlmError, LlmErrorKind, StreamEvent};
use futures::{Stream, StreamExt};

/// A provider's pure stream mapper, as [`map_events`] drives it.
pub trait EventMapper: Send + 'static {
    /// Takes one decoded item (an SSE event's `data`, an NDJSON line) and
    /// appends the events it implies.
    fn push(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;

    /// The body ended: appends what is pending, or fails when the reply was
    /// cut short.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;

    /// Whether the reply's last event arrived: nothing more is read.
    fn is_finished(&self) -> bool;

    /// Whether the reply is already whole, so a connection that breaks now
    /// loses nothing and the reply ends normally. By default only once it
    /// is finished.
    fn is_complete(&self) -> bool {
        self.is_finished()
    }

    /// What a stream that stops here lacks, added to transport errors.
    fn truncation_message(&self) -> String;
}

/// Maps `items` (the decoded body) with `mapper` into the event stream a
/// client returns. Errors name `provider`; nothing follows an error, not
/// even events already mapped from the same item, so a half tool call never
/// gets through; a cancelled request ends with a cancellation error.
pub fn map_events<S, M>(items: S, mapper: M, cancel: &CancellationToken, provider: &str) -> EventStream
where
    S: Stream<Item = Result<String, LlmError>> + Send + Unpin + 'static,
    M: EventMapper,
{
    let state = State {
        items,
        mapper,
        ready: VecDeque::new(),
        scratch: Vec::new(),
        done: false,
        cancel: cancel.clone(),
        provider: provider.to_owned(),
    };
    Box::pin(futures::stream::unfold(state, State::next))
}

/// What the event stream keeps between polls.
struct State<S, M> {
    items: S,
    mapper: M,
    ready: VecDeque<StreamEvent>,
    scratch: Vec<StreamEvent>,
    done: bool,
    cancel: CancellationToken,
    provider: String,
}

impl<S, M> State<S, M>
where
    S: Stream<Item = Result<String, LlmError>> + Unpin,
    M: EventMapper,
{
    async fn next(mut self) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some((Ok(event), self));
            }
            if self.done {
                return None;
            }
            let outcome = match self.items.next().await {
                Some(Ok(data)) => self.mapper.push(&data, &mut self.scratch),
                Some(Err(_)) if self.mapper.is_complete() && !self.cancel.is_cancelled() => {
                    // The reply was whole before the connection broke.
                    self.done = true;
                    self.mapper.finish(&mut self.scratch)
                }
                Some(Err(mut error)) => {
                    if error.kind != LlmErrorKind::Cancelled {
                        error.message = format!("{}; {}", error.message, self.mapper.truncation_message());
                    }
                    Err(error)
                }
                None => {
                    self.done = true;
                    if self.cancel.is_cancelled() {
                        Err(LlmError::cancelled())
                    } else {
                        self.mapper.finish(&mut self.scratch)
                    }
                }
            };
            self.ready.extend(self.scratch.drain(..));
            if let Err(mut error) = outcome {
                self.ready.clear();
                self.done = true;
                if self.cancel.is_cancelled() && error.kind != LlmErrorKind::Cancelled {
                    error = LlmError::cancelled();
                }
                return Some((Err(error.or_provider(&self.provider)), self));
            }
            if self.mapper.is_finished() {
                // The last event is the end, whatever the connection does.
                self.done = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_core::StopReason;

    use super::*;

    /// Text per item; `stop` finishes; the reply is complete after `stop`.
    #[derive(Default)]
    struct Lines {
        finished: bool,
    }

    impl EventMapper for Lines {
        fn push(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
            match data {
                "stop" => {
                    self.finished = true;
                    out.push(StreamEvent::Stop {
                        reason: StopReason::EndTurn,
                    });
                }
                "bad" => {
                    out.push(StreamEvent::TextDelta { text: "half".into() });
                    return Err(LlmError::decode("bad item"));
                }
                text => out.push(StreamEvent::TextDelta { text: text.into() }),
            }
            Ok(())
        }

        fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
            if self.finished {
                Ok(())
            } else {
                Err(LlmError::decode("cut short"))
            }
        }

        fn is_finished(&self) -> bool {
            self.finished
        }

        fn truncation_message(&self) -> String {
            "no stop yet".to_owned()
        }
    }

    async fn run(
        items: Vec<Result<&'static str, LlmError>>,
        cancel: &CancellationToken,
    ) -> Vec<Result<StreamEvent, LlmError>> {
        let items: Vec<Result<String, LlmError>> = items.into_iter().map(|item| item.map(str::to_owned)).collect();
        let items = futures::stream::iter(items);
        map_events(items, Lines::default(), cancel, "testprov").collect().await
    }

    #[tokio::test]
    async fn events_flow_and_the_last_one_ends_the_stream() {
        let events = run(vec![Ok("a"), Ok("stop"), Ok("ignored")], &CancellationToken::new()).await;
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(Result::is_ok));
    }

    #[tokio::test]
    async fn a_failing_item_drops_its_events_and_ends_with_a_named_error() {
        let events = run(vec![Ok("a"), Ok("bad"), Ok("b")], &CancellationToken::new()).await;
        assert_eq!(events.len(), 2, "{events:?}");
        let error = events[1].as_ref().expect_err("an error");
        assert_eq!(error.provider.as_deref(), Some("testprov"));
        assert_eq!(error.message, "bad item");
    }

    #[tokio::test]
    async fn a_broken_body_says_what_was_cut_and_an_ended_one_is_finished() {
        let events = run(
            vec![Ok("a"), Err(LlmError::transport("reset"))],
            &CancellationToken::new(),
        )
        .await;
        let error = events[1].as_ref().expect_err("an error");
        assert_eq!(error.message, "reset; no stop yet");
        let events = run(vec![Ok("a")], &CancellationToken::new()).await;
        assert_eq!(events[1].as_ref().expect_err("an error").message, "cut short");
    }

    #[tokio::test]
    async fn a_cancelled_stream_ends_with_a_cancellation() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let events = run(vec![Ok("a")], &cancel).await;
        assert_eq!(events[1].as_ref().expect_err("an error").kind, LlmErrorKind::Cancelled);
    }
}
