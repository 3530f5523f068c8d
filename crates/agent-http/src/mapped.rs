//! The one driver every provider's streamed reply goes through: decoded
//! body items in, [`StreamEvent`]s out, with the same handling of errors,
//! truncation and cancellation for every provider.

use std::collections::VecDeque;

use agent_core::{CancellationToken, EventStream, LlmError, LlmErrorKind, StreamEvent};
use futures::{FutureExt, Stream, StreamExt};

use crate::ChunkDecoder;

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

/// Decodes a whole body at once, fed in `pieces`, the way a client's
/// stream does (framing by `decoder`, each item's text to `mapper`, then
/// the end of the body), appending the events to `events`: for tests and
/// benchmarks of a provider's pure decoding. `items` is scratch space, kept
/// by the caller so a benchmark reuses it. The first error ends it.
pub fn decode_body<'p, D, M>(
    decoder: &mut D,
    mapper: &mut M,
    pieces: impl IntoIterator<Item = &'p [u8]>,
    items: &mut Vec<D::Item>,
    events: &mut Vec<StreamEvent>,
) -> Result<(), LlmError>
where
    D: ChunkDecoder,
    D::Item: AsRef<str>,
    M: EventMapper,
{
    for piece in pieces {
        decoder.push(piece, items);
        for item in items.drain(..) {
            mapper.push(item.as_ref(), events)?;
        }
    }
    decoder.finish(items);
    for item in items.drain(..) {
        mapper.push(item.as_ref(), events)?;
    }
    mapper.finish(events)
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
    /// `error` of an item that may be the part of one a broken connection
    /// cut (the decoder hands that part on before the transport error):
    /// when the transport error is next, it leads, and the mapper's words
    /// on the cut item follow.
    fn after_broken_connection(&mut self, error: LlmError) -> LlmError {
        match self.items.next().now_or_never() {
            Some(Some(Err(mut transport))) if transport.kind != LlmErrorKind::Cancelled => {
                transport.message = format!("{}; {}", transport.message, error.message);
                transport
            }
            _ => error,
        }
    }

    async fn next(mut self) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some((Ok(event), self));
            }
            if self.done {
                return None;
            }
            let outcome = match self.items.next().await {
                Some(Ok(data)) => self
                    .mapper
                    .push(&data, &mut self.scratch)
                    .map_err(|error| self.after_broken_connection(error)),
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
    async fn an_item_cut_by_a_broken_connection_is_named_after_the_transport_error() {
        let events = run(
            vec![Ok("a"), Ok("bad"), Err(LlmError::transport("reset"))],
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(events.len(), 2, "{events:?}");
        let error = events[1].as_ref().expect_err("an error");
        assert_eq!(error.kind, LlmErrorKind::Transport);
        assert_eq!(error.message, "reset; bad item");
        assert_eq!(error.provider.as_deref(), Some("testprov"));
    }

    #[test]
    fn a_whole_body_decodes_in_any_pieces_and_stops_at_the_first_error() {
        let mut events = Vec::new();
        let pieces: [&[u8]; 3] = [b"a\nb", b"\nst", b"op\n"];
        decode_body(
            &mut crate::ndjson::NdjsonDecoder::new(),
            &mut Lines::default(),
            pieces,
            &mut Vec::new(),
            &mut events,
        )
        .expect("a whole body");
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(matches!(events.last(), Some(StreamEvent::Stop { .. })));

        let mut events = Vec::new();
        let error = decode_body(
            &mut crate::ndjson::NdjsonDecoder::new(),
            &mut Lines::default(),
            [b"a\nbad\nb\n".as_slice()],
            &mut Vec::new(),
            &mut events,
        )
        .expect_err("a bad item");
        assert_eq!(error.message, "bad item");
        assert_eq!(events.len(), 2, "nothing after the bad item: {events:?}");
    }

    #[tokio::test]
    async fn a_cancelled_stream_ends_with_a_cancellation() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let events = run(vec![Ok("a")], &cancel).await;
        assert_eq!(events[1].as_ref().expect_err("an error").kind, LlmErrorKind::Cancelled);
    }
}
