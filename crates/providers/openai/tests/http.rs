//! HTTP behaviour of `OpenAiClient` against a local mock server: retries,
//! Retry-After, auth errors, truncated and split streams, cancellation, and
//! the URL and header shape of each variant.
#![allow(clippy::unwrap_used)]

mod common;

use agent_testing::wire::Wire;
use agent_testing::{collect_events, require_wire};
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmErrorKind, Message, StopReason, StreamEvent};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use common::{assemble, decode_sse};
use serde_json::json;
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-0123456789";

fn config(server: &MockServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::openai("gpt-4o-mini").with_api_key(KEY);
    config.base_url = Some(format!("{}/v1", server.uri()));
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config
}

fn client(server: &MockServer) -> OpenAiClient {
    OpenAiClient::new(config(server)).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::user("Hello!")])
}

/// The reference example of a plain reply.
fn ok_body(openai: &Wire) -> Vec<u8> {
    openai.bytes("reference_examples/default.response.json")
}

fn sse(body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

#[tokio::test]
async fn a_plain_completion_goes_to_the_versioned_path_with_a_bearer_key() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .and(body_partial_json(
            json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello!"}]}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&openai), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let response = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.content, "Hello! How can I assist you today?");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_after_about_a_second() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "Rate limit reached", "type": "requests"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&openai), "application/json"))
        .mount(&server)
        .await;
    let started = Instant::now();
    let response = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(response.message.content, "Hello! How can I assist you today?");
    assert!(elapsed >= Duration::from_millis(950), "waited only {elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "waited {elapsed:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn two_500s_then_a_200_succeed_on_the_third_attempt() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "boom", "type": "server_error"}})),
        )
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&openai), "application/json"))
        .mount(&server)
        .await;
    let response = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.usage.input_tokens, 19);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_401_fails_at_once_naming_the_variable_to_set() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {
            "message": "Incorrect API key provided: sk-test-**********6789.", "type": "invalid_request_error", "code": "invalid_api_key"}})))
        .mount(&server)
        .await;
    // The key comes from the environment, as it usually does.
    let mut config = config(&server);
    config.api_key = None;
    let client = OpenAiClient::with_env(config, |name| (name == "OPENAI_API_KEY").then(|| KEY.to_owned())).unwrap();
    let error = client
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Auth);
    assert_eq!(error.status, Some(401));
    assert!(error.message.contains("Incorrect API key provided"), "{error}");
    assert!(
        error
            .message
            .contains("set the OPENAI_API_KEY environment variable to a valid key"),
        "{error}"
    );
    assert!(!error.to_string().contains(KEY));
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "auth errors are not retried"
    );
}

#[tokio::test]
async fn a_missing_key_is_an_error_before_any_request() {
    let mut config = OpenAiConfig::openai("gpt-4o-mini");
    config.api_key_env = Some("AGENTRY_TEST_UNSET_KEY".into());
    let error = OpenAiClient::with_env(config, |_| None).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Auth);
    assert!(
        error
            .message
            .contains("set the AGENTRY_TEST_UNSET_KEY environment variable"),
        "{error}"
    );
    let azure = OpenAiClient::with_env(OpenAiConfig::azure("https://r.openai.azure.com", "d"), |_| None).unwrap_err();
    assert!(azure.message.contains("AZURE_OPENAI_API_KEY"), "{azure}");
}

#[tokio::test]
async fn a_recorded_stream_through_the_client_assembles_like_the_pure_decoder() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    let body = openai.bytes("sdk_recorded/python_stream_parallel_tool_calls.sse");
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        ))
        .respond_with(sse(body.clone()))
        .expect(1)
        .mount(&server)
        .await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(events, decode_sse(&[&body]).unwrap());
    let response = assemble(&events).unwrap();
    assert_eq!(response.message.tool_calls.len(), 2);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn a_stream_that_ends_mid_tool_call_is_a_truncation_error_not_a_half_call() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    let body = openai.text("sdk_recorded/python_stream_parallel_tool_calls.sse");
    // Keep the chunks up to the first fragment of the second call's arguments.
    let cut = body.find("{\\\"ti").unwrap();
    let cut = cut + body[cut..].find("\n\n").unwrap() + 2;
    Mock::given(method("POST"))
        .respond_with(sse(body.as_bytes()[..cut].to_vec()))
        .mount(&server)
        .await;
    let client = client(&server);
    let stream = client.stream(&request(), &CancellationToken::new()).await.unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.expect("a truncated stream must end in an error");
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert!(
        error
            .message
            .contains("truncated in the middle of tool call `get_stock_price`"),
        "{}",
        error.message
    );
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Stop { .. })));

    // The non-streamed path of a runner (accumulating the events) fails the same way.
    let mut accumulator = agent_core::StreamAccumulator::new();
    for event in events {
        accumulator.push(event).unwrap();
    }
    assert_eq!(accumulator.finish().unwrap_err().kind, LlmErrorKind::Decode);
}

#[tokio::test]
async fn an_error_inside_the_stream_becomes_an_llm_error() {
    let server = MockServer::start().await;
    let body = "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n\
                data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\"}}\n\n";
    Mock::given(method("POST"))
        .respond_with(sse(body.as_bytes().to_vec()))
        .mount(&server)
        .await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.unwrap();
    assert_eq!(error.kind, LlmErrorKind::Server);
    assert!(error.message.contains("The server had an error"), "{}", error.message);
    assert_eq!(error.provider.as_deref(), Some("openai"));
    assert!(events.contains(&StreamEvent::TextDelta { text: "Hi".into() }));
}

