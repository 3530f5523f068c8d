//! HTTP behaviour particular to `AnthropicClient` against a local mock
//! server: the version and beta headers, 529 overloaded, replays of recorded
//! exchanges (two 429s, a 400), typed error events and cancelling a stream
//! mid-body. The contract every provider keeps is in `http_contract.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use agent_testing::wire::Wire;
use agent_testing::{collect_events, require_wire};
use futures::StreamExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmErrorKind, Message, StopReason, StreamEvent, Usage};
use agent_provider_anthropic::mapper::parse_response;
use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
use common::{assemble, decode_sse, sse_body};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "sk-ant-test-0123456789";

fn config(server: &MockServer) -> AnthropicConfig {
    let mut config = AnthropicConfig::new("claude-sonnet-4-5").with_api_key(KEY);
    config.base_url = format!("{}/", server.uri());
    config.http.initial_backoff_ms = 10;
    config.http.max_backoff_ms = 50;
    config
}

fn client(server: &MockServer) -> AnthropicClient {
    AnthropicClient::new(config(server)).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::user("Hello!")])
}

/// A recorded end_turn reply.
fn ok_body(anthropic: &Wire) -> Value {
    anthropic.json("sdk_recorded/python_tool_runner_tool_use_then_tool_result_weather_c__a8ac789b.json")[1]["response"]
        ["body"]
        .clone()
}

fn ok(anthropic: &Wire) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(ok_body(anthropic))
}

fn sse(body: impl Into<Vec<u8>>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.into(), "text/event-stream")
}

/// Answers with the recorded responses of a `sdk_recorded` file in order.
struct Replay {
    responses: Vec<ResponseTemplate>,
    next: AtomicUsize,
}

impl Replay {
    fn new(anthropic: &Wire, file: &str) -> Self {
        let exchanges = anthropic.json(&format!("sdk_recorded/{file}.json"));
        let responses = exchanges
            .as_array()
            .unwrap()
            .iter()
            .map(|exchange| {
                let response = &exchange["response"];
                let status = u16::try_from(response["status_code"].as_u64().unwrap()).unwrap();
                let mut template = match &response["body"] {
                    Value::String(text) => {
                        ResponseTemplate::new(status).set_body_raw(text.clone(), "text/event-stream")
                    }
                    body => ResponseTemplate::new(status).set_body_json(body),
                };
                for name in ["retry-after", "x-should-retry", "request-id"] {
                    if let Some(value) = response["headers"][name].as_str() {
                        template = template.insert_header(name, value);
                    }
                }
                template
            })
            .collect();
        Self {
            responses,
            next: AtomicUsize::new(0),
        }
    }
}

impl Respond for Replay {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let turn = self.next.fetch_add(1, Ordering::SeqCst);
        self.responses[turn.min(self.responses.len() - 1)].clone()
    }
}

#[tokio::test]
async fn a_completion_goes_to_v1_messages_with_the_key_version_and_beta_headers() {
    let anthropic = require_wire!("anthropic");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("x-team", "agents"))
        .and(header("content-type", "application/json"))
        .and(body_partial_json(
            json!({"model": "claude-sonnet-4-5", "max_tokens": 4096,
                                      "messages": [{"role": "user", "content": "Hello!"}]}),
        ))
        .respond_with(ok(&anthropic))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.beta = vec![
        "context-1m-2025-08-07".into(),
        "fine-grained-tool-streaming-2025-05-14".into(),
    ];
    config.headers.insert("x-team".into(), "agents".into());
    assert!(!format!("{config:?}").contains(KEY));
    let client = AnthropicClient::new(config).unwrap();
    assert!(!format!("{client:?}").contains(KEY));
    assert_eq!(client.provider(), "anthropic");
    assert_eq!(client.model(), "claude-sonnet-4-5");
    let caps = client.capabilities();
    assert!(caps.native_tools && caps.parallel_tool_calls && caps.streaming && caps.prompt_caching);
    let response = client.complete(&request(), &CancellationToken::new()).await.unwrap();
    assert_eq!(
        response,
        parse_response(ok_body(&anthropic).to_string().as_bytes()).unwrap()
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none(), "no bearer token");
    assert_eq!(
        received[0]
            .headers
            .get("anthropic-beta")
            .and_then(|value| value.to_str().ok()),
        Some("context-1m-2025-08-07,fine-grained-tool-streaming-2025-05-14"),
        "the betas travel joined in one header"
    );
}

