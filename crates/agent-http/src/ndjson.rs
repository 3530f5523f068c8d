//! Newline-delimited JSON (Ollama's streaming format), decoded incrementally.
//!
//! A line longer than the decoder's limit
//! ([`HttpConfig::DEFAULT_MAX_EVENT_BYTES`] unless set with
//! [`NdjsonDecoder::with_limit`]) is not buffered: the decoder stops with
//! [`HttpError::NdjsonLineTooLong`] and the stream ends with that error.

use agent_core::LlmError;
use bytes::Bytes;
use futures::Stream;

use crate::decoded::{ChunkDecoder, Decoded};
use crate::{HttpConfig, HttpError};

/// An incremental NDJSON line splitter: feed it chunks, take out complete,
/// non-blank lines (CRLF tolerated). A line that is not UTF-8 stops it
/// with [`HttpError::InvalidUtf8`]. Parsing the JSON is the caller's job.
#[derive(Debug)]
pub struct NdjsonDecoder {
    partial: Vec<u8>,
    /// The most bytes in one line.
    max_bytes: usize,
    /// Why decoding stopped; nothing more is decoded.
    error: Option<HttpError>,
}

impl Default for NdjsonDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl NdjsonDecoder {
    /// A decoder with nothing buffered, whose lines may be up to
    /// [`HttpConfig::DEFAULT_MAX_EVENT_BYTES`] long.
    pub fn new() -> Self {
        Self::with_limit(HttpConfig::DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder whose lines may be up to `max_bytes` long.
    pub fn with_limit(max_bytes: usize) -> Self {
        Self {
            partial: Vec::new(),
            max_bytes,
            error: None,
        }
    }

    /// Why decoding stopped (a line over the limit), if it did.
    pub fn error(&self) -> Option<&HttpError> {
        self.error.as_ref()
    }

    /// Feeds a chunk and appends every line it completes to `out`. Does
    /// nothing once the decoder has stopped on an [`error`](Self::error).
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<String>) {
        if self.error.is_some() {
            return;
        }
        let mut rest = chunk;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            if self.partial.len() + end > self.max_bytes {
                self.fail();
                return;
            }
            self.partial.extend_from_slice(&rest[..end]);
            self.emit(out);
            if self.error.is_some() {
                return;
            }
            rest = &rest[end + 1..];
        }
        if self.partial.len() + rest.len() > self.max_bytes {
            self.fail();
            return;
        }
        self.partial.extend_from_slice(rest);
    }

    /// Ends the input; a last line without a newline is delivered (unless
    /// the decoder has stopped on an error).
    pub fn finish(&mut self, out: &mut Vec<String>) {
        if self.error.is_none() {
            self.emit(out);
        }
    }

    fn fail(&mut self) {
        self.error = Some(HttpError::NdjsonLineTooLong { limit: self.max_bytes });
        self.partial = Vec::new();
    }

    /// Delivers the buffered line; one that is not UTF-8 stops the decoder.
    fn emit(&mut self, out: &mut Vec<String>) {
        let Ok(line) = std::str::from_utf8(&self.partial) else {
            self.error = Some(HttpError::InvalidUtf8 { format: "NDJSON line" });
            self.partial = Vec::new();
            return;
        };
        let line = line.trim();
        if !line.is_empty() {
            out.push(line.to_owned());
        }
        self.partial.clear();
    }
}

/// Decodes a stream of byte chunks into NDJSON lines, ending with an error
/// at a line over [`HttpConfig::DEFAULT_MAX_EVENT_BYTES`].
pub fn ndjson_lines<S>(bytes: S) -> NdjsonStream<S>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    Decoded::new(bytes, NdjsonDecoder::new())
}

/// [`ndjson_lines`] with lines of up to `max_bytes`.
pub fn ndjson_lines_with_limit<S>(bytes: S, max_bytes: usize) -> NdjsonStream<S>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    Decoded::new(bytes, NdjsonDecoder::with_limit(max_bytes))
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

    fn error(&self) -> Option<LlmError> {
        self.error.clone().map(LlmError::from)
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

    #[test]
    fn a_line_over_the_limit_stops_the_decoder_however_it_is_split() {
        let input = b"{\"a\":12}\n{\"b\":123}\n{\"c\":3}\n";
        for split in 0..=input.len() {
            let mut decoder = NdjsonDecoder::with_limit(8);
            let mut out = Vec::new();
            decoder.push(&input[..split], &mut out);
            decoder.push(&input[split..], &mut out);
            decoder.finish(&mut out);
            assert_eq!(out, ["{\"a\":12}"], "split at {split}");
            assert_eq!(decoder.error(), Some(&HttpError::NdjsonLineTooLong { limit: 8 }));
        }
    }

    /// Found by the `ndjson_decoder` fuzz target: invalid UTF-8 was replaced
    /// with U+FFFD (3 bytes for each bad byte), so a line within the limit
    /// came out over it, and the reply's text changed without a word.
    #[test]
    fn a_line_that_is_not_utf8_stops_the_decoder_with_a_typed_error() {
        let input = b"{\"a\":1}\n{\"b\":\"\x92\x92\"}\n{\"c\":3}\n";
        for split in 0..=input.len() {
            let mut decoder = NdjsonDecoder::with_limit(16);
            let mut out = Vec::new();
            decoder.push(&input[..split], &mut out);
            decoder.push(&input[split..], &mut out);
            decoder.finish(&mut out);
            assert_eq!(out, ["{\"a\":1}"], "split at {split}");
            assert_eq!(decoder.error(), Some(&HttpError::InvalidUtf8 { format: "NDJSON line" }));
        }
    }
}
