//! A reply that writes the same call twice is repeating itself: small
//! models under the call grammar write one call per line, and once they
//! repeat a line they go on repeating it until `max_tokens` (minutes of
//! generation on a CPU). The reply is ended at the first repeated line.

use std::collections::HashSet;

/// The shortest line worth comparing: shorter ones (`[`, `}`, a fence)
/// repeat in any reply.
const MIN_LINE_BYTES: usize = 12;

/// Watches a reply's text line by line for a call line written twice.
#[derive(Debug, Default)]
pub(crate) struct RepeatedLine {
    /// The current, unfinished line.
    line: Vec<u8>,
    /// Hashes of the finished call lines so far.
    seen: HashSet<u64>,
}

impl RepeatedLine {
    /// Adds a piece of the reply; `true` when it finishes a line that
    /// opens a JSON value (a call) and was already written in this reply.
    pub(crate) fn push(&mut self, piece: &[u8]) -> bool {
        let mut repeated = false;
        for &byte in piece {
            if byte == b'\n' {
                repeated |= self.finish_line();
            } else {
                self.line.push(byte);
            }
        }
        repeated
    }

    fn finish_line(&mut self) -> bool {
        let line = std::mem::take(&mut self.line);
        let text = line.trim_ascii();
        if text.len() < MIN_LINE_BYTES || !text.starts_with(b"{") {
            return false;
        }
        !self.seen.insert(hash(text))
    }
}

fn hash(bytes: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_repeat(pieces: &[&str]) -> Option<usize> {
        let mut watch = RepeatedLine::default();
        pieces.iter().position(|piece| watch.push(piece.as_bytes()))
    }

    const CALL: &str = r#"{"name": "calculator", "arguments": {"expression": "17 * 23"}}"#;

    #[test]
    fn the_second_copy_of_a_call_line_ends_the_reply_when_its_line_ends() {
        let pieces = ["```json\n", CALL, "\n", CALL, "\n", CALL];
        assert_eq!(first_repeat(&pieces), Some(4));
        let tagged = [
            "<tool_call>\n",
            CALL,
            "\n</tool_call>\n<tool_call>\n",
            " ",
            CALL,
            "  \n",
        ];
        assert_eq!(first_repeat(&tagged), Some(5));
    }

    #[test]
    fn different_calls_short_lines_and_prose_go_on() {
        let other = r#"{"name": "calculator", "arguments": {"expression": "17 * 24"}}"#;
        assert_eq!(first_repeat(&[CALL, "\n", other, "\n"]), None);
        assert_eq!(first_repeat(&["[\n", "]\n", "[\n", "]\n", "```\n", "```\n"]), None);
        let prose = "It is sunny today in Lisbon, as it was.\n";
        assert_eq!(first_repeat(&[prose, prose]), None);
    }

    #[test]
    fn a_line_split_across_pieces_is_one_line() {
        let (head, tail) = CALL.split_at(20);
        assert_eq!(first_repeat(&[head, tail, "\n", head, tail, "\n"]), Some(5));
    }
}
