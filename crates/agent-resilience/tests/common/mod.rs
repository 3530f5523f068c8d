//! Clients of real providers against wiremock servers, and the replies the
//! servers give, for the fallback, breaker and limiter tests.
#![allow(dead_code, clippy::unwrap_used, clippy::format_collect)]

use std::sync::Arc;

use agent_core::{CancellationToken, ChatRequest, ChatResponse, LlmClient, LlmError, Message, StreamAccumulator};
use agent_http::HttpConfig;
use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use futures::StreamExt;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// No retries inside the client: each failure reaches the decorator under test.
fn http() -> HttpConfig {
    HttpConfig {
        max_retries: 0,
        ..HttpConfig::default()
    }
}

/// An OpenAI client of `server`.
pub fn openai(server: &MockServer) -> Arc<dyn LlmClient> {
    let mut config = OpenAiConfig::openai("gpt-4o-mini").with_api_key("sk-resilience-test");
    config.base_url = Some(format!("{}/v1", server.uri()));
    config.http = http();
    Arc::new(OpenAiClient::new(config).unwrap())
}

/// An Anthropic client of `server`.
pub fn anthropic(server: &MockServer) -> Arc<dyn LlmClient> {
    let mut config = AnthropicConfig::new("claude-sonnet-4-5").with_api_key("sk-ant-resilience-test");
    config.base_url = server.uri();
    config.http = http();
    Arc::new(AnthropicClient::new(config).unwrap())
}

/// A request of one user message.
pub fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user(text)],
        ..ChatRequest::default()
    }
}

/// OpenAI's whole reply with `text`.
pub fn openai_answer(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    }))
}

/// OpenAI's streamed reply with `text`.
pub fn openai_stream(text: &str) -> ResponseTemplate {
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ];
    let mut body: String = chunks.iter().map(|chunk| format!("data: {chunk}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// OpenAI's error with `status`.
pub fn openai_error(status: u16) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(json!({"error": {"message": "the server is busy", "type": "server_error"}}))
}

/// Anthropic's whole reply: `content` blocks.
pub fn anthropic_message(content: &Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 4}
    }))
}

/// Anthropic's whole reply with `text`.
pub fn anthropic_answer(text: &str) -> ResponseTemplate {
    anthropic_message(&json!([{"type": "text", "text": text}]))
}

/// Anthropic's server-sent events, framed as it frames them.
pub fn anthropic_events(events: &[Value]) -> ResponseTemplate {
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("message")
            )
        })
        .collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// The opening events of an Anthropic stream, up to a text delta `text`.
pub fn anthropic_stream_head(text: &str) -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
    ]
}

/// Anthropic's "overloaded" error, as a 529 body or a stream's error event.
pub fn anthropic_overloaded() -> Value {
    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
}

/// Answers every POST to `route` with `reply`.
pub async fn answer(server: &MockServer, route: &str, reply: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path(route))
        .respond_with(reply)
        .mount(server)
        .await;
}

/// The JSON bodies `server` received.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests: Vec<Request> = server.received_requests().await.unwrap_or_default();
    requests
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap_or(Value::Null))
        .collect()
}

/// `client.stream(request)`, its events assembled; the text seen before an
/// error is kept with it.
pub async fn streamed(client: &dyn LlmClient, request: &ChatRequest) -> Result<ChatResponse, (String, LlmError)> {
    let mut events = client
        .stream(request, &CancellationToken::new())
        .await
        .map_err(|error| (String::new(), error))?;
    let mut accumulator = StreamAccumulator::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => accumulator.push(event).map_err(|error| (String::new(), error))?,
            Err(error) => return Err((accumulator.text().to_owned(), error)),
        }
    }
    accumulator.finish().map_err(|error| (String::new(), error))
}
