//! HTTP behaviour particular to `OpenAiClient` against a local mock server:
//! the request body and bearer key, missing keys per variant, the URL and
//! header shape of Azure and compatible servers, context-length errors. The
//! contract every provider keeps is in `http_contract.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use agent_testing::require_wire;
use agent_testing::wire::Wire;

use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmErrorKind, Message, StopReason};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
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
async fn a_missing_key_is_an_error_before_any_request() {
    let mut config = OpenAiConfig::openai("gpt-4o-mini");
    config.key.api_key_env = Some("AGENTRY_TEST_UNSET_KEY".into());
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
async fn an_oversized_attachment_is_refused_before_any_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let mut config = config(&server);
    // As `max_image_bytes = 64` in [providers.openai] sets it.
    config.media = serde_json::from_value::<OpenAiConfig>(json!({"max_image_bytes": 64}))
        .unwrap()
        .media;
    let client = OpenAiClient::new(config).unwrap();
    let request = ChatRequest::new(vec![Message::user_with(
        "What is this?",
        vec![agent_testing::media::png()],
    )]);
    for streamed in [false, true] {
        let error = if streamed {
            client.stream(&request, &CancellationToken::new()).await.err().unwrap()
        } else {
            client.complete(&request, &CancellationToken::new()).await.unwrap_err()
        };
        assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
        assert_eq!(error.provider.as_deref(), Some("openai"));
        assert!(
            error.message.contains("67 bytes; openai takes at most 64 bytes"),
            "{error}"
        );
    }
    assert!(server.received_requests().await.unwrap().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn the_media_bodies_the_server_receives_validate_against_the_official_schema() {
    let openai = require_wire!("openai");
    let validator = common::request_validator(&openai);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&openai), "application/json"))
        .mount(&server)
        .await;
    let client = client(&server);
    let conversations = agent_testing::canonical::multimodal_conversations();
    for (_, request) in &conversations {
        client.complete(request, &CancellationToken::new()).await.unwrap();
    }
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), conversations.len());
    for ((name, _), request) in conversations.iter().zip(&received) {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        let errors = common::schema_errors(&validator, &body);
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}
