//! Generated text on its way out: UTF-8 assembled across token boundaries,
//! stop sequences found and their prefixes held back.

use tokio::sync::mpsc::UnboundedSender;

use crate::engine::Generated;

/// Generated text: assembles UTF-8 across token boundaries, finds stop
/// sequences, and releases text only once it cannot be the start of one.
pub(crate) struct Text<'a> {
    stop: &'a [String],
    bytes: Vec<u8>,
    decoded: String,
    sent: usize,
}

impl<'a> Text<'a> {
    pub(crate) fn new(stop: &'a [String]) -> Self {
        Self {
            stop,
            bytes: Vec::new(),
            decoded: String::new(),
            sent: 0,
        }
    }

    /// Adds a token's bytes; sends what is safe; returns whether a stop
    /// sequence was produced (the text is then cut before it).
    pub(crate) fn push(&mut self, piece: &[u8], out: &UnboundedSender<Generated>) -> bool {
        self.bytes.extend_from_slice(piece);
        let valid = match std::str::from_utf8(&self.bytes) {
            Ok(_) => self.bytes.len(),
            Err(error) if error.error_len().is_some() => {
                // Invalid bytes (not a split character): replace and move on.
                let lossy = String::from_utf8_lossy(&self.bytes).into_owned();
                self.decoded.push_str(&lossy);
                self.bytes.clear();
                0
            }
            Err(error) => error.valid_up_to(),
        };
        if valid > 0 {
            let complete: Vec<u8> = self.bytes.drain(..valid).collect();
            self.decoded.push_str(&String::from_utf8_lossy(&complete));
        }
        // A stop sequence can only begin in what was held back, so the search
        // starts one stop length before the sent text, moved back to a
        // character boundary (that offset can fall inside a character).
        let mut search_from = self
            .sent
            .saturating_sub(self.stop.iter().map(String::len).max().unwrap_or(0));
        while !self.decoded.is_char_boundary(search_from) {
            search_from -= 1;
        }
        // Generation stops at the first stop sequence to be complete: the
        // one that ends first (then the one that starts first), so the cut
        // does not depend on how the text was split into tokens.
        let hit = self
            .stop
            .iter()
            .filter(|stop| !stop.is_empty())
            .filter_map(|stop| {
                self.decoded[search_from..]
                    .find(stop.as_str())
                    .map(|at| (search_from + at + stop.len(), search_from + at))
            })
            .min()
            .map(|(_, at)| at);
        if let Some(at) = hit {
            // Everything from the stop sequence on is dropped, including
            // the start of a character not yet complete.
            self.decoded.truncate(at);
            self.bytes.clear();
            self.send_up_to(self.decoded.len(), out);
            return true;
        }
        let held = self.stop_prefix_len();
        self.send_up_to(self.decoded.len() - held, out);
        false
    }

