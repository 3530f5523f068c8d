//! HTTP behaviour particular to `GeminiClient` against local mock servers:
//! no key in the URL, the model in the path, RetryInfo delays, 403 and
//! API_KEY_INVALID as auth failures, the recorded 404 on an event stream,
//! truncated and broken text streams. The contract every provider keeps is
//! in `http_contract.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use agent_testing::wire::Wire;
use agent_testing::{collect_events, require_wire};
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmErrorKind, Message, StopReason, StreamEvent};
use agent_provider_gemini::{GeminiClient, GeminiConfig};
use common::{assemble, interaction};
use serde_json::json;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "AIzaSy-test-0123456789";
const TEXT_STREAM: &str = "Chats_Tests_sendMessage_Google_AI_with_text_stream_0";

fn config(server: &MockServer) -> GeminiConfig {
    let mut config = GeminiConfig::new("gemini-2.5-flash")
        .with_api_key(KEY)
        .with_base_url(format!("{}/", server.uri()));
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config
}

fn client(server: &MockServer) -> GeminiClient {
    GeminiClient::new(config(server)).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::user("Why is the sky blue?")])
}

/// A recorded plain reply.
fn ok_body(gemini: &Wire) -> Vec<u8> {
    interaction(gemini, "Chats_Tests_sendMessage_Google_AI_with_config_0").body()
}

fn sse(body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

#[tokio::test]
async fn the_key_goes_in_the_x_goog_api_key_header_and_never_in_the_url() {
    let gemini = require_wire!("gemini");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .and(header("x-goog-api-key", KEY))
        .and(header("content-type", "application/json"))
        .and(body_partial_json(
            json!({"contents": [{"role": "user", "parts": [{"text": "Why is the sky blue?"}]}]}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&gemini), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&server);
    assert_eq!(client.provider(), "gcp.gemini");
    let response = client.complete(&request(), &CancellationToken::new()).await.unwrap();
    assert!(response.message.content.starts_with("The sky is blue because"));
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    let received = server.received_requests().await.unwrap();
    let url = received[0].url.to_string();
    assert!(!url.contains(KEY), "the key is not in the URL: {url}");
    assert!(received[0].url.query().is_none(), "no query at all: {url}");
    assert!(received[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn the_request_model_overrides_the_configured_one_in_the_url() {
    let gemini = require_wire!("gemini");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-pro:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&gemini), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let request = ChatRequest {
        model: Some("gemini-2.5-pro".into()),
        ..request()
    };
    client(&server)
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    let bad = ChatRequest {
        model: Some("../admin".into()),
        ..request
    };
    let error = client(&server)
        .complete(&bad, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
}

#[tokio::test]
async fn a_429_whose_body_carries_retry_info_is_retried_after_that_delay() {
    let gemini = require_wire!("gemini");
    // Google often sends no Retry-After header; the delay is in the body's
    // RetryInfo detail, which agent-http reads.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({"error": {
            "code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&gemini), "application/json"))
        .mount(&server)
        .await;
    let started = Instant::now();
    client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(950), "waited only {elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "waited {elapsed:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_429_that_persists_is_a_rate_limit_error_with_google_s_words() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(
            json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}),
        ))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.http.max_retries = 1;
    let error = GeminiClient::new(config)
        .unwrap()
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::RateLimited);
    assert!(error.message.contains("RESOURCE_EXHAUSTED: Quota exceeded"), "{error}");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn auth_failures_name_gemini_api_key_and_are_not_retried() {
    for (status, body) in [
        (
            401,
            json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}),
        ),
        (
            403,
            json!({"error": {"code": 403, "message": "Method doesn't allow unregistered callers.", "status": "PERMISSION_DENIED"}}),
        ),
        // What Google really answers for a wrong key: 400 API_KEY_INVALID.
        (
            400,
            json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
                             "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}),
        ),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .mount(&server)
            .await;
        let mut config = config(&server);
        config.key.api_key = None;
        let client = GeminiClient::with_env(config, |name| (name == "GEMINI_API_KEY").then(|| KEY.to_owned())).unwrap();
        let error = client
            .complete(&request(), &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Auth, "{status}: {error}");
        assert_eq!(error.status, Some(status));
        assert!(
            error
                .message
                .contains("set the GEMINI_API_KEY environment variable to a valid key"),
            "{status}: {error}"
        );
        assert!(!error.to_string().contains(KEY));
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            1,
            "{status} is not retried"
        );
    }
}

#[tokio::test]
async fn a_missing_key_is_an_error_before_any_request() {
    let error = GeminiClient::with_env(GeminiConfig::default(), |_| None).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Auth);
    assert!(
        error
            .message
            .contains("set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable"),
        "{error}"
    );
    let google = GeminiClient::with_env(GeminiConfig::default(), |name| {
        (name == "GOOGLE_API_KEY").then(|| "AIza-google".to_owned())
    });
    assert!(google.is_ok(), "GOOGLE_API_KEY is the fallback");
}

