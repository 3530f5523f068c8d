//! Credentials never follow a redirect to another origin: server A answers
//! with a redirect to server B, and B must never see the key.

use std::net::TcpListener;

use agent_core::{CancellationToken, LlmErrorKind};
use agent_http::{AuthHeader, HttpClient, HttpConfig, SecretString};
use bytes::Bytes;
use futures::StreamExt;
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-redirect-secret-42";
const EXTRA_KEY: &str = "extra-header-secret-77";

/// A mock server on another loopback address than wiremock's default, so
/// that it is another host, not just another port.
async fn server_on(address: &str) -> MockServer {
    let listener = TcpListener::bind(format!("{address}:0")).expect("bind");
    MockServer::builder().listener(listener).start().await
}

fn client(auth: AuthHeader) -> HttpClient {
    let config = HttpConfig {
        max_retries: 2,
        initial_backoff_ms: 1,
        max_backoff_ms: 2,
        ..HttpConfig::default()
    };
    HttpClient::new("testprov", config).expect("client").with_auth(auth)
}

fn extra_headers() -> Vec<(String, String)> {
    vec![("x-extra-key".to_owned(), EXTRA_KEY.to_owned())]
}

fn body() -> Bytes {
    Bytes::from_static(br#"{"prompt":"hello"}"#)
}

/// A redirects `/307` and `/302` to B; B answers anything with 200.
async fn redirecting_pair(b: &MockServer) -> MockServer {
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_string("data: stolen\n\n"))
        .mount(b)
        .await;
    let a = MockServer::start().await;
    for status in [307u16, 302] {
        Mock::given(method("POST"))
            .and(path(format!("/{status}")))
            .respond_with(ResponseTemplate::new(status).insert_header("location", format!("{}/collect", b.uri())))
            .mount(&a)
            .await;
    }
    a
}

/// Asserts that `b` received no request carrying any of the secrets.
async fn assert_no_key_reached(b: &MockServer) {
    let requests = b.received_requests().await.unwrap_or_default();
    for request in &requests {
        for (name, value) in &request.headers {
            let value = value.to_str().unwrap_or_default();
            assert!(
                !value.contains(KEY) && !value.contains(EXTRA_KEY),
                "the other host received the key in the {name} header"
            );
        }
    }
    assert!(
        requests.is_empty(),
        "the other host received {} requests",
        requests.len()
    );
}

#[tokio::test]
async fn a_cross_host_redirect_is_refused_and_the_key_never_reaches_the_other_host() {
    let b = server_on("127.0.0.2").await;
    let a = redirecting_pair(&b).await;
    let b_host = b.address().to_string();
    let cancel = CancellationToken::new();
    let mut errors = Vec::new();
    for auth in [
        AuthHeader::header("api-key", SecretString::new(KEY)),
        AuthHeader::header("x-api-key", SecretString::new(KEY)),
        AuthHeader::bearer(SecretString::new(KEY)),
    ] {
        let client = client(auth);
        for status in [307, 302] {
            let url = format!("{}/{status}", a.uri());
            errors.push(client.post_json(&url, &extra_headers(), body(), &cancel).await.err());
            errors.push(client.post_stream(&url, &extra_headers(), body(), &cancel).await.err());
        }
    }
    assert_no_key_reached(&b).await;
    for error in errors {
        let error = error.expect("the redirect is refused");
        assert_eq!(error.kind, LlmErrorKind::InvalidRequest, "{error}");
        let text = error.to_string();
        assert!(text.contains("redirect"), "{text}");
        assert!(text.contains(&b_host), "names the target host: {text}");
        assert!(!text.contains(KEY) && !text.contains(EXTRA_KEY), "{text}");
        assert!(!text.contains("after 3 attempts"), "not retried: {text}");
        assert!(!format!("{error:?}").contains(KEY));
    }
    let attempts = a.received_requests().await.map(|requests| requests.len());
    assert_eq!(attempts, Some(12), "one request per call, never retried");
}

#[tokio::test]
async fn a_redirect_to_another_port_or_scheme_of_the_same_host_is_refused() {
    let b = MockServer::start().await;
    let a = redirecting_pair(&b).await;
    Mock::given(method("POST"))
        .and(path("/to-https"))
        .respond_with(
            ResponseTemplate::new(308).insert_header("location", format!("https://{}/secure", a.address()).as_str()),
        )
        .mount(&a)
        .await;
    let client = client(AuthHeader::header("api-key", SecretString::new(KEY)));
    let cancel = CancellationToken::new();
    let error = client
        .post_json(&format!("{}/307", a.uri()), &extra_headers(), body(), &cancel)
        .await
        .err();
    assert_no_key_reached(&b).await;
    let text = error.expect("refused").to_string();
    assert!(text.contains(&b.address().to_string()), "{text}");
    let text = client
        .post_json(&format!("{}/to-https", a.uri()), &extra_headers(), body(), &cancel)
        .await
        .expect_err("refused")
        .to_string();
    assert!(text.contains(&format!("https://{}", a.address())), "{text}");
}

#[tokio::test]
async fn a_redirect_within_the_same_origin_is_still_followed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/old"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/new"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/new"))
        .respond_with(ResponseTemplate::new(200).set_body_string("data: moved\n\n"))
        .mount(&server)
        .await;
    let client = client(AuthHeader::header("api-key", SecretString::new(KEY)));
    let cancel = CancellationToken::new();
    let url = format!("{}/old", server.uri());
    let body_bytes = client.post_json(&url, &[], body(), &cancel).await;
    assert_eq!(body_bytes.ok(), Some(Bytes::from_static(b"data: moved\n\n")));
    let stream = client.post_stream(&url, &[], body(), &cancel).await.expect("stream");
    let chunks: Vec<_> = stream.collect().await;
    assert!(chunks.iter().all(Result::is_ok));
    let requests = server.received_requests().await.unwrap_or_default();
    let forwarded = requests
        .iter()
        .filter(|request| request.url.path() == "/new")
        .filter(|request| request.headers.get("api-key").is_some_and(|value| value == KEY))
        .count();
    assert_eq!(forwarded, 2, "the key goes along within the same origin");
}
