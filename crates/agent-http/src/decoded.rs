//! One stream adapter for every incremental body decoder.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_core::LlmError;
use bytes::Bytes;
use futures::Stream;

/// An incremental decoder of a response body: fed chunks, it appends the
/// items they complete.
pub trait ChunkDecoder {
    /// What it decodes (an SSE event, an NDJSON line, ...).
    type Item;

    /// Feeds a chunk; appends every completed item to `out`.
    fn push(&mut self, chunk: &[u8], out: &mut Vec<Self::Item>);

    /// Ends the input; appends what was pending.
    fn finish(&mut self, out: &mut Vec<Self::Item>);

    /// Whether `item` marks the end of the stream (it is not yielded).
    fn is_end(_item: &Self::Item) -> bool {
        false
    }

    /// Why the decoder stopped (e.g. an item over its size limit), if it
    /// did: the stream yields the items completed before, then this error,
    /// and ends.
    fn error(&self) -> Option<LlmError> {
        None
    }
}

/// A byte stream decoded item by item with a [`ChunkDecoder`].
#[derive(Debug)]
pub struct Decoded<S, D: ChunkDecoder> {
    inner: S,
    decoder: D,
    ready: VecDeque<D::Item>,
    scratch: Vec<D::Item>,
    /// The decoder's error, yielded after the items before it.
    failure: Option<LlmError>,
    input_done: bool,
    ended: bool,
}

impl<S, D: ChunkDecoder> Decoded<S, D> {
    /// Decodes `inner` with `decoder`.
    pub fn new(inner: S, decoder: D) -> Self {
        Self {
            inner,
            decoder,
            ready: VecDeque::new(),
            scratch: Vec::new(),
            failure: None,
            input_done: false,
            ended: false,
        }
    }
}

impl<S, D> Stream for Decoded<S, D>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
    D: ChunkDecoder + Unpin,
    D::Item: Unpin,
{
    type Item = Result<D::Item, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if let Some(item) = this.ready.pop_front() {
                if D::is_end(&item) {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                return Poll::Ready(Some(Ok(item)));
            }
            if let Some(error) = this.failure.take() {
                this.ended = true;
                return Poll::Ready(Some(Err(error)));
            }
            if this.input_done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(error))) => {
                    // The connection broke: what arrived of the item it cut
                    // goes out first, as at the end of a whole body, so the
                    // mapper can say what the cut item was (a tool call).
                    this.decoder.finish(&mut this.scratch);
                    this.failure = Some(error);
                    this.input_done = true;
                }
                Poll::Ready(Some(Ok(chunk))) => this.decoder.push(&chunk, &mut this.scratch),
                Poll::Ready(None) => {
                    this.input_done = true;
                    this.decoder.finish(&mut this.scratch);
                }
            }
            this.ready.extend(this.scratch.drain(..));
            if let Some(error) = this.decoder.error()
                && this.failure.is_none()
            {
                this.failure = Some(error);
                this.input_done = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::ndjson::NdjsonDecoder;

    #[tokio::test]
    async fn a_broken_connection_hands_on_the_part_of_the_item_it_cut_then_the_error() {
        let chunks: Vec<Result<Bytes, LlmError>> = vec![
            Ok(Bytes::from_static(b"{\"a\":1}\n{\"b\":")),
            Err(LlmError::transport("reset")),
            Ok(Bytes::from_static(b"never read\n")),
        ];
        let items: Vec<Result<String, LlmError>> = Decoded::new(futures::stream::iter(chunks), NdjsonDecoder::new())
            .collect()
            .await;
        assert_eq!(items.len(), 3, "{items:?}");
        assert_eq!(items[0].as_deref().ok(), Some("{\"a\":1}"));
        assert_eq!(items[1].as_deref().ok(), Some("{\"b\":"));
        assert_eq!(
            items[2].as_ref().err().map(|error| error.message.as_str()),
            Some("reset")
        );
    }
}
