//! A one-pass, string-aware scanner that finds balanced `{...}` and `[...]`
//! spans in arbitrary text.
//!
//! One pass keeps a stack of open brackets. A closing bracket pops to its
//! matching opener (unmatched closers are ignored, in O(1) thanks to per-kind
//! counters), and every completed span replaces the spans it contains, so the
//! result is the list of *maximal* complete spans: disjoint, in text order.
//! Parsing each of them once therefore costs O(n) in total, and deeply
//! nested or never-closed input (`{{{{...`) costs one pass.
//!
//! Quotes are only strings inside brackets (prose apostrophes are ignored).
//! If the text ends inside a string opened within a bracket that does not
//! look like JSON, the quote was probably prose (`[see "the manual]`): the
//! scan restarts after that bracket, at most [`MAX_RESTARTS`] times, so the
//! worst case stays linear. After a JSON-like bracket it is truncated JSON.

use std::ops::Range;

/// How many times a scan may restart after ending inside a string.
const MAX_RESTARTS: usize = 8;

/// How many unclosed brackets (outermost first) are examined for looking
/// like truncated JSON, and how many such tails are kept.
const MAX_UNCLOSED_CHECKED: usize = 64;
const MAX_JSON_LIKE_TAILS: usize = 4;

/// Which quote characters delimit strings inside brackets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quotes {
    /// Only `"` (strict JSON).
    Double,
    /// `"` anywhere, and `'` where a value or key starts (after `{ [ , :`).
    DoubleAndSingle,
}

/// What a scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Maximal complete spans, disjoint, in text order.
    pub spans: Vec<Range<usize>>,
    /// Byte offsets of brackets still open at the end, outermost first.
    pub unclosed: Vec<usize>,
    /// The first few unclosed brackets that look like the start of JSON
    /// (and not like prose such as `{ braces`): probably truncated JSON.
    pub json_like_tails: Vec<usize>,
}

impl Scan {
    /// The first unclosed bracket that looks like truncated JSON.
    pub fn first_json_like_unclosed(&self) -> Option<usize> {
        self.json_like_tails.first().copied()
    }
}

/// Scans `text` for balanced bracket spans.
pub(crate) fn scan(text: &str, quotes: Quotes) -> Scan {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut from = 0;
    let mut restarts = 0;
    loop {
        let (unclosed, in_string) = scan_from(bytes, from, quotes, &mut spans);
        match unclosed.first() {
            // Ending inside a string after JSON-like text is truncated JSON;
            // after prose (`[see "the manual]`) the quote was prose: rescan.
            Some(&outermost) if in_string && restarts < MAX_RESTARTS && !looks_like_json_start(text, outermost) => {
                // Spans found after `outermost` may be wrong: drop and rescan.
                while spans.last().is_some_and(|span| span.start > outermost) {
                    spans.pop();
                }
                from = outermost + 1;
                restarts += 1;
            }
            _ => {
                let json_like_tails = unclosed
                    .iter()
                    .take(MAX_UNCLOSED_CHECKED)
                    .copied()
                    .filter(|&at| looks_like_json_start(text, at))
                    .take(MAX_JSON_LIKE_TAILS)
                    .collect();
                return Scan {
                    spans,
                    unclosed,
                    json_like_tails,
                };
            }
        }
    }
}

/// One pass from `from`; appends maximal spans to `spans`. Returns the
/// unclosed openers and whether the text ended inside a string.
fn scan_from(bytes: &[u8], from: usize, quotes: Quotes, spans: &mut Vec<Range<usize>>) -> (Vec<usize>, bool) {
    let mut stack: Vec<usize> = Vec::new();
    let mut open_curly = 0usize;
    let mut open_square = 0usize;
    let mut last_significant = 0u8;
    let mut i = from;
    while i < bytes.len() {
        if stack.is_empty() {
            match memchr::memchr2(b'{', b'[', bytes.get(i..).unwrap_or_default()) {
                Some(offset) => i += offset,
                None => break,
            }
        }
        let byte = bytes[i];
        match byte {
            b'{' | b'[' => {
                stack.push(i);
                if byte == b'{' {
                    open_curly += 1;
                } else {
                    open_square += 1;
                }
            }
            b'}' | b']' => {
                let opener = if byte == b'}' { b'{' } else { b'[' };
                let open_of_kind = if opener == b'{' { open_curly } else { open_square };
                if open_of_kind > 0 {
                    while let Some(start) = stack.pop() {
                        let kind = bytes[start];
                        if kind == b'{' {
                            open_curly -= 1;
                        } else {
                            open_square -= 1;
                        }
                        if kind == opener {
                            while spans.last().is_some_and(|span| span.start > start) {
                                spans.pop();
                            }
                            spans.push(start..i + 1);
                            break;
                        }
                    }
                }
            }
            b'"' => match string_end(bytes, i + 1, b'"') {
                Some(end) => i = end,
                None => return (stack, true),
            },
            b'\'' if quotes == Quotes::DoubleAndSingle && matches!(last_significant, b'{' | b'[' | b',' | b':') => {
                match string_end(bytes, i + 1, b'\'') {
                    Some(end) => i = end,
                    None => return (stack, true),
                }
            }
            _ => {}
        }
        if !bytes[i].is_ascii_whitespace() {
            last_significant = bytes[i];
        }
        i += 1;
    }
    (stack, false)
}

