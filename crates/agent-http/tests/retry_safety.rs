//! Retries only when they cannot run a model call twice, and a
//! `Retry-After` longer than the wait budget ends the retries with a
//! message that names the wait.

use std::time::{Duration, Instant, SystemTime};

use agent_core::{CancellationToken, LlmErrorKind};
use agent_http::{HttpClient, HttpConfig};
use bytes::Bytes;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn client(config: HttpConfig) -> HttpClient {
    HttpClient::new("testprov", config).expect("client")
}

fn quick(retries: u32) -> HttpConfig {
    HttpConfig {
        max_retries: retries,
        initial_backoff_ms: 1,
        max_backoff_ms: 5,
        ..HttpConfig::default()
    }
}

fn body() -> Bytes {
    Bytes::from_static(br#"{"prompt":"hello"}"#)
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.map_or(0, |requests| requests.len())
}

async fn late_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string("late")
                .set_delay(Duration::from_millis(800)),
        )
        .mount(&server)
        .await;
    server
}

/// A `post_json` to a server that answers late: its error and the
/// requests the server received.
async fn late_post_json(config: HttpConfig) -> (agent_core::LlmError, usize) {
    let server = late_server().await;
    let error = client(config)
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await
        .expect_err("times out");
    (error, requests(&server).await)
}

#[tokio::test]
async fn a_post_answered_after_the_read_timeout_is_sent_exactly_once() {
    let (error, sent) = late_post_json(HttpConfig {
        read_timeout_secs: 0.2,
        ..quick(3)
    })
    .await;
    assert_eq!(sent, 1, "a delivered request is never sent again");
    assert_eq!(error.kind, LlmErrorKind::Timeout, "{error}");
    assert!(error.message.contains("not retried"), "{error}");
}

#[tokio::test]
async fn a_post_whose_whole_answer_takes_longer_than_the_timeout_is_a_timeout_sent_once() {
    let started = Instant::now();
    let (error, sent) = late_post_json(HttpConfig {
        timeout_secs: 0.2,
        ..quick(3)
    })
    .await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(700), "took {took:?}");
    assert_eq!(sent, 1, "a delivered request is never sent again");
    assert_eq!(error.kind, LlmErrorKind::Timeout, "{error}");
    assert_eq!(error.provider.as_deref(), Some("testprov"), "{error}");
    assert!(error.message.contains("within 0.2 s"), "{error}");
    assert!(error.message.contains("not retried"), "{error}");
}

#[tokio::test]
async fn a_malformed_url_fails_before_any_request_naming_the_provider() {
    let error = client(quick(3))
        .post_json("no scheme here", &[], body(), &CancellationToken::new())
        .await
        .expect_err("refused");
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest, "{error}");
    assert_eq!(error.provider.as_deref(), Some("testprov"), "{error}");
}

#[tokio::test]
async fn a_stream_whose_headers_come_after_the_timeout_is_sent_exactly_once() {
    let server = late_server().await;
    let config = HttpConfig {
        timeout_secs: 0.2,
        ..quick(3)
    };
    let error = client(config)
        .post_stream(&server.uri(), &[], body(), &CancellationToken::new())
        .await
        .err()
        .expect("times out");
    assert_eq!(requests(&server).await, 1, "a delivered request is never sent again");
    assert_eq!(error.kind, LlmErrorKind::Timeout, "{error}");
    assert!(error.message.contains("not retried"), "{error}");
}

#[tokio::test]
async fn a_refused_connection_is_retried_because_nothing_was_sent() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let error = client(quick(2))
        .post_json(
            &format!("http://127.0.0.1:{port}/"),
            &[],
            body(),
            &CancellationToken::new(),
        )
        .await
        .expect_err("nothing listens");
    assert_eq!(error.kind, LlmErrorKind::Transport, "{error}");
    assert!(error.message.contains("after 3 attempts"), "{error}");
}

#[tokio::test]
async fn a_retry_after_too_large_to_represent_gives_up_at_once_naming_the_wait() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "99999999999999999999999")
                .set_body_string(r#"{"error":{"message":"quota exhausted"}}"#),
        )
        .mount(&server)
        .await;
    let started = Instant::now();
    let error = client(quick(3))
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await
        .expect_err("gives up");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(requests(&server).await, 1, "a wait that long is not 'retry soon'");
    assert_eq!(error.kind, LlmErrorKind::RateLimited);
    assert!(error.message.contains("quota exhausted"), "{error}");
    assert!(error.message.contains("asked to wait"), "{error}");
    assert!(error.message.contains("max_total_wait_secs"), "{error}");
    assert!(error.retry_after().is_some_and(|wait| wait > Duration::from_secs(3600)));
}

#[tokio::test]
async fn a_retry_after_date_beyond_the_wait_budget_gives_up_naming_the_wait() {
    let server = MockServer::start().await;
    let in_an_hour = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600));
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after", in_an_hour.as_str()))
        .mount(&server)
        .await;
    let config = HttpConfig {
        max_total_wait_secs: 60.0,
        ..quick(3)
    };
    let error = client(config)
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await
        .expect_err("gives up");
    assert_eq!(requests(&server).await, 1);
    assert_eq!(error.kind, LlmErrorKind::Overloaded);
    let text = error.to_string();
    let wait: Option<u64> = text
        .split("asked to wait ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|seconds| seconds.parse().ok());
    assert!(
        wait.is_some_and(|wait| (3590..=3600).contains(&wait)),
        "names the wait: {text}"
    );
    assert!(text.contains("max_total_wait_secs (60 s)"), "{text}");
}

#[tokio::test]
async fn a_retry_after_within_the_budget_is_still_waited_for() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after-ms", "150"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&server)
        .await;
    let started = Instant::now();
    let result = client(quick(3))
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await;
    assert_eq!(result.ok(), Some(Bytes::from_static(b"ok")));
    assert!(started.elapsed() >= Duration::from_millis(140));
    assert_eq!(requests(&server).await, 2);
}
