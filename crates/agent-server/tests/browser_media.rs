//! Attaching on the web chat page, in a real browser (headless Chromium,
//! see `browser_support`): an image and a PDF chosen with the file input
//! show as a thumbnail and a named chip, go with the next message as
//! content parts, and the model reads them; the conversation shows the
//! thumbnail, loaded under the page's Content-Security-Policy, also when
//! the session is opened again. A file of another type is refused by name.
//! The page is kept at `$CARGO_TARGET_TMPDIR/attach-page.png`.

mod browser_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{MediaKind, Message};
use agent_runner::Agent;
use agent_testing::{ScriptedClient, media, response};
use browser_support::{
    BROWSER, Chromedriver, KEY, browser_installed, click, page_text, screenshot, serve, type_into, wait_for,
};
use fantoccini::{Client, Locator};
use serde_json::json;

const ANSWER: &str = "A single transparent pixel, and a one-page report.";

#[tokio::test]
async fn an_image_and_a_pdf_attached_on_the_page_reach_the_model_and_show_as_thumbnails() {
    if browser_installed().is_none() {
        return;
    }
    let _browser = BROWSER.lock().await;
    let client = ScriptedClient::new().respond(response::text(ANSWER));
    let base = serve(Agent::builder(Arc::new(client.clone())).build()).await;
    let files = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (name, bytes) in [
        ("dot.png", media::PNG),
        ("report.pdf", media::PDF),
        ("notes.txt", b"plain".as_slice()),
    ] {
        std::fs::write(files.path().join(name), bytes).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut driver = Chromedriver::start();
    let page = driver.connect().await;
    let driven = tokio::time::timeout(Duration::from_secs(120), attach(&page, &base, files.path())).await;
    let _ = page.close().await;
    driven.unwrap_or_else(|_| panic!("the browser test took over two minutes"));

    // The model got the question with both files, as they were on disk.
    let requests = client.requests();
    let question = requests[0].messages.last().unwrap_or_else(|| panic!("no message"));
    let Message::User { content, attachments } = question else {
        panic!("{question:?}")
    };
    assert_eq!(content, "What are these?");
    let received: Vec<(MediaKind, &str, Option<&[u8]>)> = attachments
        .iter()
        .map(|attachment| (attachment.kind, attachment.mime_type.as_str(), attachment.bytes()))
        .collect();
    assert_eq!(
        received,
        [
            (MediaKind::Image, "image/png", Some(media::PNG)),
            (MediaKind::Document, "application/pdf", Some(media::PDF)),
        ]
    );
    assert_eq!(attachments[1].name.as_deref(), Some("report.pdf"));
}

/// The thumbnails in `css` that the browser loaded (a blocked or broken
/// image has no natural width).
async fn loaded_thumbnails(page: &Client, css: &str) -> serde_json::Value {
    let script = "return Array.from(document.querySelectorAll(arguments[0])).map((image) => [image.alt, \
                  image.complete && image.naturalWidth > 0])";
    page.execute(script, vec![json!(css)])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until `css` matches `count` elements.
async fn wait_for_count(page: &Client, css: &str, count: usize) {
    let started = std::time::Instant::now();
    loop {
        let found = page.find_all(Locator::Css(css)).await.unwrap_or_default().len();
        if found == count {
            return;
        }
        assert!(
            started.elapsed() < browser_support::PATIENCE,
            "{found} of `{css}`, not {count}; {}",
            page_text(page).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a person does: a text file (refused), an image and a PDF chosen,
/// the question sent; the answer read; the session opened again.
async fn attach(page: &Client, base: &str, files: &Path) {
    page.goto(&format!("{base}/")).await.unwrap_or_else(|e| panic!("{e}"));
    type_into(page, "#api-key", KEY).await;
    click(page, "#new-session").await;
    wait_for(page, "#sessions li.active", &["sess_"]).await;

    let input = page
        .find(Locator::Css("#attach-file"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let path = |name: &str| files.join(name).display().to_string();
    input
        .send_keys(&path("notes.txt"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for(page, "#status.error", &["notes.txt cannot be attached"]).await;
    input
        .send_keys(&format!("{}\n{}", path("dot.png"), path("report.pdf")))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for(page, "#attachments .attached", &["dot.png"]).await;
    wait_for(page, "#attachments .attached", &["PDF · report.pdf"]).await;
    wait_for(page, "#status", &["2 files will go with your next message"]).await;
    assert_eq!(
        loaded_thumbnails(page, "#attachments .thumb").await,
        json!([["dot.png", true]]),
        "the thumbnail shows under the policy: {}",
        page_text(page).await
    );

    type_into(page, "#prompt", "What are these?").await;
    click(page, "#send").await;
    wait_for(page, ".message.assistant", &[ANSWER]).await;
    wait_for(page, ".message.user", &["What are these?", "PDF · report.pdf"]).await;
    wait_for(page, "#status", &["Done."]).await;
    assert_eq!(
        loaded_thumbnails(page, ".message.user .thumb").await,
        json!([["dot.png", true]])
    );
    wait_for_count(page, "#attachments .attached", 0).await;
    screenshot(page, "attach-page.png").await;

    // The session again, from the server: the stored image is shown again.
    page.refresh().await.unwrap_or_else(|e| panic!("{e}"));
    wait_for(page, "#sessions li", &["1 turn"]).await;
    click(page, "#sessions li").await;
    wait_for(page, ".message.user", &["What are these?", "PDF · report.pdf"]).await;
    wait_for(page, ".message.assistant", &[ANSWER]).await;
    assert_eq!(
        loaded_thumbnails(page, ".message.user .thumb").await,
        json!([["image", true]]),
        "an `image_url` part carries no file name"
    );
}
