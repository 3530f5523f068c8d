//! HTTP behaviour of `OllamaClient` against a local mock server: the path
//! and body, retries, errors with Ollama's message, streams cut short or
//! failing midway, cancellation, `OLLAMA_HOST` and an optional key.
#![allow(clippy::unwrap_used)]

mod common;

use agent_testing::collect_events;
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmErrorKind, Message, StopReason, StreamEvent};
use agent_provider_ollama::{OllamaClient, OllamaConfig};
use agent_testing::require_wire;
use common::{assemble, tool_call_stream};
use serde_json::json;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config(server: &MockServer) -> OllamaConfig {
    let mut config = OllamaConfig::new("llama3.2").with_base_url(server.uri());
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config
}

fn client(server: &MockServer) -> OllamaClient {
    OllamaClient::with_env(config(server), |_| None).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::user("why is the sky blue?")])
}

fn ndjson(body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson")
}

#[tokio::test]
async fn a_completion_posts_to_api_chat_with_stream_false() {
    let examples = require_wire!("ollama/docs_examples");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/chat"))
        .and(body_partial_json(json!({"model": "llama3.2", "stream": false})))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            examples.bytes("api_md_chat_request_no_streaming.response.json"),
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let reply = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.message.content, "Hello! How are you today?");
    assert_eq!(reply.usage.input_tokens, 26);
    assert_eq!(reply.usage.output_tokens, 298);
}

#[tokio::test]
async fn a_stream_posts_stream_true_and_assembles_tool_calls() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/chat"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(ndjson(tool_call_stream()))
        .expect(1)
        .mount(&server)
        .await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    assert!(error.is_none(), "{error:?}");
    let response = assemble(&events).unwrap();
    assert_eq!(response.message.tool_calls.len(), 2);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.message.reasoning[0].text, "Two cities, two calls.");
}

#[tokio::test]
async fn too_many_requests_is_retried_after_the_delay_asked_for() {
    let examples = require_wire!("ollama/docs_examples");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": "server busy, please try again"})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            examples.bytes("api_md_chat_request_no_streaming.response.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    let started = Instant::now();
    let reply = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.message.content, "Hello! How are you today?");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_missing_model_is_not_retried_and_says_what_ollama_said() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"error": "model \"llama3.2\" not found, try pulling it first"})),
        )
        .mount(&server)
        .await;
    let error = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert_eq!(error.status, Some(404));
    assert!(error.message.contains("try pulling it first"), "{error}");
    assert_eq!(error.provider.as_deref(), Some("ollama"));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried() {
    let examples = require_wire!("ollama/docs_examples");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500).set_body_raw(examples.bytes("errors_mdx_error_body.json"), "application/json"),
        )
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            examples.bytes("api_md_chat_request_no_streaming.response.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn an_error_line_midway_ends_the_stream_with_ollamas_message() {
    let server = MockServer::start().await;
    let body = b"{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Yes\"},\"done\":false}\n{\"error\":\"an error was encountered while running the model\"}\n".to_vec();
    Mock::given(method("POST"))
        .respond_with(ndjson(body))
        .mount(&server)
        .await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.unwrap();
    assert_eq!(error.kind, LlmErrorKind::Server);
    assert!(error.message.contains("an error was encountered"), "{error}");
    assert_eq!(error.provider.as_deref(), Some("ollama"));
    assert!(events.contains(&StreamEvent::TextDelta { text: "Yes".into() }));
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_is_an_error_naming_the_call() {
    let server = MockServer::start().await;
    let mut body = tool_call_stream();
    let cut = String::from_utf8(body.clone()).unwrap().find("\"Tokyo\"").unwrap();
    body.truncate(cut);
    Mock::given(method("POST"))
        .respond_with(ndjson(body))
        .mount(&server)
        .await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.unwrap();
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert!(error.message.contains("tool call `get_weather`"), "{error}");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, StreamEvent::ToolCallStart { .. })),
        "no half call gets through"
    );
}

#[tokio::test]
async fn cancelling_a_slow_request_returns_promptly() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(30)))
        .mount(&server)
        .await;
    let client = client(&server);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let error = client.complete(&request(), &cancel).await.unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Cancelled);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn ollama_host_names_the_server_when_no_base_url_is_set() {
    let examples = require_wire!("ollama/docs_examples");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/chat"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            examples.bytes("api_md_chat_request_no_streaming.response.json"),
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let host = server.address().to_string();
    let client = OllamaClient::with_env(OllamaConfig::new("llama3.2"), |name| {
        (name == "OLLAMA_HOST").then(|| host.clone())
    })
    .unwrap();
    assert_eq!(client.url(), format!("http://{host}/api/chat"));
    client.complete(&request(), &CancellationToken::new()).await.unwrap();
}

#[tokio::test]
async fn a_configured_key_is_sent_as_a_bearer_token_and_a_rejected_one_names_the_variable() {
    let examples = require_wire!("ollama/docs_examples");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("authorization", "Bearer ok-key"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            examples.bytes("api_md_chat_request_no_streaming.response.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": "unauthorized"})))
        .mount(&server)
        .await;
    let with_key = |key: &'static str| {
        let config = OllamaConfig {
            api_key_env: Some("OLLAMA_API_KEY".into()),
            ..config(&server)
        };
        OllamaClient::with_env(config, move |_| Some(key.to_owned())).unwrap()
    };
    with_key("ok-key")
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let client = with_key("bad-key");
    assert!(!format!("{client:?}").contains("bad-key"), "Debug never shows the key");
    let error = client
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Auth);
    assert!(error.message.contains("OLLAMA_API_KEY"), "{error}");
    assert!(!error.to_string().contains("bad-key"));
}
