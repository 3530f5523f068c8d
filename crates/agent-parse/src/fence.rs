//! Markdown code fences (```` ``` ```` or `~~~`), found line by line.

use std::ops::Range;

use crate::text::lines;

/// One fenced code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fence<'a> {
    /// The info string after the opening fence, trimmed (`json`, `python`, ``).
    pub info: &'a str,
    /// Byte range of the content (between the fence lines).
    pub body: Range<usize>,
    /// Byte range of the whole block, fence lines included.
    pub whole: Range<usize>,
}

impl Fence<'_> {
    /// Whether the info string names JSON (`json`, `JSON`, `jsonc`, `json5`...).
    pub fn is_json(&self) -> bool {
        let language = self.info.split_whitespace().next().unwrap_or_default();
        language.len() >= 4 && language.get(..4).is_some_and(|head| head.eq_ignore_ascii_case("json"))
    }
}

/// An opening or closing fence line: the fence character and run length,
/// and what follows the run.
fn fence_marker(line: &str) -> Option<(u8, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = line.get(indent..)?;
    let marker = *rest.as_bytes().first()?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let run = rest.bytes().take_while(|&b| b == marker).count();
    if run < 3 {
        return None;
    }
    Some((marker, run, rest.get(run..)?))
}

/// Every fenced block of `text`, in order. An unclosed fence runs to the end.
pub(crate) fn fences(text: &str) -> Vec<Fence<'_>> {
    let mut found = Vec::new();
    let mut open: Option<(u8, usize, &str, usize, usize)> = None; // marker, run, info, block start, body start
    for line in lines(text) {
        match open {
            None => {
                if let Some((marker, run, info)) = fence_marker(line.text) {
                    if marker == b'`' && info.contains('`') {
                        continue; // inline code such as ```x``` is not a fence
                    }
                    open = Some((marker, run, info.trim(), line.start, line.next));
                }
            }
            Some((marker, run, info, start, body_start)) => {
                if let Some((m, r, after)) = fence_marker(line.text)
                    && m == marker
                    && r >= run
                    && after.trim().is_empty()
                {
                    found.push(Fence {
                        info,
                        body: body_start..line.start,
                        whole: start..line.next,
                    });
                    open = None;
                }
            }
        }
    }
    if let Some((_, _, info, start, body_start)) = open {
        found.push(Fence {
            info,
            body: body_start.min(text.len())..text.len(),
            whole: start..text.len(),
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_closed_and_unclosed_fences() {
        let text = "a\n```json\n{\"a\": 1}\n```\nb\r\n~~~~\nx\n~~~\n~~~~\n```\ntail";
        let found = fences(text);
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].info, "json");
        assert!(found[0].is_json());
        assert_eq!(&text[found[0].body.clone()], "{\"a\": 1}\n");
        assert_eq!(&text[found[1].body.clone()], "x\n~~~\n");
        assert!(!found[1].is_json());
        assert_eq!(&text[found[2].body.clone()], "tail");
        let unclosed = fences("```\n{\"a\":");
        assert_eq!(unclosed[0].body, 4..9);
    }

    #[test]
    fn inline_triple_backticks_are_not_fences() {
        assert!(fences("```x``` and more").is_empty());
    }
}
