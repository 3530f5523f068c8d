//! HttpClient against a local mock server: retries, Retry-After, errors,
//! cancellation and streams.

use std::time::{Duration, Instant};

use agent_core::{CancellationToken, LlmErrorKind};
use agent_http::{AuthHeader, HttpClient, HttpConfig, SecretString};
use bytes::Bytes;
use futures::StreamExt;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn client(retries: u32) -> HttpClient {
    let config = HttpConfig {
        max_retries: retries,
        initial_backoff_ms: 10,
        max_backoff_ms: 20,
        ..HttpConfig::default()
    };
    HttpClient::new("testprov", config)
        .expect("client")
        .with_auth(AuthHeader::bearer(SecretString::new("sk-test-secret-123")))
        .with_auth_hint("set TESTPROV_API_KEY")
}

fn body() -> Bytes {
    Bytes::from_static(br#"{"hello":"world"}"#)
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_after_that_delay() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_string(r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&server)
        .await;
    let started = Instant::now();
    let result = client(3)
        .post_json(
            &format!("{}/v1/x", server.uri()),
            &[],
            body(),
            &CancellationToken::new(),
        )
        .await;
    let elapsed = started.elapsed();
    assert_eq!(result.ok(), Some(Bytes::from_static(b"ok")));
    assert!(elapsed >= Duration::from_millis(950), "waited {elapsed:?}");
    assert!(elapsed < Duration::from_millis(2500), "waited {elapsed:?}");
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(2));
}

#[tokio::test]
async fn two_500s_then_200_succeeds_on_the_third_attempt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("fine"))
        .mount(&server)
        .await;
    let result = client(3)
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await;
    assert_eq!(result.ok(), Some(Bytes::from_static(b"fine")));
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(3));
}

#[tokio::test]
async fn retries_stop_at_max_retries_and_say_how_many_attempts_were_made() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string(r#"{"error":{"message":"overloaded"}}"#))
        .mount(&server)
        .await;
    let error = client(2)
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await
        .expect_err("fails");
    assert_eq!(error.kind, LlmErrorKind::Overloaded);
    assert!(error.message.contains("after 3 attempts"), "{error}");
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(3));
}

#[tokio::test]
async fn a_401_fails_at_once_naming_the_variable_and_never_leaks_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("authorization", "Bearer sk-test-secret-123"))
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("x-request-id", "req_abc")
                .set_body_string(r#"{"error":{"message":"Incorrect API key provided: sk-test-secret-123"}}"#),
        )
        .mount(&server)
        .await;
    let error = client(3)
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await
        .expect_err("fails");
    assert_eq!(error.kind, LlmErrorKind::Auth);
    assert_eq!(error.request_id.as_deref(), Some("req_abc"));
    let text = error.to_string();
    assert!(text.contains("set TESTPROV_API_KEY"), "{text}");
    assert!(!text.contains("sk-test-secret-123"), "{text}");
    assert!(!format!("{error:?}").contains("sk-test-secret-123"));
    assert!(!format!("{:?}", client(0)).contains("sk-test-secret-123"));
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(1));
}

#[tokio::test]
async fn client_errors_are_never_retried() {
    for status in [400u16, 403, 404] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_string(r#"{"error":{"message":"nope"}}"#))
            .mount(&server)
            .await;
        let error = client(3)
            .post_json(&server.uri(), &[], body(), &CancellationToken::new())
            .await
            .err();
        assert!(error.is_some_and(|e| e.status == Some(status) && e.message.contains("nope")));
        assert_eq!(
            server.received_requests().await.map(|r| r.len()),
            Some(1),
            "status {status}"
        );
    }
}

#[tokio::test]
async fn a_retry_after_beyond_the_total_wait_cap_is_not_waited_for() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "3600"))
        .mount(&server)
        .await;
    let started = Instant::now();
    let error = client(3)
        .post_json(&server.uri(), &[], body(), &CancellationToken::new())
        .await
        .err();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(
        error
            .is_some_and(|e| e.kind == LlmErrorKind::RateLimited && e.retry_after() == Some(Duration::from_secs(3600)))
    );
}

#[tokio::test]
async fn cancellation_during_a_slow_response_returns_within_100_ms() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string("late")
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&server)
        .await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let error = client(3).post_json(&server.uri(), &[], body(), &cancel).await.err();
    let elapsed = started.elapsed();
    assert!(error.is_some_and(|e| e.kind == LlmErrorKind::Cancelled));
    assert!(elapsed < Duration::from_millis(150), "returned after {elapsed:?}");
}

#[tokio::test]
async fn extra_headers_are_sent_and_streams_deliver_the_body() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/stream"))
        .and(header("x-extra", "yes"))
        .respond_with(ResponseTemplate::new(200).set_body_string("data: 1\n\ndata: 2\n\n"))
        .mount(&server)
        .await;
    let stream = client(0)
        .post_stream(
            &format!("{}/stream", server.uri()),
            &[("x-extra".to_owned(), "yes".to_owned())],
            body(),
            &CancellationToken::new(),
        )
        .await
        .expect("stream");
    let events: Vec<_> = agent_http::sse::sse_events(stream).collect().await;
    let data: Vec<_> = events.into_iter().filter_map(Result::ok).map(|e| e.data).collect();
    assert_eq!(data, ["1", "2"]);
}

#[tokio::test]
async fn a_failed_stream_request_is_retried_before_any_byte_arrives() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("data: ok\n\n"))
        .mount(&server)
        .await;
    let stream = client(2)
        .post_stream(&server.uri(), &[], body(), &CancellationToken::new())
        .await;
    assert!(stream.is_ok());
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(2));
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    let error = client(0)
        .post_json("http://127.0.0.1:9/nothing", &[], body(), &CancellationToken::new())
        .await
        .err();
    assert!(error.is_some_and(|e| matches!(e.kind, LlmErrorKind::Transport | LlmErrorKind::Timeout)));
}

#[tokio::test]
async fn x_should_retry_overrides_the_status() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/no"))
        .respond_with(ResponseTemplate::new(500).insert_header("x-should-retry", "false"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/yes"))
        .respond_with(ResponseTemplate::new(400).insert_header("x-should-retry", "true"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/yes"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&server)
        .await;
    let cancel = CancellationToken::new();
    let refused = client(3)
        .post_json(&format!("{}/no", server.uri()), &[], body(), &cancel)
        .await;
    assert_eq!(refused.map_err(|error| error.kind).err(), Some(LlmErrorKind::Server));
    let retried = client(3)
        .post_json(&format!("{}/yes", server.uri()), &[], body(), &cancel)
        .await;
    assert_eq!(retried.ok(), Some(Bytes::from_static(b"ok")));
    let requests = server.received_requests().await.map(|r| r.len());
    assert_eq!(requests, Some(3), "one attempt at /no, two at /yes");
}
