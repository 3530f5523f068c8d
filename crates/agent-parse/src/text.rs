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

/// The longest wrapper tag looked for, `<` and `>` included.
const MAX_WRAPPER_TAG: usize = 40;

/// `removed` (sorted) with calls that sit inside a made-up wrapper tag
/// (`<tools>{..}</tools>`, `<function_call>{..}\n{..}</function_call>`)
/// widened to take the tags too: small models wrap calls in tags of their
/// own, which must not be left behind as text. Ranges separated only by
/// whitespace are merged first, so one wrapper may hold several calls.
pub(crate) fn widen_to_wrappers(text: &str, removed: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(removed.len());
    for range in removed {
        match merged.last_mut() {
            Some(last)
                if last.end <= range.start
                    && text.get(last.end..range.start).is_some_and(|gap| gap.trim().is_empty()) =>
            {
                last.end = range.end;
            }
            _ => merged.push(range.clone()),
        }
    }
    for range in &mut merged {
        let before = text.get(..range.start).unwrap_or_default().trim_end();
        // A tag name is short: look back a bounded way, so the whole pass
        // stays linear in the text.
        let mut window = before.len().saturating_sub(MAX_WRAPPER_TAG);
        while !before.is_char_boundary(window) {
            window += 1;
        }
        let Some(open_at) = before
            .strip_suffix('>')
            .and_then(|head| head.get(window..))
            .and_then(|tail| tail.rfind('<'))
            .map(|at| window + at)
        else {
            continue;
        };
        let name = &before[open_at + 1..before.len() - 1];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let after = text.get(range.end..).unwrap_or_default();
        let closing = format!("</{name}>");
        let rest = after.trim_start();
        if rest.starts_with(&closing) {
            let skipped = after.len() - rest.len();
            range.start = open_at;
            range.end += skipped + closing.len();
        }
    }
    merged
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
        if s.len() >= open.len() + close.len()
            && let Some(inner) = s.strip_prefix(open).and_then(|rest| rest.strip_suffix(close))
        {
            return inner.trim();
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
    fn wrapper_tags_around_calls_are_taken_with_them() {
        let text = "Sure.\n<tools>\n{a}\n{b}\n</tools>\nDone <b>{c}</b> <x>{d}";
        let a = text.find("{a}").unwrap_or_default();
        let b = text.find("{b}").unwrap_or_default();
        let c = text.find("{c}").unwrap_or_default();
        let d = text.find("{d}").unwrap_or_default();
        let widened = widen_to_wrappers(text, &[a..a + 3, b..b + 3, c..c + 3, d..d + 3]);
        assert_eq!(remove_ranges(text, &widened), "Sure.\n\nDone  <x>");
        // No wrapper: unchanged.
        let unwrapped = vec![2..5, 8..11];
        assert_eq!(widen_to_wrappers("x {a} y {b} z", &unwrapped), unwrapped);
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
