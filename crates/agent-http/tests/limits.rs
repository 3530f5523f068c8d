//! Size and time limits: a response body, an SSE event, an NDJSON line and
//! a whole stream are bounded, and going past a bound is a typed error.

use agent_core::{CancellationToken, LlmError, LlmErrorKind};
use agent_http::ndjson::ndjson_lines;
use agent_http::sse::sse_events;
use agent_http::{HttpClient, HttpConfig};
use bytes::Bytes;
use futures::StreamExt;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const MIB: usize = 1024 * 1024;

fn body() -> Bytes {
    Bytes::from_static(br#"{"prompt":"hello"}"#)
}

/// The error of `result`, without printing a (large) success value.
fn failure<T, E>(result: Result<T, E>) -> E {
    match result {
        Ok(_) => panic!("expected an error, got a success"),
        Err(error) => error,
    }
}

fn chunks(parts: Vec<Vec<u8>>) -> impl futures::Stream<Item = Result<Bytes, LlmError>> + Unpin {
    futures::stream::iter(parts.into_iter().map(|part| Ok(Bytes::from(part))))
}

/// `len` bytes of `x` cut into 64 KiB chunks, after `prefix`.
fn long_line(prefix: &[u8], len: usize) -> Vec<Vec<u8>> {
    let mut line = prefix.to_vec();
    line.resize(prefix.len() + len, b'x');
    line.chunks(64 * 1024).map(<[u8]>::to_vec).collect()
}

#[tokio::test]
async fn a_json_body_over_the_default_16_mib_cap_is_refused() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b' '; 16 * MIB + 1]))
        .mount(&server)
        .await;
    let client = HttpClient::new("testprov", HttpConfig::default()).expect("client");
    let error = failure(
        client
            .post_json(&server.uri(), &[], body(), &CancellationToken::new())
            .await,
    );
    assert_eq!(error.kind, LlmErrorKind::Decode, "{error}");
    assert!(error.message.contains("16777216-byte limit"), "{error}");
    assert!(error.message.contains("max_response_bytes"), "{error}");
}

#[tokio::test]
async fn an_sse_line_over_the_default_1_mib_cap_ends_the_stream_with_an_error() {
    let mut parts = vec![b"data: first\n\n".to_vec()];
    parts.extend(long_line(b"data: ", 2 * MIB));
    parts.push(b"\n\ndata: never\n\n".to_vec());
    let items: Vec<_> = sse_events(chunks(parts)).collect().await;
    let oks = items.iter().filter(|item| item.is_ok()).count();
    assert_eq!((items.len(), oks), (2, 1), "the first event, then the error");
    assert_eq!(items[0].as_ref().map(|event| event.data.as_str()).ok(), Some("first"));
    let error = failure(items[1].as_ref());
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert!(error.message.contains("1048576-byte limit"), "{error}");
}

#[tokio::test]
async fn an_sse_event_of_many_lines_over_the_default_cap_is_refused() {
    let line = format!("data: {}\n", "y".repeat(1000));
    let parts = vec![line.repeat(1100).into_bytes(), b"\n".to_vec()];
    let items: Vec<_> = sse_events(chunks(parts)).collect().await;
    assert_eq!(items.len(), 1, "{}", items.len());
    let error = failure(items[0].as_ref());
    assert!(error.message.contains("SSE event"), "{error}");
}

#[tokio::test]
async fn an_ndjson_line_over_the_default_1_mib_cap_ends_the_stream_with_an_error() {
    let mut parts = vec![b"{\"a\":1}\n".to_vec()];
    parts.extend(long_line(b"{\"b\":\"", 2 * MIB));
    let items: Vec<_> = ndjson_lines(chunks(parts)).collect().await;
    assert_eq!(items.len(), 2, "{}", items.len());
    assert_eq!(items[0].as_deref().ok(), Some("{\"a\":1}"));
    let error = failure(items[1].as_ref());
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert!(error.message.contains("NDJSON line"), "{error}");
}

fn capped(config: HttpConfig) -> HttpClient {
    let config = HttpConfig {
        max_retries: 3,
        initial_backoff_ms: 1,
        max_backoff_ms: 2,
        ..config
    };
    HttpClient::new("testprov", config).expect("client")
}

async fn server_with_body(body: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string(body))
        .mount(&server)
        .await;
    server
}

/// A one-connection HTTP server that answers with `head`, then writes each
/// of `chunks` (already framed) `interval` apart: a body that arrives
/// slowly or without a `Content-Length`, which wiremock cannot send.
async fn raw_server(head: &'static str, chunks: Vec<Vec<u8>>, interval: std::time::Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        // Read the request head and its JSON body (which ends in `}`)
        // before answering.
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => request.extend_from_slice(&buffer[..read]),
            }
            if request.windows(4).any(|window| window == b"\r\n\r\n") && request.ends_with(b"}") {
                break;
            }
        }
        if socket.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for chunk in chunks {
            tokio::time::sleep(interval).await;
            if socket.write_all(&chunk).await.is_err() {
                return;
            }
        }
    });
    format!("http://{address}/")
}

/// One chunk of a `Transfer-Encoding: chunked` body.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut framed = format!("{:x}\r\n", data.len()).into_bytes();
    framed.extend_from_slice(data);
    framed.extend_from_slice(b"\r\n");
    framed
}

const CHUNKED_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

