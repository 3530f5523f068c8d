//! Newline-delimited JSON (Ollama's streaming format), decoded incrementally.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_core::LlmError;
use bytes::Bytes;
use futures::Stream;

/// An incremental NDJSON line splitter: feed it chunks, take out complete,
/// non-blank lines (CRLF tolerated). Parsing the JSON is the caller's job.
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    partial: Vec<u8>,
}

impl NdjsonDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk and appends every line it completes to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<String>) {
        let mut rest = chunk;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            self.partial.extend_from_slice(&rest[..end]);
            self.emit(out);
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    /// Ends the input; a last line without a newline is delivered.
    pub fn finish(&mut self, out: &mut Vec<String>) {
        self.emit(out);
    }

    fn emit(&mut self, out: &mut Vec<String>) {
        let line = String::from_utf8_lossy(&self.partial);
        let line = line.trim();
        if !line.is_empty() {
            out.push(line.to_owned());
        }
        self.partial.clear();
    }
}

/// Decodes a stream of byte chunks into NDJSON lines.
pub fn ndjson_lines<S>(bytes: S) -> NdjsonStream<S>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    NdjsonStream {
        inner: bytes,
        decoder: NdjsonDecoder::new(),
        ready: VecDeque::new(),
        scratch: Vec::new(),
        input_done: false,
    }
}

/// The stream returned by [`ndjson_lines`].
#[derive(Debug)]
pub struct NdjsonStream<S> {
    inner: S,
    decoder: NdjsonDecoder,
    ready: VecDeque<String>,
    scratch: Vec<String>,
    input_done: bool,
}

impl<S> Stream for NdjsonStream<S>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    type Item = Result<String, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(line) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(line)));
            }
            if this.input_done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error))),
                Poll::Ready(Some(Ok(chunk))) => {
                    this.decoder.push(&chunk, &mut this.scratch);
                    this.ready.extend(this.scratch.drain(..));
                }
                Poll::Ready(None) => {
                    this.input_done = true;
                    this.decoder.finish(&mut this.scratch);
                    this.ready.extend(this.scratch.drain(..));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere_are_reassembled_and_blank_lines_skipped() {
        let input = b"{\"a\":1}\r\n\n{\"b\":\"\xc3\xa9\"}\n{\"c\":3}";
        for split in 0..=input.len() {
            let mut decoder = NdjsonDecoder::new();
            let mut out = Vec::new();
            decoder.push(&input[..split], &mut out);
            decoder.push(&input[split..], &mut out);
            decoder.finish(&mut out);
            assert_eq!(out, ["{\"a\":1}", "{\"b\":\"é\"}", "{\"c\":3}"], "split at {split}");
        }
    }
}