    /// Sends whatever is left.
    pub(crate) fn flush(&mut self, out: &UnboundedSender<Generated>) {
        if !self.bytes.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.bytes)).into_owned();
            self.decoded.push_str(&rest);
        }
        self.send_up_to(self.decoded.len(), out);
    }

    /// Length of the longest end of the text that could begin a stop sequence.
    fn stop_prefix_len(&self) -> usize {
        let mut longest = 0;
        for stop in self.stop {
            for (end, _) in stop.char_indices().skip(1) {
                if end > longest && self.decoded.ends_with(&stop[..end]) {
                    longest = end;
                }
            }
        }
        longest
    }

    fn send_up_to(&mut self, end: usize, out: &UnboundedSender<Generated>) {
        let mut end = end.max(self.sent);
        while !self.decoded.is_char_boundary(end) {
            end -= 1;
        }
        if end > self.sent {
            let _ = out.send(Generated::Text(self.decoded[self.sent..end].to_owned()));
            self.sent = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(stop: &[String], pieces: &[&[u8]]) -> (Vec<String>, bool) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut text = Text::new(stop);
        let mut hit = false;
        for piece in pieces {
            if text.push(piece, &tx) {
                hit = true;
                break;
            }
        }
        text.flush(&tx);
        let mut out = Vec::new();
        while let Ok(Generated::Text(t)) = rx.try_recv() {
            out.push(t);
        }
        (out, hit)
    }

    #[test]
    fn a_character_split_across_tokens_is_never_emitted_broken() {
        let euro = "€".as_bytes(); // three bytes
        let (out, _) = collect(&[], &[b"price: ", &euro[..1], &euro[1..2], &euro[2..], b"5"]);
        assert_eq!(out.concat(), "price: €5");
        assert!(out.iter().all(|piece| !piece.contains('\u{fffd}')));
    }

    #[test]
    fn a_stop_search_window_starting_inside_a_multibyte_character_does_not_panic() {
        // After "éé" (4 bytes) is sent, the search for a 3-byte stop sequence
        // starts 3 bytes back: inside the first "é".
        let stop = vec!["abc".to_owned()];
        let (out, hit) = collect(&stop, &["éé".as_bytes(), b"x"]);
        assert!(!hit);
        assert_eq!(out.concat(), "ééx");
        let (out, hit) = collect(&stop, &["éé".as_bytes(), b"xab", b"cd"]);
        assert!(hit);
        assert_eq!(out.concat(), "ééx");
    }

    #[test]
    fn the_start_of_a_character_after_a_stop_sequence_is_not_flushed() {
        let stop = vec!["a".to_owned()];
        let e_acute = "é".as_bytes();
        let (out, hit) = collect(&stop, &[":€".as_bytes(), &[b'a', e_acute[0]]]);
        assert!(hit);
        assert_eq!(
            out.concat(),
            ":€",
            "nothing after the stop sequence, not even a replacement character"
        );
    }

    #[test]
    fn the_stop_sequence_complete_first_wins_however_the_text_is_split() {
        // "€" is complete before "a€😀" is: generation stops there, in one
        // piece or in many (found by the property test below).
        let stop = vec!["€".to_owned(), "a€😀".to_owned()];
        let text = "O:a€😀 more".as_bytes();
        let whole = collect(&stop, &[text]);
        let split = collect(&stop, &[&text[..3], &text[3..5], &text[5..]]);
        assert_eq!((whole.0.concat(), whole.1), ("O:a".to_owned(), true));
        assert_eq!((split.0.concat(), split.1), ("O:a".to_owned(), true));
        // The same end: the one that starts first.
        let stop = vec!["b".to_owned(), "ab".to_owned()];
        assert_eq!(collect(&stop, &[b"xab"]).0.concat(), "x");
    }

    #[test]
    fn stop_sequences_cut_the_text_and_their_prefixes_are_held_back() {
        let stop = vec!["\nObservation:".to_owned()];
        let (out, hit) = collect(&stop, &[b"Action: x", b"\nObs", b"ervation: made up"]);
        assert!(hit);
        assert_eq!(out.concat(), "Action: x");
        let (out, hit) = collect(&stop, &[b"a\nOb", b"vious"]);
        assert!(!hit);
        assert_eq!(out.concat(), "a\nObvious");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Multi-byte text cut into arbitrary byte pieces, with multi-byte
        /// stop sequences: never a panic, and the output is the text up to
        /// the stop sequence that is complete first (the one that ends
        /// first, then the one that starts first), exactly.
        #[test]
        fn push_matches_a_plain_search_on_any_split_of_multibyte_text(
            text in "[aé€😀\\nO:b]{0,40}",
            stops in proptest::collection::vec("[aé€😀\\nO:b]{1,4}", 0..3),
            cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..10),
        ) {
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for point in points {
                pieces.push(&bytes[start..point]);
                start = point;
            }
            pieces.push(&bytes[start..]);
            let (out, hit) = collect(&stops, &pieces);
            let first = stops
                .iter()
                .filter_map(|stop| text.find(stop.as_str()).map(|at| (at + stop.len(), at)))
                .min()
                .map(|(_, at)| at);
            let expected = first.map_or(text.as_str(), |at| &text[..at]);
            proptest::prop_assert_eq!(out.concat(), expected);
            proptest::prop_assert_eq!(hit, first.is_some());
        }
    }
}