#[tokio::test]
async fn a_json_body_over_a_configured_cap_fails_once_naming_the_setting() {
    let server = server_with_body(&"x".repeat(4096)).await;
    let client = capped(HttpConfig {
        max_response_bytes: 1024,
        ..HttpConfig::default()
    });
    let error = failure(
        client
            .post_json(&server.uri(), &[], body(), &CancellationToken::new())
            .await,
    );
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert_eq!(error.provider.as_deref(), Some("testprov"));
    assert_eq!(
        error.message,
        "the response body is larger than the 1024-byte limit (max_response_bytes); it declared 4096 bytes"
    );
    let requests = server.received_requests().await.map(|requests| requests.len());
    assert_eq!(requests, Some(1), "a body too large is not asked for again");

    let at_the_cap = server_with_body(&"y".repeat(1024)).await;
    let bytes = client
        .post_json(&at_the_cap.uri(), &[], body(), &CancellationToken::new())
        .await;
    assert_eq!(bytes.map(|bytes| bytes.len()).ok(), Some(1024));
}

#[tokio::test]
async fn a_chunked_json_body_without_a_length_is_cut_at_the_cap() {
    let chunks = vec![chunk(&[b'z'; 700]), chunk(&[b'z'; 700]), chunk(b""), Vec::new()];
    let url = raw_server(CHUNKED_HEAD, chunks, std::time::Duration::from_millis(10)).await;
    let client = capped(HttpConfig {
        max_response_bytes: 1024,
        ..HttpConfig::default()
    });
    let error = failure(client.post_json(&url, &[], body(), &CancellationToken::new()).await);
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert_eq!(
        error.message,
        "the response body is larger than the 1024-byte limit (max_response_bytes)"
    );
}

#[tokio::test]
async fn post_sse_and_post_ndjson_apply_the_configured_event_cap() {
    let client = capped(HttpConfig {
        max_event_bytes: 64,
        ..HttpConfig::default()
    });
    let cancel = CancellationToken::new();
    let long = "x".repeat(200);
    let sse = server_with_body(&format!("data: ok\n\ndata: {long}\n\ndata: after\n\n")).await;
    let items: Vec<_> = client
        .post_sse(&sse.uri(), &[], body(), &cancel)
        .await
        .expect("stream")
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().map(|event| event.data.as_str()).ok(), Some("ok"));
    let error = failure(items[1].as_ref());
    assert_eq!(
        error.message,
        "an SSE line is longer than the 64-byte limit (max_event_bytes)"
    );

    let ndjson = server_with_body(&format!("{{\"a\":1}}\n{{\"b\":\"{long}\"}}\n{{\"c\":3}}\n")).await;
    let items: Vec<_> = client
        .post_ndjson(&ndjson.uri(), &[], body(), &cancel)
        .await
        .expect("stream")
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_deref().ok(), Some("{\"a\":1}"));
    let error = failure(items[1].as_ref());
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert!(
        error.message.contains("NDJSON line is longer than the 64-byte limit"),
        "{error}"
    );
}

#[tokio::test]
async fn a_stream_past_its_time_limit_ends_with_a_timeout() {
    let ticks = (0..100).map(|_| chunk(b"data: tick\n\n")).collect();
    let url = raw_server(CHUNKED_HEAD, ticks, std::time::Duration::from_millis(50)).await;
    let client = capped(HttpConfig {
        stream_timeout_secs: 0.4,
        ..HttpConfig::default()
    });
    let started = std::time::Instant::now();
    let items: Vec<_> = client
        .post_sse(&url, &[], body(), &CancellationToken::new())
        .await
        .expect("stream")
        .collect()
        .await;
    let elapsed = started.elapsed();
    assert!(elapsed < std::time::Duration::from_secs(2), "took {elapsed:?}");
    let (last, events) = items.split_last().expect("items");
    assert!(events.len() >= 2, "ticks arrive until the limit: {}", events.len());
    assert!(events.iter().all(Result::is_ok));
    let error = failure(last.as_ref());
    assert_eq!(error.kind, LlmErrorKind::Timeout);
    assert_eq!(error.provider.as_deref(), Some("testprov"));
    assert_eq!(
        error.message,
        "the stream did not end within 400 ms (stream_timeout_secs)"
    );
}

#[tokio::test]
async fn a_stream_that_never_stops_ends_at_the_total_cap() {
    let client = capped(HttpConfig {
        max_stream_bytes: 100,
        ..HttpConfig::default()
    });
    let events = "data: {\"delta\": \"more\"}\n\n".repeat(40);
    let endless = server_with_body(&events).await;
    let items: Vec<_> = client
        .post_sse(&endless.uri(), &[], body(), &CancellationToken::new())
        .await
        .expect("stream")
        .collect()
        .await;
    let (last, before) = items.split_last().expect("items");
    let error = failure(last.as_ref());
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert_eq!(
        error.message,
        "the streamed response is larger than the 100-byte limit (max_stream_bytes)"
    );
    let passed: usize = before
        .iter()
        .map(|event| event.as_ref().map_or(0, |e| e.data.len()))
        .sum();
    assert!(
        passed <= 100,
        "no more than the cap reached the caller: {passed} bytes of data"
    );
    assert!(before.iter().all(Result::is_ok));

    let within = capped(HttpConfig {
        max_stream_bytes: events.len(),
        ..HttpConfig::default()
    });
    let items: Vec<_> = within
        .post_sse(&endless.uri(), &[], body(), &CancellationToken::new())
        .await
        .expect("stream")
        .collect()
        .await;
    assert_eq!(items.len(), 40, "a stream at the cap is whole");
    assert!(items.iter().all(Result::is_ok));
}
