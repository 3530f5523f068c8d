//! HTML to readable text, with `html2text` (scripts, styles and the
//! document head are dropped; links become numbered footnotes).

/// Line width of converted pages.
const PAGE_WIDTH: usize = 100;

/// A page's readable text.
pub(crate) fn html_to_text(html: &[u8]) -> String {
    let text = html2text::config::plain()
        .no_table_borders()
        .allow_width_overflow()
        .string_from_read(html, PAGE_WIDTH)
        .unwrap_or_else(|_| String::from_utf8_lossy(html).into_owned());
    tidy_lines(&text)
}

/// The text of the first `<title>` element, entities decoded and spaces
/// collapsed; `None` when absent or empty.
pub(crate) fn html_title(html: &[u8]) -> Option<String> {
    let source = String::from_utf8_lossy(html);
    let lower = source.to_ascii_lowercase();
    let mut from = 0;
    let open = loop {
        let at = from + lower[from..].find("<title")?;
        // `<title>` or `<title attr=...>`, not `<titlebar>`.
        match lower.as_bytes().get(at + 6) {
            Some(b'>' | b' ' | b'\t' | b'\n' | b'\r' | b'/') => break at,
            _ => from = at + 6,
        }
    };
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = snippet_text(&source[start..end]);
    (!title.is_empty()).then_some(title)
}

/// A fragment of HTML (or plain text) as one line of plain text: tags
/// removed, entities decoded, whitespace collapsed.
pub(crate) fn snippet_text(fragment: &str) -> String {
    if !fragment.contains(['<', '&']) {
        return collapse(fragment);
    }
    let text = html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .string_from_read(fragment.as_bytes(), 10_000)
        .unwrap_or_else(|_| fragment.to_owned());
    collapse(&text)
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Trims trailing spaces and squeezes runs of blank lines to one.
fn tidy_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// Cuts `text` to at most `max_chars` characters; whether it cut.
pub(crate) fn truncate_chars(text: &mut String, max_chars: usize) -> bool {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => {
            text.truncate(at);
            true
        }
        None => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn scripts_styles_and_head_are_dropped() {
        let html = br#"<html><head><title>Hello &amp; welcome</title><style>p { color: red }</style>
            <script>alert("x")</script></head><body><h1>Big news</h1><p>Some <b>bold</b> text.</p>
            <script>var secret = 1;</script><p>See <a href="https://example.com/more">more</a>.</p></body></html>"#;
        let text = html_to_text(html);
        assert!(text.contains("Big news"), "{text}");
        assert!(text.contains("Some **bold** text."), "{text}");
        assert!(text.contains("https://example.com/more"), "{text}");
        assert!(
            !text.contains("alert") && !text.contains("secret") && !text.contains("color"),
            "{text}"
        );
        assert_eq!(html_title(html).as_deref(), Some("Hello & welcome"));
    }

    #[test]
    fn titles_are_found_carefully() {
        assert_eq!(html_title(b"<TITLE lang=en>\n  A   B </TITLE>").as_deref(), Some("A B"));
        assert_eq!(html_title(b"<titlebar>x</titlebar>"), None);
        assert_eq!(html_title(b"<title></title>"), None);
        assert_eq!(html_title(b"<title>unclosed"), None);
        assert_eq!(html_title(b"no html"), None);
    }

    #[test]
    fn snippets_lose_markup() {
        assert_eq!(
            snippet_text("The <strong>Rust</strong> language &mdash; fast &amp; safe"),
            "The Rust language — fast & safe"
        );
        assert_eq!(snippet_text("  plain\n text "), "plain text");
    }

    #[test]
    fn truncation_respects_characters() {
        let mut text = "héllo wörld".to_owned();
        assert!(truncate_chars(&mut text, 7));
        assert_eq!(text, "héllo w");
        assert!(!truncate_chars(&mut text, 7));
    }
}
