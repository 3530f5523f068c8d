//! Server-Sent Events, decoded incrementally from a byte stream.
//!
//! Follows the WHATWG event-stream rules: lines end in LF, CRLF or CR (also
//! when a CRLF is split across chunks), the `data:` lines of one event are
//! joined with `\n`, lines starting with `:` are comments, `event:` names the
//! event, a blank line dispatches it. A final event not followed by a blank
//! line is still delivered when the input ends, and `data: [DONE]` ends the
//! stream.
//!
//! Nothing is buffered without bound: a line, or the data of one event,
//! longer than the decoder's limit ([`HttpConfig::DEFAULT_MAX_EVENT_BYTES`]
//! unless set with [`SseDecoder::with_limit`]) stops the decoder with
//! [`HttpError::SseLineTooLong`] or [`HttpError::SseEventTooLarge`], and the
//! stream ends with that error.

use agent_core::LlmError;
use bytes::Bytes;
use futures::Stream;

use crate::decoded::{ChunkDecoder, Decoded};
use crate::{HttpConfig, HttpError};

/// One decoded event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name (empty when the event had none).
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `id:` field, when present.
    pub id: Option<String>,
}

impl AsRef<str> for SseEvent {
    /// The event's `data`.
    fn as_ref(&self) -> &str {
        &self.data
    }
}

impl SseEvent {
    /// Whether this is the end marker `data: [DONE]`.
    pub fn is_done(&self) -> bool {
        self.data == "[DONE]"
    }
}

/// An incremental SSE decoder: feed it chunks, take out complete events.
/// Every input byte is looked at once, whatever the chunking. A line or an
/// event over the limit stops it, and so does a field that is not UTF-8:
/// see [`error`](Self::error).
#[derive(Debug)]
pub struct SseDecoder {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The last chunk ended in CR: a leading LF completes that line end.
    skip_lf: bool,
    current: SseEvent,
    data_lines: usize,
    /// The most bytes in one line, and in one event's data.
    max_bytes: usize,
    /// Why decoding stopped; nothing more is decoded.
    error: Option<HttpError>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with nothing buffered, whose lines and events may be up to
    /// [`HttpConfig::DEFAULT_MAX_EVENT_BYTES`] long.
    pub fn new() -> Self {
        Self::with_limit(HttpConfig::DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder whose lines, and events' data, may be up to `max_bytes` long.
    pub fn with_limit(max_bytes: usize) -> Self {
        Self {
            partial: Vec::new(),
            skip_lf: false,
            current: SseEvent::default(),
            data_lines: 0,
            max_bytes,
            error: None,
        }
    }

    /// Why decoding stopped (a line or an event over the limit), if it did.
    pub fn error(&self) -> Option<&HttpError> {
        self.error.as_ref()
    }

    /// Feeds a chunk and appends every event it completes to `out`. Does
    /// nothing once the decoder has stopped on an [`error`](Self::error).
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        if self.error.is_some() {
            return;
        }
        let mut rest = chunk;
        if self.skip_lf {
            rest = rest.strip_prefix(b"\n").unwrap_or(rest);
        }
        self.skip_lf = false;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            if self.partial.len() + end > self.max_bytes {
                self.fail(HttpError::SseLineTooLong { limit: self.max_bytes });
                return;
            }
            if self.partial.is_empty() {
                self.process_line(&rest[..end], out);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.process_line(&line, out);
                line.clear();
                self.partial = line;
            }
            if self.error.is_some() {
                return;
            }
            let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
            if rest[end] == b'\r' && end + 1 == rest.len() {
                self.skip_lf = true;
            }
            rest = &rest[end + if crlf { 2 } else { 1 }..];
        }
        if self.partial.len() + rest.len() > self.max_bytes {
            self.fail(HttpError::SseLineTooLong { limit: self.max_bytes });
            return;
        }
        self.partial.extend_from_slice(rest);
    }

