//! When to stop reading a text-protocol reply as it streams: once its
//! `<tool_call>` blocks reach the request's `max_tool_calls`, or a block
//! repeats one the reply already holds. A model under the text protocol
//! otherwise writes call after call (the same one, often) until its token
//! limit; the calls it wrote before that point are all the loop would run.

use agent_parse::ParsedCall;

/// Why a reply was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Its calls reached the cap.
    CallCap,
    /// Its newest call repeats an earlier one of the reply.
    RepeatedCall,
}

/// Watches the complete calls of one streamed reply.
#[derive(Debug)]
pub(crate) struct CallCutoff {
    max_calls: Option<usize>,
    seen: usize,
}

impl CallCutoff {
    /// A watch for a reply capped at `max_calls` calls (none: no cap).
    pub fn new(max_calls: Option<u32>) -> Self {
        Self {
            max_calls: max_calls
                .and_then(|max| usize::try_from(max).ok())
                .filter(|max| *max > 0),
            seen: 0,
        }
    }

    /// Given the reply's complete calls so far, whether to stop reading it.
    /// Linear over a reply: each call is compared once, when it completes.
    pub fn check(&mut self, calls: &[ParsedCall]) -> Option<Cut> {
        if calls.len() == self.seen {
            return None;
        }
        self.seen = calls.len();
        let (newest, earlier) = calls.split_last()?;
        if earlier
            .iter()
            .any(|call| call.name == newest.name && call.arguments == newest.arguments)
        {
            return Some(Cut::RepeatedCall);
        }
        self.max_calls.filter(|max| calls.len() >= *max).map(|_| Cut::CallCap)
    }
}

#[cfg(test)]
mod tests {
    use agent_parse::StreamingToolCallFilter;

    use super::*;

    fn call(city: &str) -> String {
        format!("<tool_call>{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}</tool_call>\n")
    }

    /// The cut a reply streamed in `pieces` gets, and after how many pieces.
    fn cut_of(pieces: &[String], max_calls: Option<u32>) -> Option<(Cut, usize)> {
        let mut filter = StreamingToolCallFilter::new();
        let mut cutoff = CallCutoff::new(max_calls);
        for (index, piece) in pieces.iter().enumerate() {
            filter.push(piece);
            if let Some(cut) = cutoff.check(filter.completed_calls()) {
                return Some((cut, index + 1));
            }
        }
        None
    }

    #[test]
    fn a_reply_ends_when_its_calls_reach_the_cap() {
        let pieces = [call("Oslo"), call("Rome"), call("Lima"), call("Bern")];
        assert_eq!(cut_of(&pieces, Some(2)), Some((Cut::CallCap, 2)));
        assert_eq!(cut_of(&pieces, Some(4)), Some((Cut::CallCap, 4)));
        assert_eq!(cut_of(&pieces, None), None);
        assert_eq!(cut_of(&pieces, Some(0)), None, "0 is no cap");
    }

    #[test]
    fn a_reply_ends_at_its_first_repeated_call() {
        let pieces = [call("Oslo"), call("Rome"), call("Oslo"), call("Rome")];
        assert_eq!(cut_of(&pieces, Some(16)), Some((Cut::RepeatedCall, 3)));
    }

    #[test]
    fn a_call_split_across_pieces_counts_once_it_is_complete() {
        let whole = call("Oslo");
        let (head, tail) = whole.split_at(20);
        let pieces = ["Let me look.\n".to_owned(), head.to_owned(), tail.to_owned()];
        assert_eq!(cut_of(&pieces, Some(1)), Some((Cut::CallCap, 3)));
        assert_eq!(cut_of(&pieces[..2], Some(1)), None, "not complete yet");
    }
}
