//! The server on a real socket, driven over HTTP with reqwest: every
//! endpoint, the key checks, the body limit, the per-key run limit, and a
//! client that leaves mid-stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_core::ToolContext;
use agent_runner::Agent;
use agent_testing::{ScriptedClient, response};
use agent_tools::{NoArgs, TypedTool};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

mod common;

use common::{KEY, OTHER_KEY, answering, chat, json_of, start};

#[tokio::test]
async fn health_and_readiness_answer_without_a_key_and_readiness_ends_at_shutdown() {
    let mut server = start(answering("x"), |server| server.drain_delay(Duration::from_millis(500))).await;
    assert_eq!(server.get("/healthz").await, (StatusCode::OK, json!({"status": "ok"})));
    assert_eq!(
        server.get("/readyz").await,
        (StatusCode::OK, json!({"status": "ready"}))
    );
    if let Some(stop) = server.stop.take() {
        let _ = stop.send(());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        server.get("/readyz").await,
        (StatusCode::SERVICE_UNAVAILABLE, json!({"status": "shutting_down"}))
    );
    let served = tokio::time::timeout(Duration::from_secs(5), server.served).await;
    assert!(matches!(served, Ok(Ok(Ok(())))), "{served:?}");
}

#[tokio::test]
async fn readiness_carries_the_details_it_is_given_and_stays_ready() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let details: agent_server::ReadinessDetails = Arc::new(move || {
        let probe = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        json!({"circuit_breakers": [{"name": "openai", "state": "open"}], "probe": probe})
    });
    let server = start(answering("x"), move |server| server.readiness_details(details)).await;
    let (status, body) = server.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"status": "ready", "details": {"circuit_breakers": [{"name": "openai", "state": "open"}], "probe": 1}})
    );
    assert_eq!(
        server.get("/readyz").await.1["details"]["probe"],
        2,
        "the details are read on every probe"
    );
}

#[tokio::test]
async fn a_missing_or_unknown_key_is_401_in_openais_error_shape() {
    let server = start(answering("x"), |server| server).await;
    for key in [None, Some("wrong-key"), Some("")] {
        let response = server
            .post("/v1/chat/completions", key, &chat("hi"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{key:?}");
        assert_eq!(
            response.headers().get("www-authenticate").and_then(|v| v.to_str().ok()),
            Some("Bearer")
        );
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert_eq!(body["error"]["type"], "authentication_error");
        let (status, _) = json_of(server.post("/v1/runs", key, &json!({"prompt": "hi"}))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let server = start(answering("x"), |server| server.max_body_bytes(1024)).await;
    let (status, body) = json_of(server.post("/v1/chat/completions", Some(KEY), &chat(&"x".repeat(4096)))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1024 bytes")),
        "{body}"
    );
    let (status, _) = json_of(server.post("/v1/chat/completions", Some(KEY), &chat("short"))).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_chat_completion_is_the_agents_answer_after_its_tools() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("now", json!({}))]))
        .respond(response::text("It is noon."));
    let agent = Agent::builder(Arc::new(client))
        .tool(TypedTool::new("now", "The time", |_: NoArgs, _: ToolContext| async {
            Ok("12:00")
        }))
        .build();
    let server = start(agent, |server| server).await;
    let (status, body) = json_of(server.post(
        "/v1/chat/completions",
        Some(KEY),
        &json!({"model": "travel", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What time is it?"},
        ]}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "travel");
    assert_eq!(
        body["choices"][0]["message"],
        json!({"role": "assistant", "content": "It is noon."})
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["usage"]["total_tokens"].is_u64(), "{body}");
}

#[tokio::test]
async fn a_streamed_chat_completion_sends_the_text_in_chunks_then_done() {
    let server = start(answering("Streamed answer."), |server| server).await;
    let mut request = chat("hi");
    request["stream"] = json!(true);
    request["stream_options"] = json!({"include_usage": true});
    let response = server
        .post("/v1/chat/completions", Some(KEY), &request)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers().get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let body = response.text().await.unwrap_or_default();
    let data: Vec<&str> = body.lines().filter_map(|line| line.strip_prefix("data: ")).collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|chunk| serde_json::from_str(chunk).unwrap_or_else(|e| panic!("{e}: {chunk}")))
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Streamed answer.");
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("stop")]);
    assert!(
        chunks.last().is_some_and(|c| c["usage"]["total_tokens"].is_u64()),
        "{body}"
    );
}

