//! End to end: the agent loop (agent-runner + agent-tools registry) driving
//! `OpenAiClient` against a scripted mock server.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{AgentEvent, RunEnd, ToolOutput};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use agent_runner::Agent;
use agent_testing::{TestTool, TestTools, ToolBehaviour, media};
use agent_tools::ToolBox;
use agentry_tests::{request_bodies, scripted_server, weather_tools};
use futures::StreamExt;
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

fn completion(message: &Value, finish_reason: &str, usage: (u64, u64)) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1, "total_tokens": usage.0 + usage.1,
                  "prompt_tokens_details": {"cached_tokens": 0}}
    }))
}

fn tool_call(arguments: &str) -> ResponseTemplate {
    completion(
        &json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
        ]}),
        "tool_calls",
        (120, 18),
    )
}

fn final_answer() -> ResponseTemplate {
    completion(
        &json!({"role": "assistant", "content": "It is 18 °C and cloudy in Paris."}),
        "stop",
        (160, 12),
    )
}

fn client(server: &MockServer) -> Arc<OpenAiClient> {
    let mut config = OpenAiConfig::openai("gpt-4o-mini").with_api_key("sk-test");
    config.base_url = Some(format!("{}/v1", server.uri()));
    Arc::new(OpenAiClient::new(config).unwrap())
}

fn agent(server: &MockServer) -> (Agent, Arc<AtomicUsize>) {
    let (registry, runs) = weather_tools();
    let agent = Agent::builder(client(server))
        .system_prompt("You are a travel assistant.")
        .tools(registry)
        .build();
    (agent, runs)
}

#[tokio::test]
async fn a_tool_call_then_a_final_answer() {
    let server = scripted_server(vec![tool_call(r#"{"city":"Paris"}"#), final_answer()]).await;
    let (agent, runs) = agent(&server);
    let result = agent.run("What's the weather in Paris?").await.unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "It is 18 °C and cloudy in Paris.");
    assert_eq!(result.iterations, 2);
    assert_eq!(result.provider, "openai");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(result.tool_calls.len(), 1);
    let call = &result.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_w1", "get_weather"));
    assert_eq!(call.arguments, json!({"city": "Paris"}));
    assert_eq!(call.result, r#"{"city":"Paris","temp_c":18,"sky":"cloudy"}"#);
    assert!(!call.is_error);
    assert_eq!(result.usage.input_tokens, 280);
    assert_eq!(result.usage.output_tokens, 30);

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(bodies[0]["tool_choice"], "auto");
    assert_eq!(
        bodies[0]["messages"][0],
        json!({"role": "system", "content": "You are a travel assistant."})
    );
    let messages = bodies[1]["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["tool_calls"][0]["id"], "call_w1");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Paris"}"#
    );
    assert_eq!(
        messages[messages.len() - 1],
        json!({"role": "tool", "tool_call_id": "call_w1", "content": r#"{"city":"Paris","temp_c":18,"sky":"cloudy"}"#})
    );
}

#[tokio::test]
async fn malformed_arguments_are_reported_to_the_model_not_run() {
    let server = scripted_server(vec![tool_call(r#"{"city": Paris}"#), final_answer()]).await;
    let (agent, runs) = agent(&server);
    let result = agent.run("What's the weather in Paris?").await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the tool never runs on unparseable arguments"
    );
    assert!(result.tool_calls[0].is_error);

    let bodies = request_bodies(&server).await;
    let messages = bodies[1]["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"], r#"{"city": Paris}"#,
        "the model's own text goes back unchanged"
    );
    let tool = &messages[messages.len() - 1];
    assert_eq!(tool["tool_call_id"], "call_w1");
    let content = tool["content"].as_str().unwrap();
    assert!(content.starts_with("Error: "), "{content}");
}

fn sse_body(chunks: &[Value]) -> ResponseTemplate {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn usage_chunk(input: u64, output: u64) -> Value {
    json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [],
           "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}})
}

#[tokio::test]
async fn the_same_run_streamed() {
    let first = sse_body(&[
        chunk(&json!({"role": "assistant", "content": null}), None),
        chunk(
            &json!({"tool_calls": [{"index": 0, "id": "call_w1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
        usage_chunk(120, 18),
    ]);
    let second = sse_body(&[
        chunk(&json!({"role": "assistant", "content": ""}), None),
        chunk(&json!({"content": "It is 18 °C "}), None),
        chunk(&json!({"content": "and cloudy in Paris."}), None),
        chunk(&json!({}), Some("stop")),
        usage_chunk(160, 12),
    ]);
    let server = scripted_server(vec![first, second]).await;
    let (agent, runs) = agent(&server);
    let events: Vec<AgentEvent> = agent.run("What's the weather in Paris?").stream().collect().await;
    let text: String = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "It is 18 °C and cloudy in Paris.");
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("the stream ends with RunFinished: {events:?}");
    };
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "It is 18 °C and cloudy in Paris.");
    assert_eq!(result.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(result.usage.input_tokens, 280, "usage is the same streamed or not");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies[1]["stream"], true);
    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(messages[messages.len() - 1]["tool_call_id"], "call_w1");
}

/// The data URL of the test PNG, as the request carries it.
fn png_data_url() -> String {
    format!("data:image/png;base64,{}", agent_core::encode_base64(media::PNG))
}

#[tokio::test]
async fn a_question_about_an_attached_image() {
    let server = scripted_server(vec![completion(
        &json!({"role": "assistant", "content": "A single transparent pixel."}),
        "stop",
        (90, 6),
    )])
    .await;
    let agent = Agent::builder(client(&server)).build();
    let result = agent
        .run("What is in this picture?")
        .attach([media::png()])
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "A single transparent pixel.");

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        bodies[0]["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": png_data_url()}}
            ]}
        ])
    );
}

#[tokio::test]
async fn a_tool_returns_an_image_which_the_model_then_describes() {
    let chart_call = completion(
        &json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_chart", "type": "function", "function": {"name": "render_chart", "arguments": "{}"}}
        ]}),
        "tool_calls",
        (80, 10),
    );
    let description = completion(
        &json!({"role": "assistant", "content": "The chart is a single transparent pixel."}),
        "stop",
        (150, 9),
    );
    let server = scripted_server(vec![chart_call, description]).await;
    let chart = TestTool::new(
        "render_chart",
        ToolBehaviour::Reply(ToolOutput::Media {
            text: "Rendered the sales chart.".into(),
            attachments: vec![media::png()],
        }),
    );
    let registry = ToolBox::new();
    registry
        .register(Arc::new(TestTools::new("charts").with(chart)), true)
        .unwrap();
    let agent = Agent::builder(client(&server)).tools(Arc::new(registry)).build();
    let result = agent.run("Show me the sales chart and describe it.").await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "The chart is a single transparent pixel.");
    assert_eq!(result.tool_calls[0].result, "Rendered the sales chart.");

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let messages = bodies[1]["messages"].as_array().unwrap();
    let tail = &messages[messages.len() - 2..];
    assert_eq!(
        tail,
        [
            json!({"role": "tool", "tool_call_id": "call_chart", "content": "Rendered the sales chart."}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "The result of the tool call call_chart (render_chart) came with these files:"},
                {"type": "image_url", "image_url": {"url": png_data_url()}}
            ]}),
        ],
        "the tool message takes text; its image follows in a user message"
    );
}