/// The index of the quote that closes a string whose content starts at `from`.
pub(crate) fn string_end(bytes: &[u8], from: usize, quote: u8) -> Option<usize> {
    let mut i = from;
    loop {
        let offset = memchr::memchr2(quote, b'\\', bytes.get(i..)?)?;
        let at = i + offset;
        if bytes[at] == quote {
            return Some(at);
        }
        i = at + 2;
    }
}

/// Whether the bracket at `at` is followed by something JSON-like: for `{`,
/// a quote, `}` or `key:`; for `[`, a value start or `]`.
fn looks_like_json_start(text: &str, at: usize) -> bool {
    let Some(rest) = text.get(at + 1..) else {
        return false;
    };
    let rest = rest.trim_start();
    let Some(next) = rest.chars().next() else {
        // A bracket at the very end carries nothing worth repairing.
        return false;
    };
    match text.as_bytes().get(at) {
        Some(b'{') => match next {
            '"' | '\'' | '}' => true,
            c if c.is_alphabetic() || c == '_' => {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                rest.get(end..).is_some_and(|after| after.trim_start().starts_with(':'))
            }
            _ => false,
        },
        Some(b'[') => matches!(next, '{' | '[' | '"' | '\'' | ']' | '-' | '0'..='9'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str) -> Vec<&str> {
        scan(text, Quotes::Double).spans.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn finds_maximal_spans_only() {
        assert_eq!(spans(r#"a {"b": {"c": [1]}} d [2] e"#), [r#"{"b": {"c": [1]}}"#, "[2]"]);
    }

    #[test]
    fn braces_inside_strings_do_not_count() {
        assert_eq!(spans(r#"x {"a": "}{", "b": "\"}"} y"#), [r#"{"a": "}{", "b": "\"}"}"#]);
    }

    #[test]
    fn unclosed_prose_bracket_keeps_inner_spans() {
        let text = r#"use { braces. {"a": 1} ok"#;
        let scan = scan(text, Quotes::Double);
        assert_eq!(scan.spans, vec![Range { start: 14, end: 22 }]);
        assert_eq!(scan.unclosed, [4]);
        assert_eq!(scan.first_json_like_unclosed(), None);
    }

    #[test]
    fn mismatched_closers_are_ignored_or_pop() {
        assert_eq!(spans("] } {[ }"), ["{[ }"]);
        assert_eq!(spans("{{{{"), Vec::<&str>::new());
    }

    #[test]
    fn prose_quote_inside_brackets_triggers_restart() {
        let text = r#"[see "the manual]) then {"a": 1}"#;
        assert_eq!(spans(text), [r#"{"a": 1}"#]);
    }

    #[test]
    fn truncated_json_string_is_not_rescanned() {
        let text = r#"x {"a": {"b": 1}, "c": "trunc"#;
        let scan = scan(text, Quotes::Double);
        let spans: Vec<&str> = scan.spans.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(spans, [r#"{"b": 1}"#]);
        assert_eq!(scan.first_json_like_unclosed(), Some(2));
    }

    #[test]
    fn single_quotes_only_at_value_starts() {
        let text = "{'a': '}'} and [don't] {x}";
        let scan = scan(text, Quotes::DoubleAndSingle);
        let found: Vec<_> = scan.spans.into_iter().map(|r| &text[r]).collect();
        assert_eq!(found, ["{'a': '}'}", "[don't]", "{x}"]);
    }

    #[test]
    fn json_like_detection() {
        let text = r#"{"a": 1, "b": [1, 2"#;
        let scan = scan(text, Quotes::Double);
        assert_eq!(scan.unclosed, [0, 14]);
        assert_eq!(scan.first_json_like_unclosed(), Some(0));
        assert_eq!(scan.json_like_tails, [0, 14]);
        assert!(looks_like_json_start("{ name: 1", 0));
        assert!(!looks_like_json_start("{ name is", 0));
    }
}
