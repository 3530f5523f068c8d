//! Attachments given by URL, downloaded under the web policy
//! (`AttachmentDownloads`), against local mock servers: the bytes replace
//! the URL and keep the name and detail; each URL is fetched once for a
//! run's calls; what is refused (a private address by default, a type that
//! is not what the URL says, a file over the limit) stays a URL, and the
//! reason says why without the URL's query.

#![allow(clippy::unwrap_used)]

use agent_core::{Attachment, ImageDetail, MediaKind, Message};
use agent_tools_web::{AttachmentDownloads, WebConfig};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn allow_loopback() -> WebConfig {
    WebConfig {
        allow_private_addresses: true,
        ..WebConfig::default()
    }
}

async fn serving(at: &str, body: &[u8], content_type: &str, times: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body.to_vec(), content_type))
        .expect(times)
        .mount(&server)
        .await;
    server
}

fn asking_about(url: &str, mime_type: &str) -> Vec<Message> {
    let image = Attachment::from_url(url, mime_type)
        .unwrap()
        .with_detail(ImageDetail::Low);
    vec![Message::user_with("What is this?", vec![image])]
}

#[tokio::test]
async fn a_url_attachment_becomes_its_bytes_and_is_fetched_once() {
    let server = serving("/dot.png", agent_testing::media::PNG, "image/png", 1).await;
    let downloads = AttachmentDownloads::new(&allow_loopback()).unwrap();
    let url = format!("{}/dot.png", server.uri());
    for _ in 0..3 {
        let mut messages = asking_about(&url, "image/png");
        let failures = downloads.download_all(&mut messages).await;
        assert!(failures.is_empty(), "{failures:?}");
        let attachment = &messages[0].attachments()[0];
        assert_eq!(attachment.bytes(), Some(agent_testing::media::PNG));
        assert_eq!(attachment.url(), None);
        assert_eq!(attachment.detail, Some(ImageDetail::Low));
        assert_eq!(attachment.size, agent_testing::media::PNG.len() as u64);
    }
    // `expect(1)`: checked when the server drops.
}

#[tokio::test]
async fn an_image_url_without_an_extension_takes_the_sniffed_type() {
    let server = serving("/avatar", agent_testing::media::PNG, "image/png", 1).await;
    let downloads = AttachmentDownloads::new(&allow_loopback()).unwrap();
    let mut messages = asking_about(&format!("{}/avatar", server.uri()), "image/*");
    assert!(downloads.download_all(&mut messages).await.is_empty());
    let attachment = &messages[0].attachments()[0];
    assert_eq!(
        (attachment.kind, attachment.mime_type.as_str()),
        (MediaKind::Image, "image/png")
    );
}

#[tokio::test]
async fn a_private_address_is_refused_by_default_and_the_url_stays() {
    let server = serving("/dot.png", agent_testing::media::PNG, "image/png", 0).await;
    let downloads = AttachmentDownloads::new(&WebConfig::default()).unwrap();
    let url = format!("{}/dot.png?X-Amz-Signature=secret-signature", server.uri());
    let mut messages = asking_about(&url, "image/png");
    let failures = downloads.download_all(&mut messages).await;
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("refused"), "{failures:?}");
    assert!(!failures[0].contains("secret-signature"), "{failures:?}");
    assert_eq!(messages[0].attachments()[0].url(), Some(url.as_str()));
}

#[tokio::test]
async fn content_that_is_not_what_the_url_says_is_refused() {
    let server = serving("/photo.png", b"<html>not a picture</html>", "text/html", 1).await;
    let downloads = AttachmentDownloads::new(&allow_loopback()).unwrap();
    let mut messages = asking_about(&format!("{}/photo.png", server.uri()), "image/png");
    let failures = downloads.download_all(&mut messages).await;
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("declared as image/png"), "{failures:?}");
    assert!(messages[0].attachments()[0].url().is_some());
}

#[tokio::test]
async fn a_file_over_the_limit_is_refused_without_reading_it_all() {
    let big = vec![0_u8; 64 * 1024];
    let server = serving("/scan.pdf", &big, "application/pdf", 1).await;
    let config = WebConfig {
        max_attachment_bytes: 1024,
        ..allow_loopback()
    };
    let downloads = AttachmentDownloads::new(&config).unwrap();
    let pdf = Attachment::from_url(format!("{}/scan.pdf", server.uri()), "application/pdf").unwrap();
    let mut messages = vec![Message::user_with("Summarise", vec![pdf])];
    let failures = downloads.download_all(&mut messages).await;
    assert!(
        failures.len() == 1 && failures[0].contains("larger than the 1024 bytes allowed"),
        "{failures:?}"
    );
}
