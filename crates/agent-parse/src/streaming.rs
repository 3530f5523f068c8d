//! [`StreamingToolCallFilter`]: hides `<tool_call>` blocks from streamed text.

use crate::tool_calls::{BlockEnd, MalformedCall, ParsedCall, ParsedReply, decode_tagged_block};

/// The tag that opens a tool call.
pub const OPEN_TAG: &str = "<tool_call>";
/// The tag that closes a tool call.
pub const CLOSE_TAG: &str = "</tool_call>";

/// Separates visible text from `<tool_call>...</tool_call>` blocks while a
/// reply streams in.
///
/// [`push`](Self::push) each text delta; it returns the text that is safe
/// to show now. Plain text is released as soon as it cannot be part of a
/// tag; a partial tag (`<tool_c`) and everything inside a block are held
/// back, so a UI never shows protocol tags. [`finish`](Self::finish)
/// returns the rest of the text and the calls.
///
/// The concatenation of everything returned, and the calls, are the same
/// however the text is split into deltas, and the same as
/// [`ToolCallParser::parse`](crate::ToolCallParser::parse) gives for a
/// reply with `<tool_call>` blocks. Visible text is trimmed like the
/// one-shot parser's: leading whitespace is dropped and trailing whitespace
/// is held until more text follows. A stray `</tool_call>` is dropped; a
/// block left open at the end is decoded if its JSON is complete; a
/// `<tool_call>` inside a block closes the previous block.
///
/// Each pushed byte is examined a constant number of times: the filter is
/// linear in the length of the stream.
///
/// ```
/// use agent_parse::StreamingToolCallFilter;
///
/// let mut filter = StreamingToolCallFilter::new();
/// let mut shown = String::new();
/// for delta in ["Let me check. <tool", "_call>{\"name\": \"clock\", ", "\"arguments\": {}}</tool_call> Done."] {
///     shown += &filter.push(delta);
/// }
/// let rest = filter.finish();
/// shown += &rest.text;
/// assert_eq!(shown, "Let me check.  Done.");
/// assert_eq!(rest.calls[0].name, "clock");
/// ```
#[derive(Debug, Default)]
pub struct StreamingToolCallFilter {
    /// Inside a `<tool_call>` block.
    inside: bool,
    /// A possible partial tag at the end of what was pushed.
    pending: String,
    /// The content of the current block.
    block: String,
    /// Whether visible non-whitespace text has been released.
    started: bool,
    /// Whitespace held back until more visible text follows.
    held_whitespace: String,
    calls: Vec<ParsedCall>,
    malformed: Vec<MalformedCall>,
}

impl StreamingToolCallFilter {
    /// A filter at the start of a reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a delta; returns the text that can be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        let mut out = String::new();
        let mut work = std::mem::take(&mut self.pending);
        work.push_str(delta);
        self.process(&work, &mut out);
        out
    }

    /// Ends the reply: the remaining visible text, every call, and the
    /// blocks that could not be decoded. The filter is reset for reuse.
    pub fn finish(&mut self) -> ParsedReply {
        let mut out = String::new();
        let pending = std::mem::take(&mut self.pending);
        self.consume(&pending, &mut out);
        if self.inside {
            self.end_block(BlockEnd::EndOfText);
        }
        let reply = ParsedReply {
            text: out,
            calls: std::mem::take(&mut self.calls),
            malformed: std::mem::take(&mut self.malformed),
        };
        *self = Self::default();
        reply
    }

    /// Whether the text so far ends inside a `<tool_call>` block.
    pub fn is_inside_call(&self) -> bool {
        self.inside
    }

    /// The calls of the blocks completed so far (all of them are also
    /// returned by [`finish`](Self::finish)).
    pub fn completed_calls(&self) -> &[ParsedCall] {
        &self.calls
    }

    fn process(&mut self, work: &str, out: &mut String) {
        let mut pos = 0;
        while pos < work.len() {
            let rest = work.get(pos..).unwrap_or_default();
            let Some(offset) = memchr::memchr(b'<', rest.as_bytes()) else {
                self.consume(rest, out);
                return;
            };
            self.consume(rest.get(..offset).unwrap_or_default(), out);
            let at = pos + offset;
            let tail = work.get(at..).unwrap_or_default();
            if tail.starts_with(OPEN_TAG) {
                if self.inside {
                    self.end_block(BlockEnd::NextOpened);
                }
                self.inside = true;
                pos = at + OPEN_TAG.len();
            } else if tail.starts_with(CLOSE_TAG) {
                if self.inside {
                    self.end_block(BlockEnd::Closed);
                    self.inside = false;
                }
                pos = at + CLOSE_TAG.len();
            } else if tail.len() < CLOSE_TAG.len() && (OPEN_TAG.starts_with(tail) || CLOSE_TAG.starts_with(tail)) {
                tail.clone_into(&mut self.pending);
                return;
            } else {
                self.consume("<", out);
                pos = at + 1;
            }
        }
    }

    fn consume(&mut self, text: &str, out: &mut String) {
        if self.inside {
            self.block.push_str(text);
        } else {
            self.release(text, out);
        }
    }

    /// Releases visible text, trimmed at the start of the reply and with
    /// trailing whitespace held back.
    fn release(&mut self, text: &str, out: &mut String) {
        let text = if self.started { text } else { text.trim_start() };
        if text.is_empty() {
            return;
        }
        let body = text.trim_end();
        if body.is_empty() {
            self.held_whitespace.push_str(text);
            return;
        }
        out.push_str(&self.held_whitespace);
        self.held_whitespace.clear();
        out.push_str(body);
        self.started = true;
        self.held_whitespace
            .push_str(text.get(body.len()..).unwrap_or_default());
    }

    fn end_block(&mut self, end: BlockEnd) {
        let content = std::mem::take(&mut self.block);
        let (calls, malformed) = decode_tagged_block(&content, end);
        self.calls.extend(calls);
        self.malformed.extend(malformed);
    }
}