#[tokio::test]
async fn a_529_overloaded_then_a_200_succeeds_on_the_second_attempt() {
    let anthropic = require_wire!("anthropic");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529).set_body_json(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok(&anthropic))
        .mount(&server)
        .await;
    let response = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.usage, Usage::new(705, 25));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_529_that_persists_is_an_overloaded_error_after_every_attempt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529).set_body_json(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
        )
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.http.max_retries = 2;
    let error = AnthropicClient::new(config)
        .unwrap()
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Overloaded);
    assert_eq!(error.status, Some(529));
    assert!(
        error
            .message
            .contains("overloaded_error: Overloaded (after 3 attempts)"),
        "{error}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn the_recorded_two_429s_then_a_200_succeed_like_the_sdk_did() {
    let anthropic = require_wire!("anthropic");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Replay::new(&anthropic, "python_two_429_rate_limit_then_200__d743d628"))
        .mount(&server)
        .await;
    let response = client(&server)
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        response.message.content.starts_with("{\"items\""),
        "{}",
        response.message.content
    );
    assert_eq!(response.usage, Usage::new(406, 50));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn the_recorded_two_429s_then_a_streamed_200_stream_like_the_sdk_did() {
    let anthropic = require_wire!("anthropic");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(Replay::new(
            &anthropic,
            "python_stream_two_429_rate_limit_then_200_sse__a8b7dbb8",
        ))
        .mount(&server)
        .await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    assert!(error.is_none(), "{error:?}");
    let recorded =
        anthropic.bytes("sdk_recorded/python_stream_two_429_rate_limit_then_200_sse__a8b7dbb8.exchange2.sse");
    assert_eq!(events, decode_sse(&[&recorded]).unwrap());
    assert_eq!(assemble(&events).unwrap().message.content, "[12345,67890]");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn the_recorded_400_is_an_invalid_request_with_the_providers_words_not_retried() {
    let anthropic = require_wire!("anthropic");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Replay::new(
            &anthropic,
            "python_error_400_tool_result_without_preceding_tool_use__f59a9391",
        ))
        .mount(&server)
        .await;
    let client = client(&server);
    // The first recorded exchange is the tool_use reply; the second the 400.
    client.complete(&request(), &CancellationToken::new()).await.unwrap();
    let error = client
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert_eq!(error.status, Some(400));
    assert!(
        error
            .message
            .contains("invalid_request_error: messages.0.content.1: unexpected `tool_use_id`"),
        "{error}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn an_error_event_after_a_200_is_a_typed_error_from_the_stream() {
    let anthropic = require_wire!("anthropic");
    let server = MockServer::start().await;
    let mut body = sse_body(&[
        json!({"type": "message_start", "message": {"id": "msg_e", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
    ]);
    body.push_str(&anthropic.text("sdk_fixtures/python_stream_error_event_overloaded.sse"));
    Mock::given(method("POST")).respond_with(sse(body)).mount(&server).await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.unwrap();
    assert_eq!(error.kind, LlmErrorKind::Overloaded);
    assert!(
        error.message.contains("overloaded_error: Overloaded"),
        "{}",
        error.message
    );
    assert_eq!(error.provider.as_deref(), Some("anthropic"));
    assert!(events.contains(&StreamEvent::TextDelta { text: "Hi".into() }));
    assert!(!events.iter().any(|event| matches!(event, StreamEvent::Stop { .. })));

    // A rate_limit_error event is a rate-limit error.
    let server = MockServer::start().await;
    let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Too many\"}}\n\n";
    Mock::given(method("POST")).respond_with(sse(body)).mount(&server).await;
    let stream = client(&server)
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(collect_events(stream).await.1.unwrap().kind, LlmErrorKind::RateLimited);
}

#[tokio::test]
async fn cancelling_a_stream_mid_body_returns_within_100_ms() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A server that sends the start of a reply, then stalls.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let head = sse_body(&[
        json!({"type": "message_start", "message": {"id": "msg_s", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Once"}}),
    ]);
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 65536];
        let _ = socket.read(&mut request).await;
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{head}\r\n",
            head.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let mut config = AnthropicConfig::new("claude-sonnet-4-5").with_api_key(KEY);
    config.base_url = format!("http://{address}");
    let client = AnthropicClient::new(config).unwrap();
    let cancel = CancellationToken::new();
    let mut stream = client.stream(&request(), &cancel).await.unwrap();
    loop {
        match stream.next().await {
            Some(Ok(StreamEvent::TextDelta { .. })) => break,
            Some(Ok(_)) => {}
            other => panic!("the stream ended before its first text: {other:?}"),
        }
    }
    let trigger = cancel.clone();
    let cancelled_at = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
        Instant::now()
    });
    let (_, error) = collect_events(stream).await;
    let latency = Instant::now().duration_since(cancelled_at.await.unwrap());
    assert_eq!(error.unwrap().kind, LlmErrorKind::Cancelled);
    assert!(
        latency < Duration::from_millis(100),
        "returned {latency:?} after the cancel"
    );
}

/// Attachments Anthropic cannot take are refused by the client before any
/// request leaves: audio, and a file over the configured limit (streamed
/// or not), each an unsupported-input error naming the provider.
#[tokio::test]
async fn audio_and_oversized_attachments_are_refused_before_sending() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.max_image_bytes = 50;
    let client = AnthropicClient::new(config).unwrap();
    let cancel = CancellationToken::new();

    let audio = agent_testing::canonical::multimodal_conversation("audio_in_user_message").unwrap();
    let error = client.complete(&audio, &cancel).await.unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert_eq!(
        error.to_string(),
        "anthropic: unsupported input: anthropic cannot take an audio file (audio/wav) in a user message: it reads \
         no audio"
    );

    let image = agent_testing::canonical::multimodal_conversation("image_in_user_message").unwrap();
    let error = client.complete(&image, &cancel).await.unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert_eq!(
        error.message,
        "the image attachment is 67 bytes; anthropic takes at most 50 bytes"
    );
    let Err(error) = client.stream(&image, &cancel).await else {
        panic!("a stream was opened for an oversized image");
    };
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);

    let received = server.received_requests().await.unwrap();
    assert!(received.is_empty(), "{} requests were sent", received.len());
}

/// A completion with an image: the body the server received carries the
/// image block (its bytes as base64) before the question, and the reply
/// maps as any other.
#[tokio::test]
async fn an_image_question_is_sent_as_an_image_block_then_the_text() {
    let anthropic = require_wire!("anthropic");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_partial_json(json!({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
        ]}]})))
        .respond_with(ok(&anthropic))
        .expect(1)
        .mount(&server)
        .await;
    let request = ChatRequest::new(vec![Message::user_with(
        "What is in this picture?",
        vec![agent_testing::media::png()],
    )]);
    let reply = client(&server)
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    let received = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&received[0].body).unwrap();
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0]["source"]["data"],
        agent_core::encode_base64(agent_testing::media::PNG)
    );
    assert_eq!(content[1], json!({"type": "text", "text": "What is in this picture?"}));
}