#[tokio::test]
async fn a_run_answers_with_the_record_and_continues_a_conversation() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::text("Hello, Ada."))
            .respond(response::text("You are Ada.")),
    );
    let agent = Agent::builder(client.clone()).build();
    let server = start(agent, |server| server).await;
    let (status, first) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "I am Ada."}))).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["response"], "Hello, Ada.");
    assert_eq!(first["stop_reason"], "completed");
    let (status, second) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Who am I?", "messages": first["messages"]}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["response"], "You are Ada.");
    assert_eq!(client.requests()[1].messages.len(), 3);
    let (status, body) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": " "}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = json_of(server.post("/v1/runs", Some(KEY), &json!({"promt": "typo"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn runs_in_flight_are_limited_per_key() {
    let client = ScriptedClient::new()
        .respond_after(Duration::from_millis(800), response::text("slow"))
        .respond(response::text("other key"))
        .respond(response::text("after"));
    let server = start(Agent::builder(Arc::new(client)).build(), |server| {
        server.max_runs_per_key(1)
    })
    .await;
    let slow = server.post("/v1/runs", Some(KEY), &json!({"prompt": "slow"})).send();
    let slow = tokio::spawn(slow);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, body) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "again"}))).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    // Another key is not held back by the first one's run.
    let (status, body) = json_of(server.post("/v1/runs", Some(OTHER_KEY), &json!({"prompt": "mine"}))).await;
    assert_eq!((status, body["response"].clone()), (StatusCode::OK, json!("other key")));
    let finished = slow.await.map(|r| r.map(|r| r.status()));
    assert!(matches!(finished, Ok(Ok(StatusCode::OK))), "{finished:?}");
    // The slot came back when the run finished.
    let (status, _) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "after"}))).await;
    assert_eq!(status, StatusCode::OK);
}

/// Sets its flag when dropped: the registry stops a cancelled tool by
/// dropping its future.
struct Stopped(Arc<AtomicBool>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_client_leaving_mid_stream_cancels_the_run() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&cancelled);
    let (started, tool_started) = oneshot::channel::<()>();
    let started = Arc::new(std::sync::Mutex::new(Some(started)));
    let wait = TypedTool::new("wait", "Waits", move |_: NoArgs, context: ToolContext| {
        let seen = Arc::clone(&seen);
        let started = Arc::clone(&started);
        async move {
            if let Some(started) = started.lock().ok().and_then(|mut s| s.take()) {
                let _ = started.send(());
            }
            let stopped = Stopped(seen);
            tokio::select! {
                () = context.cancel.cancelled() => {}
                () = tokio::time::sleep(Duration::from_secs(30)) => std::mem::forget(stopped),
            }
            Ok("done")
        }
    });
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("wait", json!({}))]))
        .respond(response::text("never"));
    let agent = Agent::builder(Arc::new(client)).tool(wait).build();
    let server = start(agent, |server| server.keep_alive(Duration::from_millis(100))).await;
    let mut request = chat("wait for it");
    request["stream"] = json!(true);
    let response = server
        .post("/v1/chat/completions", Some(KEY), &request)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), StatusCode::OK);
    let _ = tokio::time::timeout(Duration::from_secs(10), tool_started).await;
    drop(response);
    let mut waited = Duration::ZERO;
    while !cancelled.load(Ordering::SeqCst) && waited < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    assert!(cancelled.load(Ordering::SeqCst), "the tool was not cancelled");
}

#[tokio::test]
async fn cross_origin_requests_get_no_cors_permission() {
    let server = start(answering("x"), |server| server).await;
    let preflight = server
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/v1/runs", server.base))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!preflight.status().is_success(), "{}", preflight.status());
    let simple = server
        .post("/v1/runs", Some(KEY), &json!({"prompt": "hi"}))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for response in [&preflight, &simple] {
        assert!(
            response.headers().get("access-control-allow-origin").is_none(),
            "{:?}",
            response.headers()
        );
    }
}