#[tokio::test]
async fn the_recorded_404_on_an_event_stream_is_a_clear_error() {
    let gemini = require_wire!("gemini");
    let server = MockServer::start().await;
    let recorded = interaction(&gemini, "Chats_Tests_sendMessage_Send_message_stream_with_error_0");
    Mock::given(method("POST"))
        .and(path("/v1beta/models/custom-gemini-2.0-flash:streamGenerateContent"))
        .respond_with(
            ResponseTemplate::new(recorded.status)
                .set_body_raw(serde_json::to_vec(&recorded.segments[0]).unwrap(), "text/event-stream"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.model = "custom-gemini-2.0-flash".into();
    let client = GeminiClient::new(config).unwrap();
    let error = match client.stream(&request(), &CancellationToken::new()).await {
        Ok(stream) => collect_events(stream).await.1.unwrap(),
        Err(error) => error,
    };
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert_eq!(error.status, Some(404));
    assert!(
        error
            .message
            .contains("NOT_FOUND: models/custom-gemini-2.0-flash is not found for API version v1beta"),
        "{error}"
    );
    assert!(
        error
            .message
            .contains("check the model name `custom-gemini-2.0-flash` and api_version `v1beta`"),
        "{error}"
    );
}

#[tokio::test]
async fn a_body_that_ends_without_a_finish_reason_is_a_truncation_error() {
    let gemini = require_wire!("gemini");
    let server = MockServer::start().await;
    let recorded = interaction(&gemini, TEXT_STREAM);
    let body = common::sse_from(&recorded.segments[..4]);
    Mock::given(method("POST")).respond_with(sse(body)).mount(&server).await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.unwrap();
    assert_eq!(error.kind, LlmErrorKind::Decode);
    assert!(
        error.message.contains("truncated after 4 chunks") && error.message.contains("before a finishReason"),
        "{}",
        error.message
    );
    assert_eq!(error.provider.as_deref(), Some("gcp.gemini"));
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Stop { .. })));
}

#[tokio::test]
async fn a_connection_that_breaks_mid_chunk_says_where_the_stream_was_cut() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let gemini = require_wire!("gemini");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let body = String::from_utf8(interaction(&gemini, TEXT_STREAM).sse()).unwrap();
    // Two whole chunks, then half of the third.
    let second_end = body.match_indices("\r\n\r\n").nth(1).unwrap().0 + 4;
    let partial = body[..second_end + 40].to_owned();
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
    let client = GeminiClient::new(
        GeminiConfig::new("gemini-2.5-flash")
            .with_api_key(KEY)
            .with_base_url(format!("http://{address}")),
    )
    .unwrap();
    let stream = client.stream(&request(), &CancellationToken::new()).await.unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.expect("a broken connection must end in an error");
    assert!(
        error.message.contains("truncated after 2 chunks") || error.message.contains("truncated inside chunk 3"),
        "{}",
        error.message
    );
    let text: usize = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::TextDelta { .. }))
        .count();
    assert_eq!(text, 2);
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Stop { .. })));
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
    assert_eq!(error.provider.as_deref(), Some("gcp.gemini"));
    assert!(error.message.contains("<html>gateway"), "{error}");
}

#[tokio::test]
async fn a_reply_without_model_version_reports_the_requested_model() {
    let gemini = require_wire!("gemini");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            gemini.bytes("cookbook_rest/function_calling_multi_turn_with_functionResponse.response.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:streamGenerateContent"))
        .respond_with(sse(gemini.bytes("cookbook_rest/streaming_gemini-pro_053bfa4.sse")))
        .mount(&server)
        .await;
    let client = client(&server);
    let whole = client.complete(&request(), &CancellationToken::new()).await.unwrap();
    assert_eq!(whole.model, "gemini-2.5-flash");
    let stream = client.stream(&request(), &CancellationToken::new()).await.unwrap();
    let (events, error) = collect_events(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(assemble(&events).unwrap().model, "gemini-2.5-flash");
}

/// An attachment over the configured limit is refused by the client before
/// any request leaves, streamed or not, naming the provider.
#[tokio::test]
async fn an_oversized_attachment_is_refused_before_sending() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.max_document_bytes = 64;
    let client = GeminiClient::new(config).unwrap();
    let cancel = CancellationToken::new();
    let pdf = agent_testing::canonical::multimodal_conversation("pdf_in_user_message").unwrap();
    let error = client.complete(&pdf, &cancel).await.unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert_eq!(
        error.to_string(),
        format!(
            "gcp.gemini: unsupported input: the document attachment is {} bytes; gcp.gemini takes at most 64 bytes",
            agent_testing::media::PDF.len()
        )
    );
    let Err(error) = client.stream(&pdf, &cancel).await else {
        panic!("a stream was opened for an oversized PDF");
    };
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert!(server.received_requests().await.unwrap().is_empty());
}

/// A question about a recording: the server receives the WAV as an
/// `inlineData` part before the text (Gemini reads audio).
#[tokio::test]
async fn an_audio_question_is_sent_as_inline_data_then_the_text() {
    let gemini = require_wire!("gemini");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .and(body_partial_json(json!({"contents": [{"role": "user", "parts": [
            {"inlineData": {"mimeType": "audio/wav", "data": agent_core::encode_base64(agent_testing::media::WAV)}},
            {"text": "What is said in this recording?"}
        ]}]})))
        .respond_with(ResponseTemplate::new(200).set_body_raw(ok_body(&gemini), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let audio = agent_testing::canonical::multimodal_conversation("audio_in_user_message").unwrap();
    let reply = client(&server)
        .complete(&audio, &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        !reply.message.content.is_empty(),
        "the recorded reply maps as any other"
    );
}
