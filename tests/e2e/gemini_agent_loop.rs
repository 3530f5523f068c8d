//! End to end: the agent loop (agent-runner + agent-tools registry) driving
//! `GeminiClient` against a scripted mock server, plain and streamed: a
//! signed function call without id, the tool result, the final answer; and
//! with media: a question about an attached image, and a tool that returns
//! an image the model then describes.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{AgentEvent, RunEnd, ToolOutput, encode_base64};
use agent_provider_gemini::{GeminiClient, GeminiConfig};
use agent_runner::Agent;
use agent_testing::{TestTool, TestTools, ToolBehaviour};
use agent_tools::ToolBox;
use agentry_tests::{scripted_server, weather_tools};
use futures::StreamExt;
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

fn chunk(parts: &Value, finish: Option<&str>, usage: (u64, u64), response_id: &str) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": usage.0, "candidatesTokenCount": usage.1,
                          "totalTokenCount": usage.0 + usage.1},
        "modelVersion": "gemini-2.5-flash",
        "responseId": response_id
    })
}

fn call_parts() -> Value {
    json!([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "SIG_W1"}])
}

fn tool_call() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(chunk(&call_parts(), Some("STOP"), (120, 18), "resp-w1"))
}

fn final_answer() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(chunk(
        &json!([{"text": "It is 18 °C and cloudy in Paris."}]),
        Some("STOP"),
        (160, 12),
        "resp-w2",
    ))
}

fn agent(server: &MockServer) -> (Agent, Arc<AtomicUsize>) {
    let (registry, runs) = weather_tools();
    let config = GeminiConfig::new("gemini-2.5-flash")
        .with_api_key("AIza-test")
        .with_base_url(server.uri());
    let client = GeminiClient::new(config).unwrap();
    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You are a travel assistant.")
        .tools(registry)
        .build();
    (agent, runs)
}

async fn requests(server: &MockServer) -> Vec<(String, Value)> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| (request.url.to_string(), serde_json::from_slice(&request.body).unwrap()))
        .collect()
}

/// The second request carries the model's call back (no made-up id, the
/// signature on its part) and the result as a function response.
fn assert_tool_round_went_back(body: &Value) {
    let contents = body["contents"].as_array().unwrap();
    let n = contents.len();
    assert_eq!(
        contents[n - 2],
        json!({"role": "model", "parts": call_parts()}),
        "the call goes back as Gemini sent it"
    );
    assert_eq!(
        contents[n - 1],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
            "response": {"city": "Paris", "temp_c": 18, "sky": "cloudy"}}}]})
    );
}

#[tokio::test]
async fn a_tool_call_then_a_final_answer() {
    let server = scripted_server(vec![tool_call(), final_answer()]).await;
    let (agent, runs) = agent(&server);
    let result = agent.run("What's the weather in Paris?").await.unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "It is 18 °C and cloudy in Paris.");
    assert_eq!(result.iterations, 2);
    assert_eq!(result.provider, "gcp.gemini");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let call = &result.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("gemini_synth_resp-w1_0", "get_weather")
    );
    assert_eq!(call.arguments, json!({"city": "Paris"}));
    assert!(!call.is_error);
    assert_eq!(result.usage.input_tokens, 280);
    assert_eq!(result.usage.output_tokens, 30);

    let requests = requests(&server).await;
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0]
            .0
            .ends_with("/v1beta/models/gemini-2.5-flash:generateContent")
    );
    let first = &requests[0].1;
    assert_eq!(
        first["systemInstruction"],
        json!({"parts": [{"text": "You are a travel assistant."}]})
    );
    assert_eq!(first["tools"][0]["functionDeclarations"][0]["name"], "get_weather");
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["city"],
        json!({"type": "STRING", "description": "City name."})
    );
    assert_tool_round_went_back(&requests[1].1);
}

fn sse_body(chunks: &[Value]) -> ResponseTemplate {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\r\n\r\n");
    }
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

#[tokio::test]
async fn the_same_run_streamed() {
    let first = sse_body(&[chunk(&call_parts(), Some("STOP"), (120, 18), "resp-w1")]);
    let second = sse_body(&[
        chunk(&json!([{"text": "It is 18 °C "}]), None, (160, 0), "resp-w2"),
        chunk(
            &json!([{"text": "and cloudy in Paris."}]),
            Some("STOP"),
            (160, 12),
            "resp-w2",
        ),
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
    assert_eq!(result.tool_calls[0].id, "gemini_synth_resp-w1_0");
    assert_eq!(result.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(result.usage.input_tokens, 280, "usage is the same streamed or not");
    assert_eq!(result.usage.output_tokens, 30);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let requests = requests(&server).await;
    assert!(
        requests[1]
            .0
            .ends_with("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    );
    assert_tool_round_went_back(&requests[1].1);
}

fn png_part() -> Value {
    json!({"inlineData": {"mimeType": "image/png", "data": encode_base64(agent_testing::media::PNG)}})
}

fn answer(text: &str, response_id: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(chunk(&json!([{"text": text}]), Some("STOP"), (90, 8), response_id))
}

#[tokio::test]
async fn a_question_about_an_attached_image() {
    let server = scripted_server(vec![answer("A single transparent pixel.", "resp-i1")]).await;
    let (agent, runs) = agent(&server);
    let result = agent
        .run("What is in this picture?")
        .attach([agent_testing::media::png()])
        .await
        .unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "A single transparent pixel.");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let requests = requests(&server).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].1["contents"],
        json!([{"role": "user", "parts": [png_part(), {"text": "What is in this picture?"}]}]),
        "the image first, then the question"
    );
}

/// A tool returns a chart image and the model describes it: on Gemini 2.5
/// the image follows the function response in the same user content; on
/// Gemini 3 it goes inside the function response.
#[tokio::test]
async fn a_tool_returns_an_image_that_the_model_then_describes() {
    for model in ["gemini-2.5-flash", "gemini-3-flash-preview"] {
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
        let call = json!([{"functionCall": {"name": "render_chart", "args": {"metric": "sales"}},
                           "thoughtSignature": "SIG_C1"}]);
        let server = scripted_server(vec![
            ResponseTemplate::new(200).set_body_json(chunk(&call, Some("STOP"), (100, 20), "resp-c1")),
            answer("The chart is a single transparent pixel.", "resp-c2"),
        ])
        .await;
        let config = GeminiConfig::new(model)
            .with_api_key("AIza-test")
            .with_base_url(server.uri());
        let agent = Agent::builder(Arc::new(GeminiClient::new(config).unwrap()))
            .tools(Arc::new(registry))
            .build();
        let result = agent.run("Show me the sales chart and describe it.").await.unwrap();

        assert_eq!(result.stop_reason, RunEnd::Completed, "{model}");
        assert_eq!(result.response, "The chart is a single transparent pixel.");
        assert_eq!(renders.load(Ordering::SeqCst), 1);
        let requests = requests(&server).await;
        assert_eq!(requests.len(), 2);
        assert!(
            requests[1].0.contains(&format!("/models/{model}:")),
            "{}",
            requests[1].0
        );
        let response = json!({"name": "render_chart", "response": {"result": "Rendered the sales chart (1 image)."}});
        let expected = if model.starts_with("gemini-3") {
            let mut inside = response;
            inside["parts"] = json!([png_part()]);
            json!({"role": "user", "parts": [{"functionResponse": inside}]})
        } else {
            json!({"role": "user", "parts": [{"functionResponse": response}, png_part()]})
        };
        assert_eq!(requests[1].1["contents"][2], expected, "{model}");
    }
}
