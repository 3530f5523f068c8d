//! The web chat page (`GET /`): one self-contained HTML file
//! (`assets/chat.html`, inline CSS and JavaScript, nothing loaded from
//! elsewhere) that talks to the sessions and runs API with the key the
//! user types in.
//!
//! It is served with a strict Content-Security-Policy: nothing is allowed
//! by default, the inline style and script only by their SHA-256 hashes
//! (computed from the embedded file, so they cannot drift from it), and
//! requests only to this origin.

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use sha2::{Digest, Sha256};

/// The page, embedded in the binary.
const CHAT_HTML: &str = include_str!("../assets/chat.html");

/// The page's policy, computed once.
static CONTENT_SECURITY_POLICY: LazyLock<HeaderValue> = LazyLock::new(|| {
    // The policy is ASCII (hashes are base64), so this does not fail; if it
    // ever did, the page would be served inert rather than unprotected.
    HeaderValue::from_str(&content_security_policy(CHAT_HTML))
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"))
});

/// `GET /`: the chat page. It needs no key; the API calls it makes do.
pub(crate) async fn chat_page() -> impl IntoResponse {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY.clone()),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        CHAT_HTML,
    )
}

/// The policy for `html`: its inline `<script>` and `<style>` elements
/// allowed by hash, fetches to this origin, nothing else.
fn content_security_policy(html: &str) -> String {
    format!(
        "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; img-src 'self' data:; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        inline_hashes(html, "script"),
        inline_hashes(html, "style"),
    )
}

/// The `'sha256-…'` sources of the inline `<tag>` elements (written without
/// attributes) of `html`, or `'none'` when it has none.
fn inline_hashes(html: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut sources = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find(&close) else { break };
        sources.push(format!("'sha256-{}'", base64(&Sha256::digest(&body[..end]))));
        rest = &body[end + close.len()..];
    }
    if sources.is_empty() {
        "'none'".to_owned()
    } else {
        sources.join(" ")
    }
}

/// Standard base64 with padding, as CSP hashes are written.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;

    use super::*;

    #[test]
    fn a_hash_is_written_as_csp_wants_it() {
        assert_eq!(
            base64(&Sha256::digest(b"")),
            "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
    }

    #[test]
    fn the_policy_allows_each_inline_block_by_its_hash_and_nothing_else() {
        let policy = content_security_policy("<style>a{}</style><script>x()</script><script>y()</script>");
        let hash = |text: &str| format!("'sha256-{}'", base64(&Sha256::digest(text)));
        assert!(policy.starts_with("default-src 'none'; "), "{policy}");
        assert!(
            policy.contains(&format!("script-src {} {};", hash("x()"), hash("y()"))),
            "{policy}"
        );
        assert!(policy.contains(&format!("style-src {};", hash("a{}"))), "{policy}");
        assert!(policy.contains("connect-src 'self';"), "{policy}");
        assert!(!policy.contains("unsafe"), "{policy}");
        assert!(content_security_policy("<p>").contains("script-src 'none';"));
    }

    #[tokio::test]
    async fn the_page_is_html_with_a_strict_policy() {
        let response = chat_page().await.into_response();
        assert_eq!(response.status(), StatusCode::OK);
        let get = |name| response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
        assert_eq!(get(header::CONTENT_TYPE), "text/html; charset=utf-8");
        assert_eq!(get(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        assert_eq!(get(header::REFERRER_POLICY), "no-referrer");
        let policy = get(header::CONTENT_SECURITY_POLICY);
        assert_eq!(policy, content_security_policy(CHAT_HTML));
        assert_eq!(policy.matches("'sha256-").count(), 2, "one script, one style: {policy}");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let page = String::from_utf8_lossy(&body);
        assert!(page.starts_with("<!doctype html>"));
        for id in [
            "api-key",
            "sessions",
            "conversation",
            "prompt",
            "send",
            "stop",
            "status",
        ] {
            assert!(page.contains(&format!("id=\"{id}\"")), "#{id} is missing");
        }
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere_and_writes_no_markup_from_text() {
        for banned in [
            "src=",
            "href=",
            "http://",
            "https://",
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "eval(",
        ] {
            assert!(!CHAT_HTML.contains(banned), "chat.html contains `{banned}`");
        }
        assert!(
            !CHAT_HTML.contains("localStorage"),
            "the key is kept in sessionStorage only"
        );
    }
}
