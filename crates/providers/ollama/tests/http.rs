//! HTTP behaviour particular to `OllamaClient` against a local mock server:
//! the path and body, a missing model in Ollama's words, the tool-call
//! stream assembled, `OLLAMA_HOST` and an optional key. The contract every
//! provider keeps is in `http_contract.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use agent_testing::collect_events;

use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmErrorKind, Message, StopReason};
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
        let mut config = config(&server);
        config.key.api_key_env = Some("OLLAMA_API_KEY".into());
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

#[tokio::test]
async fn an_oversized_attachment_is_refused_before_any_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let mut config = config(&server);
    // As `max_image_bytes = 64` in [providers.ollama] sets it.
    config.media = serde_json::from_value::<OllamaConfig>(json!({"max_image_bytes": 64}))
        .unwrap()
        .media;
    let client = OllamaClient::with_env(config, |_| None).unwrap();
    let request = ChatRequest::new(vec![Message::user_with(
        "What is this?",
        vec![agent_testing::media::png()],
    )]);
    let error = client.complete(&request, &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert_eq!(error.provider.as_deref(), Some("ollama"));
    assert!(
        error.message.contains("67 bytes; ollama takes at most 64 bytes"),
        "{error}"
    );
    let error = client.stream(&request, &CancellationToken::new()).await.err().unwrap();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert!(server.received_requests().await.unwrap().is_empty(), "nothing was sent");
}