#[tokio::test]
async fn cancelling_a_slow_completion_returns_within_100_ms() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(ok_body(&openai), "application/json")
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&server)
        .await;
    let client = client(&server);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let cancelled_at = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
        Instant::now()
    });
    let error = client.complete(&request(), &cancel).await.unwrap_err();
    let returned = Instant::now();
    let cancelled_at = cancelled_at.await.unwrap();
    assert_eq!(error.kind, LlmErrorKind::Cancelled);
    let latency = returned.duration_since(cancelled_at);
    assert!(
        latency < Duration::from_millis(100),
        "returned {latency:?} after the cancel"
    );
}

#[tokio::test]
async fn cancelling_a_slow_stream_returns_within_100_ms() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(openai.bytes("sdk_recorded/python_stream_plain_text.sse")).set_delay(Duration::from_secs(10)))
        .mount(&server)
        .await;
    let client = client(&server);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let cancelled_at = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
        Instant::now()
    });
    let error = match client.stream(&request(), &cancel).await {
        Ok(stream) => collect_events(stream).await.1.unwrap(),
        Err(error) => error,
    };
    let latency = Instant::now().duration_since(cancelled_at.await.unwrap());
    assert_eq!(error.kind, LlmErrorKind::Cancelled);
    assert!(
        latency < Duration::from_millis(100),
        "returned {latency:?} after the cancel"
    );
}

#[tokio::test]
async fn azure_uses_the_deployment_path_api_version_and_api_key_header() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/prod-4o/chat/completions"))
        .and(query_param("api-version", "2024-10-21"))
        .and(header("api-key", "azure-secret-key"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&openai), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let config = OpenAiConfig::azure(server.uri(), "prod-4o");
    let client = OpenAiClient::with_env(config, |name| {
        (name == "AZURE_OPENAI_API_KEY").then(|| "azure-secret-key".to_owned())
    })
    .unwrap();
    assert_eq!(client.provider(), "azure.ai.openai");
    let response = client.complete(&request(), &CancellationToken::new()).await.unwrap();
    assert_eq!(response.model, "gpt-5.4");
    let received = server.received_requests().await.unwrap();
    assert!(
        received[0].headers.get("authorization").is_none(),
        "Azure sends no bearer token"
    );
    let debug = format!("{client:?}");
    assert!(!debug.contains("azure-secret-key"), "{debug}");
}

#[tokio::test]
async fn a_compatible_server_without_a_key_gets_no_authorization_header() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({"model": "qwen2.5", "max_tokens": 100})))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&openai), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let config = OpenAiConfig::compatible(format!("{}/v1/", server.uri()), "qwen2.5");
    let client = OpenAiClient::with_env(config, |_| Some("sk-should-not-be-read".into())).unwrap();
    let request = ChatRequest {
        max_tokens: Some(100),
        ..request()
    };
    client.complete(&request, &CancellationToken::new()).await.unwrap();
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
    assert!(received[0].headers.get("api-key").is_none());
    assert_eq!(client.provider(), "openai-compatible");
    assert!(!client.capabilities().json_schema);
}

#[tokio::test]
async fn extra_headers_are_sent_and_the_key_never_shows_in_debug_output() {
    let openai = require_wire!("openai");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("openai-organization", "org-123"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&openai), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.headers.insert("OpenAI-Organization".into(), "org-123".into());
    assert!(!format!("{config:?}").contains(KEY));
    let client = OpenAiClient::new(config).unwrap();
    assert!(!format!("{client:?}").contains(KEY));
    client.complete(&request(), &CancellationToken::new()).await.unwrap();
}

#[tokio::test]
async fn a_context_length_error_is_classified() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error",
            "code": "context_length_exceeded"}})))
        .mount(&server)
        .await;
    let error = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::ContextLength);
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_garbled_200_is_a_decode_error_naming_the_provider() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("<html>gateway</html>", "text/html"))
        .mount(&server)
        .await;
    let error = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert_eq!(error.provider.as_deref(), Some("openai"));
}

#[tokio::test]
async fn a_connection_that_breaks_mid_tool_call_names_the_call_that_was_cut() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let openai = require_wire!("openai");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let body = openai.text("sdk_recorded/python_stream_parallel_tool_calls.sse");
    let cut = body.find("\"Edinb").unwrap();
    let cut = cut + body[cut..].find("\n\n").unwrap() + 2;
    let partial = body[..cut].to_owned();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 65536];
        let _ = socket.read(&mut request).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{partial}\r\n", partial.len());
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(chunk.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        // Drop the connection without the terminating chunk.
    });
    let mut config = OpenAiConfig::openai("gpt-4o-mini").with_api_key(KEY);
    config.base_url = Some(format!("http://{address}/v1"));
    let client = OpenAiClient::new(config).unwrap();
    let stream = client.stream(&request(), &CancellationToken::new()).await.unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.expect("a broken connection must end in an error");
    assert!(
        error
            .message
            .contains("truncated in the middle of tool call `GetWeatherArgs`"),
        "{}",
        error.message
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::ToolCallEnd { .. } | StreamEvent::Stop { .. }))
    );
}
