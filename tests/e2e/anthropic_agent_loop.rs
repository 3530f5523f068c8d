//! End to end: the agent loop (agent-runner + agent-tools registry) driving
//! `AnthropicClient` against a scripted mock server, plain and streamed,
//! and with media: a question about an attached image, and a tool that
//! returns an image the model then describes.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{AgentEvent, RunEnd, ToolOutput, Usage, encode_base64};
use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
use agent_runner::Agent;
use agent_testing::{TestTool, TestTools, ToolBehaviour};
use agent_tools::ToolBox;
use agentry_tests::{request_bodies, scripted_server, weather_tools};
use futures::StreamExt;
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

/// The events as Anthropic frames them: `event: <type>` then `data: <json>`.
fn sse_body(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        body.push_str("event: ");
        body.push_str(event["type"].as_str().unwrap_or("message"));
        body.push_str("\ndata: ");
        body.push_str(&event.to_string());
        body.push_str("\n\n");
    }
    body
}

fn message(content: &Value, stop_reason: &str, usage: (u64, u64)) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": usage.0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": usage.1}
    }))
}

fn tool_call() -> ResponseTemplate {
    message(
        &json!([
            {"type": "thinking", "thinking": "Look it up.", "signature": "EqQBsig"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "Paris"}}
        ]),
        "tool_use",
        (120, 18),
    )
}

fn final_answer() -> ResponseTemplate {
    message(
        &json!([{"type": "text", "text": "It is 18 °C and cloudy in Paris."}]),
        "end_turn",
        (160, 12),
    )
}

fn agent(server: &MockServer) -> (Agent, Arc<AtomicUsize>) {
    let (registry, runs) = weather_tools();
    let mut config = AnthropicConfig::new("claude-sonnet-4-5").with_api_key("sk-ant-test");
    config.base_url = server.uri();
    let client = AnthropicClient::new(config).unwrap();
    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You are a travel assistant.")
        .tools(registry)
        .prompt_caching(true)
        .build();
    (agent, runs)
}

/// What both runs must have sent on the second request: the thinking block
/// back first and unchanged, then the text and the call, then the result in
/// a user message carrying the cache breakpoint.
fn assert_second_request(body: &Value) {
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Look it up.", "signature": "EqQBsig"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "Paris"}}
        ]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_w1",
             "content": r#"{"city":"Paris","temp_c":18,"sky":"cloudy"}"#, "cache_control": {"type": "ephemeral"}}
        ]})
    );
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(body["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(body["system"][0]["text"], "You are a travel assistant.");
}

#[tokio::test]
async fn a_tool_call_then_a_final_answer() {
    let server = scripted_server(vec![tool_call(), final_answer()]).await;
    let (agent, runs) = agent(&server);
    let result = agent.run("What's the weather in Paris?").await.unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "It is 18 °C and cloudy in Paris.");
    assert_eq!(result.iterations, 2);
    assert_eq!(result.provider, "anthropic");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let call = &result.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("toolu_w1", "get_weather"));
    assert_eq!(call.arguments, json!({"city": "Paris"}));
    assert!(!call.is_error);
    assert_eq!(result.usage, Usage::new(280, 30));

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tool_choice"], json!({"type": "auto"}));
    assert_eq!(
        bodies[0]["messages"][0]["content"][0]["text"],
        "What's the weather in Paris?"
    );
    assert_second_request(&bodies[1]);
}

#[tokio::test]
async fn the_same_run_streamed() {
    let first = sse_body(&[
        json!({"type": "message_start", "message": {"id": "msg_s1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 120, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Look it up."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBsig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Let me check."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"city\":"}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": " \"Paris\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 18}}),
        json!({"type": "message_stop"}),
    ]);
    let second = sse_body(&[
        json!({"type": "message_start", "message": {"id": "msg_s2", "model": "claude-sonnet-4-5-20250929",
            "usage": {"input_tokens": 160, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "It is 18 °C "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "and cloudy in Paris."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 12}}),
        json!({"type": "message_stop"}),
    ]);
    let sse = |body: String| ResponseTemplate::new(200).set_body_raw(body, "text/event-stream");
    let server = scripted_server(vec![sse(first), sse(second)]).await;
    let (agent, runs) = agent(&server);
    let events: Vec<AgentEvent> = agent.run("What's the weather in Paris?").stream().collect().await;
    let text: String = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.ends_with("It is 18 °C and cloudy in Paris."), "{text}");
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("the stream ends with RunFinished: {events:?}");
    };
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "It is 18 °C and cloudy in Paris.");
    assert_eq!(result.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(result.usage, Usage::new(280, 30), "usage is the same streamed or not");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[1]["stream"], true);
    assert_second_request(&bodies[1]);
}

fn png_block() -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
           "data": encode_base64(agent_testing::media::PNG)}})
}

#[tokio::test]
async fn a_question_about_an_attached_image() {
    let server = scripted_server(vec![message(
        &json!([{"type": "text", "text": "A single transparent pixel."}]),
        "end_turn",
        (90, 8),
    )])
    .await;
    let (agent, runs) = agent(&server);
    let result = agent
        .run("What is in this picture?")
        .attach([agent_testing::media::png()])
        .await
        .unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "A single transparent pixel.");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        bodies[0]["messages"],
        json!([{"role": "user", "content": [
            png_block(),
            {"type": "text", "text": "What is in this picture?", "cache_control": {"type": "ephemeral"}}
        ]}]),
        "the image first, then the question carrying the cache breakpoint"
    );
}

#[tokio::test]
async fn a_tool_returns_an_image_that_the_model_then_describes() {
    let chart = TestTool::new(
        "render_chart",
        ToolBehaviour::Reply(ToolOutput::Media {
            text: "Rendered the sales chart (1 image).".into(),
            attachments: vec![agent_testing::media::png()],
        }),
    );
    let renders = chart.call_counter();
    let registry = ToolBox::new();
    registry
        .register(Arc::new(TestTools::new("charts").with(chart)), true)
        .unwrap();
    let server = scripted_server(vec![
        message(
            &json!([{"type": "tool_use", "id": "toolu_c1", "name": "render_chart", "input": {"metric": "sales"}}]),
            "tool_use",
            (100, 20),
        ),
        message(
            &json!([{"type": "text", "text": "The chart is a single transparent pixel."}]),
            "end_turn",
            (180, 10),
        ),
    ])
    .await;
    let mut config = AnthropicConfig::new("claude-sonnet-4-5").with_api_key("sk-ant-test");
    config.base_url = server.uri();
    let agent = Agent::builder(Arc::new(AnthropicClient::new(config).unwrap()))
        .tools(Arc::new(registry))
        .prompt_caching(true)
        .build();
    let result = agent.run("Show me the sales chart and describe it.").await.unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "The chart is a single transparent pixel.");
    assert_eq!(renders.load(Ordering::SeqCst), 1);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        bodies[1]["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_c1", "content": [
            {"type": "text", "text": "Rendered the sales chart (1 image)."},
            png_block()
        ], "cache_control": {"type": "ephemeral"}}]}),
        "the image inside the tool result, the breakpoint on the result"
    );
}
