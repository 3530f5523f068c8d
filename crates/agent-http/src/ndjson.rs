//! Newline-delimited JSON (Ollama's streaming format), decoded incrementally.

use agent_core::LlmError;
use bytes::Bytes;
use futures::Stream;

use crate::decoded::{ChunkDecoder, Decoded};

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
    Decoded::new(bytes, NdjsonDecoder::new())
}

/// The stream returned by [`ndjson_lines`].
pub type NdjsonStream<S> = Decoded<S, NdjsonDecoder>;

impl ChunkDecoder for NdjsonDecoder {
    type Item = String;

    fn push(&mut self, chunk: &[u8], out: &mut Vec<String>) {
        NdjsonDecoder::push(self, chunk, out);
    }

    fn finish(&mut self, out: &mut Vec<String>) {
        NdjsonDecoder::finish(self, out);
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
