//! End to end: the agent loop (agent-runner + agent-tools registry) driving
//! `OllamaClient` against a scripted mock server, plain and streamed.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{AgentEvent, AgentRunResult, RunEnd, ToolOutput};
use agent_provider_ollama::{OllamaClient, OllamaConfig};
use agent_runner::Agent;
use agent_testing::{TestTool, TestTools, ToolBehaviour, media};
use agent_tools::ToolBox;
use agentry_tests::{request_bodies, weather_tools};
use futures::StreamExt;
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::method};

/// Answers with the scripted replies in order, as NDJSON when the request
/// asks for a stream.
struct Script {
    bodies: Vec<Value>,
    next: AtomicUsize,
}

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let turn = self.next.fetch_add(1, Ordering::SeqCst);
        let reply = &self.bodies[turn.min(self.bodies.len() - 1)];
        let streamed = serde_json::from_slice::<Value>(&request.body).unwrap()["stream"] == true;
        if streamed {
            // The same reply as NDJSON: content and calls first, then the done line.
            let mut first = reply.clone();
            first["done"] = json!(false);
            for key in ["done_reason", "prompt_eval_count", "eval_count"] {
                first.as_object_mut().unwrap().remove(key);
            }
            let mut last = reply.clone();
            last["message"] = json!({"role": "assistant", "content": ""});
            let body = format!("{first}\n{last}\n");
            ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson")
        } else {
            ResponseTemplate::new(200).set_body_json(reply)
        }
    }
}

fn tool_call_reply() -> Value {
    json!({
        "model": "llama3.2", "created_at": "2025-07-07T20:32:53.8Z",
        "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ]},
        "done_reason": "stop", "done": true, "prompt_eval_count": 120, "eval_count": 18
    })
}

fn answer_reply() -> Value {
    json!({
        "model": "llama3.2", "created_at": "2025-07-07T20:32:54.9Z",
        "message": {"role": "assistant", "content": "It is 18 °C and cloudy in Paris."},
        "done_reason": "stop", "done": true, "prompt_eval_count": 160, "eval_count": 12
    })
}

/// A mock Ollama answering with `bodies` in order.
async fn server(bodies: Vec<Value>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Script {
            bodies,
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

fn client(server: &MockServer) -> Arc<OllamaClient> {
    Arc::new(OllamaClient::with_env(OllamaConfig::new("llama3.2").with_base_url(server.uri()), |_| None).unwrap())
}

async fn run(streamed: bool) {
    let server = server(vec![tool_call_reply(), answer_reply()]).await;
    let (registry, runs) = weather_tools();
    let agent = Agent::builder(client(&server))
        .system_prompt("You are a weather assistant.")
        .tools(registry)
        .build();
    let prompt = "What's the weather in Paris?";
    let result: AgentRunResult = if streamed {
        let events: Vec<AgentEvent> = agent.run(prompt).stream().collect().await;
        let text: String = events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            text, "It is 18 °C and cloudy in Paris.",
            "the answer arrives as text deltas"
        );
        let Some(AgentEvent::RunFinished { result }) = events.last() else {
            panic!("the stream ends with RunFinished: {events:?}");
        };
        (**result).clone()
    } else {
        agent.run(prompt).await.unwrap()
    };

    assert_eq!(result.stop_reason, RunEnd::Completed, "streamed: {streamed}");
    assert_eq!(result.response, "It is 18 °C and cloudy in Paris.");
    assert_eq!(result.provider, "ollama");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(result.tool_calls[0].name, "get_weather");
    assert!(!result.tool_calls[0].is_error);
    assert_eq!(result.usage.input_tokens, 280);
    assert_eq!(result.usage.output_tokens, 30);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(second["stream"], streamed);
    let messages = second["messages"].as_array().unwrap();
    let call = &messages[2];
    assert_eq!(call["tool_calls"][0]["function"]["arguments"], json!({"city": "Paris"}));
    let tool = &messages[3];
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_name"], "get_weather");
    assert!(tool["content"].as_str().unwrap().contains("\"temp_c\":18"), "{tool}");
}

#[tokio::test]
async fn the_agent_calls_the_tool_and_answers() {
    run(false).await;
}

#[tokio::test]
async fn the_streamed_agent_calls_the_tool_and_answers() {
    run(true).await;
}

fn text_reply(text: &str) -> Value {
    json!({
        "model": "llama3.2", "created_at": "2025-07-07T20:33:00.0Z",
        "message": {"role": "assistant", "content": text},
        "done_reason": "stop", "done": true, "prompt_eval_count": 90, "eval_count": 6
    })
}

#[tokio::test]
async fn a_question_about_an_attached_image() {
    let server = server(vec![text_reply("A single transparent pixel.")]).await;
    let agent = Agent::builder(client(&server)).build();
    let result = agent
        .run("What is in this picture?")
        .attach([media::png()])
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "A single transparent pixel.");
    let bodies = request_bodies(&server).await;
    assert_eq!(
        bodies[0]["messages"],
        json!([
            {"role": "user", "content": "What is in this picture?", "images": [agent_core::encode_base64(media::PNG)]}
        ])
    );
}

#[tokio::test]
async fn a_tool_returns_an_image_which_the_model_then_describes() {
    let chart_call = json!({
        "model": "llama3.2", "created_at": "2025-07-07T20:33:01.0Z",
        "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "render_chart", "arguments": {}}}
        ]},
        "done_reason": "stop", "done": true, "prompt_eval_count": 80, "eval_count": 10
    });
    let server = server(vec![chart_call, text_reply("The chart is a single transparent pixel.")]).await;
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

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap(),
        &json!({
            "role": "tool",
            "content": "Rendered the sales chart.",
            "images": [agent_core::encode_base64(media::PNG)],
            "tool_name": "render_chart"
        }),
        "the tool message carries its image"
    );
}
