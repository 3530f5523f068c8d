//! The runner's grounding check on the OpenAI path, against a local mock of
//! Chat Completions: an invented figure is re-asked with
//! `tool_choice: "required"` on the wire, and the user gets the answer made
//! from the tool's result.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{GroundingAction, GroundingFault, ToolOutput};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use agent_runner::{Agent, Grounding};
use agent_testing::{TestTool, TestTools, ToolBehaviour};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Chat Completions replies, one per request, in order.
struct Replies {
    bodies: Vec<Value>,
    next: AtomicUsize,
}

impl Respond for Replies {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        match self.bodies.get(index) {
            Some(body) => ResponseTemplate::new(200).set_body_json(body),
            None => ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "no more replies"}})),
        }
    }
}

fn completion(message: &Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-grounding",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    })
}

fn text(content: &str) -> Value {
    completion(&json!({"role": "assistant", "content": content}), "stop")
}

fn weather_call() -> Value {
    completion(
        &json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": "call_weather",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}
            }]
        }),
        "tool_calls",
    )
}

#[tokio::test]
async fn an_invented_figure_is_re_asked_with_a_required_call_over_the_wire() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Replies {
            bodies: vec![
                text("Paris is 22 °C right now."),
                weather_call(),
                text("Paris has 18.4 °C and light rain."),
            ],
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    let mut config = OpenAiConfig::openai("gpt-4o-mini").with_api_key("sk-test-grounding");
    config.base_url = Some(format!("{}/v1", server.uri()));
    let client = OpenAiClient::new(config).unwrap_or_else(|error| panic!("{error}"));
    let registry = agent_tools::ToolBox::new();
    let weather = TestTool::new(
        "get_weather",
        ToolBehaviour::Reply(ToolOutput::Json(
            json!({"city": "Paris", "temperature_c": 18.4, "summary": "Paris: 18.4 °C, light rain"}),
        )),
    );
    registry
        .register(Arc::new(TestTools::new("travel").with(weather)), true)
        .unwrap_or_else(|error| panic!("{error}"));
    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You answer travel questions.")
        .tools(Arc::new(registry))
        .grounding(Grounding::On)
        .build();

    let result = agent
        .run("How warm is it in Paris?")
        .await
        .unwrap_or_else(|error| panic!("{error}"));

    assert_eq!(result.response, "Paris has 18.4 °C and light rain.");
    let grounding = result.grounding.unwrap_or_default();
    assert_eq!(grounding.ungrounded, ["22 °C"]);
    assert_eq!(grounding.faults, [GroundingFault::UngroundedFigures]);
    assert_eq!(grounding.actions, [GroundingAction::ReaskedForCall]);

    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap_or_default())
        .collect();
    assert_eq!(bodies.len(), 3);
    assert_ne!(bodies[0]["tool_choice"], "required");
    assert_eq!(bodies[1]["tool_choice"], "required", "the re-ask requires a call");
    assert!(
        !bodies[1]["messages"].to_string().contains("22 °C"),
        "the invented answer is not sent back: {}",
        bodies[1]["messages"]
    );
    assert_ne!(bodies[2]["tool_choice"], "required");
}