    /// Ends the input: a pending line and a pending event are delivered
    /// (unless the decoder has stopped on an error).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if self.error.is_some() {
            return;
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.process_line(&line, out);
        }
        self.skip_lf = false;
        self.dispatch(out);
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let Ok(text) = std::str::from_utf8(value) else {
            if matches!(field, b"data" | b"event" | b"id") {
                self.fail(HttpError::InvalidUtf8 { format: "SSE field" });
            }
            return;
        };
        match field {
            b"data" => {
                let separator = usize::from(self.data_lines > 0);
                if self.current.data.len() + separator + text.len() > self.max_bytes {
                    self.fail(HttpError::SseEventTooLarge { limit: self.max_bytes });
                    return;
                }
                if separator > 0 {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(text);
                self.data_lines += 1;
            }
            b"event" => text.clone_into(&mut self.current.event),
            b"id" => self.current.id = Some(text.to_owned()),
            _ => {}
        }
    }

    /// Stops decoding, dropping what was buffered.
    fn fail(&mut self, error: HttpError) {
        self.error = Some(error);
        self.partial = Vec::new();
        self.current = SseEvent::default();
        self.data_lines = 0;
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.current);
        if self.data_lines > 0 {
            out.push(event);
        }
        self.data_lines = 0;
    }
}

/// Decodes a stream of byte chunks into SSE events, ending after `[DONE]`,
/// or with an error at a line or event over
/// [`HttpConfig::DEFAULT_MAX_EVENT_BYTES`].
pub fn sse_events<S>(bytes: S) -> SseStream<S>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    Decoded::new(bytes, SseDecoder::new())
}

/// [`sse_events`] with lines and events of up to `max_bytes`.
pub fn sse_events_with_limit<S>(bytes: S, max_bytes: usize) -> SseStream<S>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    Decoded::new(bytes, SseDecoder::with_limit(max_bytes))
}

/// The stream returned by [`sse_events`].
pub type SseStream<S> = Decoded<S, SseDecoder>;

impl ChunkDecoder for SseDecoder {
    type Item = SseEvent;

    fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        SseDecoder::push(self, chunk, out);
    }

    fn finish(&mut self, out: &mut Vec<SseEvent>) {
        SseDecoder::finish(self, out);
    }

    fn is_end(event: &SseEvent) -> bool {
        event.is_done()
    }

    fn error(&self) -> Option<LlmError> {
        self.error.clone().map(LlmError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut out);
        }
        decoder.finish(&mut out);
        out
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn multi_line_data_comments_and_event_names() {
        let events = decode_chunks(&[b": keep-alive\nevent: message_start\ndata: {\"a\":\ndata: 1}\n\ndata:x\n\n"]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event, "message_start");
        assert_eq!(events[0].data, "{\"a\":\n1}");
        assert_eq!(events[1].data, "x", "the space after the colon is optional");
        assert_eq!(events[1].event, "", "event names do not carry over");
    }

    #[test]
    fn crlf_cr_and_lf_line_ends_all_work_even_when_split() {
        let expected = ["a", "b", "c"];
        assert_eq!(
            data(&decode_chunks(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"])),
            expected
        );
        assert_eq!(
            data(&decode_chunks(&[
                b"data: a\r",
                b"\n\r",
                b"\ndata: b\r",
                b"\r",
                b"data: c\n",
                b"\n"
            ])),
            expected
        );
    }

    #[test]
    fn a_final_event_without_a_blank_line_is_delivered() {
        assert_eq!(data(&decode_chunks(&[b"data: one\n\ndata: two"])), ["one", "two"]);
        assert_eq!(data(&decode_chunks(&[b"data: one\n\ndata: two\n"])), ["one", "two"]);
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert!(decode_chunks(&[b"event: ping\n\n: comment\n\n"]).is_empty());
    }

    #[test]
    fn every_split_of_an_input_decodes_the_same() {
        let input: &[u8] = b"event: a\r\ndata: {\"x\": 1}\r\n\r\n: c\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n";
        let whole = decode_chunks(&[input]);
        for split in 0..=input.len() {
            assert_eq!(
                decode_chunks(&[&input[..split], &input[split..]]),
                whole,
                "split at {split}"
            );
        }
        let bytewise: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(decode_chunks(&bytewise), whole);
    }

    #[tokio::test]
    async fn the_stream_ends_at_done() {
        use futures::StreamExt;
        let chunks: Vec<Result<Bytes, LlmError>> = vec![
            Ok(Bytes::from_static(b"data: 1\n\nda")),
            Ok(Bytes::from_static(b"ta: 2\n\ndata: [DONE]\n\ndata: after\n\n")),
        ];
        let events: Vec<_> = sse_events(futures::stream::iter(chunks)).collect().await;
        let data: Vec<_> = events.into_iter().filter_map(Result::ok).map(|e| e.data).collect();
        assert_eq!(data, ["1", "2"]);
    }

    fn decode_limited(chunks: &[&[u8]], limit: usize) -> (Vec<SseEvent>, Option<HttpError>) {
        let mut decoder = SseDecoder::with_limit(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut out);
        }
        decoder.finish(&mut out);
        (out, decoder.error().cloned())
    }

    #[test]
    fn lines_and_events_up_to_the_limit_pass_and_longer_ones_stop_the_decoder() {
        let (events, error) = decode_limited(&[b"data: 12345678\n\n"], 14);
        assert_eq!((data(&events), error), (vec!["12345678"], None), "a 14-byte line fits");
        let (events, error) = decode_limited(&[b"data: ok\n\ndata: 123456789\n\ndata: late\n\n"], 14);
        assert_eq!(data(&events), ["ok"]);
        assert_eq!(error, Some(HttpError::SseLineTooLong { limit: 14 }));
        let (events, error) = decode_limited(&[b"data: 1234\ndata: 5678\ndata: 9\n\n"], 10);
        assert!(events.is_empty());
        assert_eq!(error, Some(HttpError::SseEventTooLarge { limit: 10 }));
        let (events, error) = decode_limited(&[b": comment that goes on", b" and on and on"], 16);
        assert!(events.is_empty());
        assert_eq!(
            error,
            Some(HttpError::SseLineTooLong { limit: 16 }),
            "even unfinished lines"
        );
    }

    proptest::proptest! {
        #[test]
        fn limits_hold_whatever_the_chunking(
            tokens in proptest::collection::vec(
                proptest::sample::select(vec!["data: ", "data:", "x", "xyz", "\n", "\r\n", "\r", ": c", "event: e", "id: 7"]),
                0..60,
            ),
            split in 0usize..400,
            limit in 1usize..24,
        ) {
            let input = tokens.concat().into_bytes();
            let split = split.min(input.len());
            let whole = decode_limited(&[&input], limit);
            let parts = decode_limited(&[&input[..split], &input[split..]], limit);
            proptest::prop_assert!(whole.0.iter().all(|event| event.data.len() <= limit));
            proptest::prop_assert_eq!(whole, parts);
        }

        #[test]
        fn never_panics_and_chunking_does_not_matter(input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), split in 0usize..400) {
            let split = split.min(input.len());
            let whole = decode_chunks(&[&input]);
            let parts = decode_chunks(&[&input[..split], &input[split..]]);
            proptest::prop_assert_eq!(whole, parts);
        }
    }

    /// Invalid UTF-8 in a field is a typed error, not text silently
    /// replaced (see the NDJSON decoder's test of the same).
    #[test]
    fn a_field_that_is_not_utf8_stops_the_decoder_with_a_typed_error() {
        for input in [
            &b"data: ok\n\ndata: \xff\n\ndata: after\n\n"[..],
            b"data: ok\n\nevent: \xc3\ndata: x\n\n",
        ] {
            let mut decoder = SseDecoder::new();
            let mut out = Vec::new();
            decoder.push(input, &mut out);
            decoder.finish(&mut out);
            assert_eq!(data(&out), ["ok"]);
            assert_eq!(decoder.error(), Some(&HttpError::InvalidUtf8 { format: "SSE field" }));
        }
    }
}
