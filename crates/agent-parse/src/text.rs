//! Small text helpers shared by the parsers.

use std::ops::Range;

/// One line of a text: its byte range without the line break, and where the
/// next line starts. `\r\n` and `\n` both end a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    /// The line's text without `\r\n` / `\n`.
    pub text: &'a str,
    /// Byte offset of the line's first character.
    pub start: usize,
    /// Byte offset just past the line break (the next line's start).
    pub next: usize,
}

/// The lines of `text`, with byte offsets.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let rest = text.get(start..)?;
        let (raw, next) = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => (rest.get(..i)?, start + i + 1),
            None => (rest, text.len()),
        };
        let line = Line {
            text: raw.strip_suffix('\r').unwrap_or(raw),
            start,
            next,
        };
        start = next;
        Some(line)
    })
}

/// `text` without the byte ranges in `removed` (sorted, non-overlapping), trimmed.
pub(crate) fn remove_ranges(text: &str, removed: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for range in removed {
        if range.start < pos {
            continue;
        }
        out.push_str(text.get(pos..range.start).unwrap_or_default());
        pos = range.end;
    }
    out.push_str(text.get(pos..).unwrap_or_default());
    out.trim().to_owned()
}

/// Whether `c` may appear in a tool or argument name.
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The leading name (`[A-Za-z_]` then name characters) of `s` and the rest.
pub(crate) fn split_name(s: &str) -> Option<(&str, &str)> {
    let first = s.chars().next()?;
    if !(first.is_alphabetic() || first == '_') {
        return None;
    }
    let end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
    Some((s.get(..end)?, s.get(end..)?))
}

/// `s` without one pair of surrounding backticks, `**` or quotes.
pub(crate) fn strip_decoration(s: &str) -> &str {
    let s = s.trim();
    for (open, close) in [("`", "`"), ("**", "**"), ("\"", "\""), ("'", "'")] {
        if s.len() >= open.len() + close.len() {
            if let Some(inner) = s.strip_prefix(open).and_then(|rest| rest.strip_suffix(close)) {
                return inner.trim();
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_handle_crlf_and_missing_final_break() {
        let got: Vec<_> = lines("a\r\nbc\n\nd").map(|l| (l.text, l.start, l.next)).collect();
        assert_eq!(got, [("a", 0, 3), ("bc", 3, 6), ("", 6, 7), ("d", 7, 8)]);
    }

    #[test]
    fn remove_ranges_trims() {
        assert_eq!(remove_ranges(" ab cd ef ", &[1..3, 7..9]), "cd");
    }

    #[test]
    fn names_and_decorations() {
        assert_eq!(split_name("get_weather(x)"), Some(("get_weather", "(x)")));
        assert_eq!(split_name("1x"), None);
        assert_eq!(strip_decoration(" `calc` "), "calc");
        assert_eq!(strip_decoration("\""), "\"");
    }
}
