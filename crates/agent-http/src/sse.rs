//! Server-Sent Events, decoded incrementally from a byte stream.
//!
//! Follows the WHATWG event-stream rules: lines end in LF, CRLF or CR (also
//! when a CRLF is split across chunks), the `data:` lines of one event are
//! joined with `\n`, lines starting with `:` are comments, `event:` names the
//! event, a blank line dispatches it. A final event not followed by a blank
//! line is still delivered when the input ends, and `data: [DONE]` ends the
//! stream.

use agent_core::LlmError;
use bytes::Bytes;
use futures::Stream;

use crate::decoded::{ChunkDecoder, Decoded};

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

impl SseEvent {
    /// Whether this is the end marker `data: [DONE]`.
    pub fn is_done(&self) -> bool {
        self.data == "[DONE]"
    }
}

/// An incremental SSE decoder: feed it chunks, take out complete events.
/// Every input byte is looked at once, whatever the chunking.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The last chunk ended in CR: a leading LF completes that line end.
    skip_lf: bool,
    current: SseEvent,
    data_lines: usize,
}

impl SseDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk and appends every event it completes to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = chunk;
        if self.skip_lf {
            rest = rest.strip_prefix(b"\n").unwrap_or(rest);
        }
        self.skip_lf = false;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            if self.partial.is_empty() {
                self.process_line(&rest[..end], out);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.process_line(&line, out);
                line.clear();
                self.partial = line;
            }
            let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
            if rest[end] == b'\r' && end + 1 == rest.len() {
                self.skip_lf = true;
            }
            rest = &rest[end + if crlf { 2 } else { 1 }..];
        }
        self.partial.extend_from_slice(rest);
    }

    /// Ends the input: a pending line and a pending event are delivered.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
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
        match field {
            b"data" => {
                if self.data_lines > 0 {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(&String::from_utf8_lossy(value));
                self.data_lines += 1;
            }
            b"event" => self.current.event = String::from_utf8_lossy(value).into_owned(),
            b"id" => self.current.id = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.current);
        if self.data_lines > 0 {
            out.push(event);
        }
        self.data_lines = 0;
    }
}

/// Decodes a stream of byte chunks into SSE events, ending after `[DONE]`.
pub fn sse_events<S>(bytes: S) -> SseStream<S>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    Decoded::new(bytes, SseDecoder::new())
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

    proptest::proptest! {
        #[test]
        fn never_panics_and_chunking_does_not_matter(input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), split in 0usize..400) {
            let split = split.min(input.len());
            let whole = decode_chunks(&[&input]);
            let parts = decode_chunks(&[&input[..split], &input[split..]]);
            proptest::prop_assert_eq!(whole, parts);
        }
    }
}
