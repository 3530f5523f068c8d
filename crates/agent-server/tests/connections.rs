//! Connections on a real socket, driven with raw TCP: a request whose
//! headers or body never finish is closed after its timeout, shutdown does
//! not wait for such a request, and connections over the limit wait for a
//! free one while open ones keep working.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::ToolContext;
use agent_runner::Agent;
use agent_testing::{ScriptedClient, response};
use agent_tools::{NoArgs, TypedTool};
use common::{KEY, answering, json_of, start};
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// The start of a request whose headers never end.
const HALF_SENT: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n";

/// A connection to `base` (`http://HOST:PORT`) that has sent `bytes`.
async fn connect_and_send(base: &str, bytes: &[u8]) -> TcpStream {
    let address = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).await.unwrap_or_else(|e| panic!("{e}"));
    stream.write_all(bytes).await.unwrap_or_else(|e| panic!("{e}"));
    stream
}

/// What the server sends on `stream` until it closes it, or `None` when it
/// is still open after `within`.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let mut received = Vec::new();
    match tokio::time::timeout(within, stream.read_to_end(&mut received)).await {
        // A reset closes it too.
        Ok(_) => Some(String::from_utf8_lossy(&received).into_owned()),
        Err(_) => None,
    }
}

#[tokio::test]
async fn a_half_sent_request_is_closed_after_the_header_read_timeout() {
    let server = start(answering("x"), |server| {
        server.header_read_timeout(Duration::from_millis(300))
    })
    .await;
    let mut stream = connect_and_send(&server.base, HALF_SENT).await;
    let received = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let received = received.unwrap_or_else(|| panic!("the server kept the half-sent request open"));
    assert!(
        received.is_empty() || received.starts_with("HTTP/1.1 408"),
        "nothing, or a 408: {received:?}"
    );
    // An idle keep-alive connection is closed after the same time.
    let mut stream = connect_and_send(&server.base, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let received = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let received = received.unwrap_or_else(|| panic!("the server kept the idle connection open"));
    assert!(received.starts_with("HTTP/1.1 200"), "{received:?}");
    assert_eq!(server.get("/healthz").await.0, StatusCode::OK);
}

#[tokio::test]
async fn an_answer_slower_than_the_header_read_timeout_is_not_cut() {
    let client = ScriptedClient::new().respond_after(Duration::from_millis(800), response::text("slow"));
    let server = start(Agent::builder(Arc::new(client)).build(), |server| {
        server.header_read_timeout(Duration::from_millis(200))
    })
    .await;
    let (status, record) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "hi"}))).await;
    assert_eq!((status, record["response"].clone()), (StatusCode::OK, json!("slow")));
}

#[tokio::test]
async fn shutdown_does_not_wait_for_a_half_sent_request() {
    let mut server = start(answering("x"), |server| {
        server
            .header_read_timeout(Duration::from_secs(120))
            .shutdown_grace(Duration::from_secs(120))
    })
    .await;
    assert_eq!(server.get("/healthz").await.0, StatusCode::OK, "the server is up");
    let mut half_sent = connect_and_send(&server.base, HALF_SENT).await;
    // An idle keep-alive connection does not hold shutdown either.
    let mut idle = connect_and_send(&server.base, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let mut answer = [0_u8; 12];
    let read = tokio::time::timeout(Duration::from_secs(10), idle.read_exact(&mut answer)).await;
    assert!(matches!(read, Ok(Ok(_))), "{read:?}");
    assert_eq!(&answer, b"HTTP/1.1 200");

    let stopped = tokio::time::timeout(Duration::from_secs(10), server.stop()).await;
    assert!(
        matches!(stopped, Ok(Ok(()))),
        "serve returned well before the 120 s timeout and grace: {stopped:?}"
    );
    let closed = read_until_closed(&mut half_sent, Duration::from_secs(10)).await;
    assert!(closed.is_some(), "the half-sent request's connection is closed");
}

#[tokio::test]
async fn connections_over_the_limit_wait_for_a_free_one_and_an_open_connection_keeps_working() {
    const LIMIT: usize = 8;
    let server = start(answering("x"), |server| {
        server
            .max_connections(LIMIT)
            .header_read_timeout(Duration::from_secs(120))
    })
    .await;
    // This client's keep-alive connection is one of the eight.
    assert_eq!(server.get("/healthz").await.0, StatusCode::OK);
    let mut half_sent = Vec::new();
    for _ in 0..LIMIT + 4 {
        half_sent.push(connect_and_send(&server.base, HALF_SENT).await);
    }
    // Every connection is taken: a new client waits, ...
    let newcomer = reqwest::Client::new();
    let waiting = tokio::spawn({
        let url = format!("{}/healthz", server.base);
        async move { newcomer.get(url).send().await.map(|response| response.status()) }
    });
    // ... while the open connection is answered at once.
    for _ in 0..3 {
        let answered = tokio::time::timeout(Duration::from_secs(10), server.get("/healthz")).await;
        assert!(matches!(answered, Ok((StatusCode::OK, _))), "{answered:?}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "no connection is free for the new client");
    // Once the half-sent requests go away, the new client is answered.
    drop(half_sent);
    let answered = tokio::time::timeout(Duration::from_secs(10), waiting).await;
    assert!(matches!(answered, Ok(Ok(Ok(StatusCode::OK)))), "{answered:?}");
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_408_in_openais_error_shape() {
    let server = start(answering("x"), |server| server.body_timeout(Duration::from_millis(300))).await;
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"prompt\":"
    );
    let mut stream = connect_and_send(&server.base, head.as_bytes()).await;
    let received = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let received = received.unwrap_or_else(|| panic!("the server waited for the body for ever"));
    assert!(received.starts_with("HTTP/1.1 408"), "{received}");
    assert!(received.contains("\"type\":\"invalid_request_error\""), "{received}");
    assert!(received.contains("0.3 s"), "the message names the timeout: {received}");
    // A body that arrives in time is read as before.
    let (status, record) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "hi"}))).await;
    assert_eq!((status, record["response"].clone()), (StatusCode::OK, json!("x")));
}

#[tokio::test]
async fn at_shutdown_a_waiting_request_gets_its_cancelled_record() {
    let (started, tool_started) = oneshot::channel::<()>();
    let started = Arc::new(std::sync::Mutex::new(Some(started)));
    let tool = TypedTool::new("wait", "Waits", move |_: NoArgs, context: ToolContext| {
        let started = Arc::clone(&started);
        async move {
            if let Some(started) = started.lock().ok().and_then(|mut s| s.take()) {
                let _ = started.send(());
            }
            context.cancel.cancelled().await;
            Ok("cancelled")
        }
    });
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("wait", json!({}))]))
        .respond(response::text("never"));
    let mut server = start(Agent::builder(Arc::new(client)).tool(tool).build(), |server| {
        server.shutdown_grace(Duration::from_millis(300))
    })
    .await;
    let waiting = tokio::spawn(json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Wait."}))));
    let _ = tokio::time::timeout(Duration::from_secs(10), tool_started).await;
    let stopped = tokio::time::timeout(Duration::from_secs(10), server.stop()).await;
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
    let answered = tokio::time::timeout(Duration::from_secs(10), waiting).await;
    let Ok(Ok((status, record))) = answered else {
        panic!("the waiting request was answered: {answered:?}")
    };
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["stop_reason"], "cancelled", "{record}");
}
