//! `[scenes]` end to end: the real `agentry` binary against a scripted
//! OpenAI-compatible mock server. A demo-style prompt is routed (the model
//! names the scene loosely) to the weather scene, which answers with its
//! own tool only. No test touches the internet.
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use cli_support::{agentry, completion, run_cmd, stderr, stdout_json};

const CONFIG: &str = r#"
[agent]
provider = "openai"
model = "gpt-4o-mini"

[tools]
enabled = ["math", "travel"]

[scenes.weather]
description = "The current weather in a city."
system_prompt = "You report the weather. Call get_weather."
tools = ["get_weather"]

[scenes.flights]
description = "Flight prices between two cities on a date."
tools = ["get_flight_prices"]

[scenes.math]
description = "Arithmetic."
tools = ["math"]
"#;

/// The routing call (the only one with `tool_choice` required) is answered
/// with `scene`; the scene's first call asks for the weather in Tokyo, and
/// the call after the tool result answers.
async fn server(scene: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("\"tool_call_id\""))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "It is sunny in Tokyo."}),
            "stop",
            (200, 10),
        ))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("\"tool_choice\":\"required\""))
        .respond_with(completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "route_1", "type": "function", "function": {"name": scene, "arguments": "{}"}}
            ]}),
            "tool_calls",
            (50, 5),
        ))
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"location\":\"Tokyo\"}"}}
            ]}),
            "tool_calls",
            (100, 20),
        ))
        .with_priority(3)
        .mount(&server)
        .await;
    server
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn run(server: &MockServer, config: &str, extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentry.toml"), config).unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", "--base-url", &format!("{}/v1", server.uri())])
        .args(extra)
        .arg("What's the weather in Tokyo?");
    let output = run_cmd(command).await;
    drop(dir);
    output
}

#[tokio::test]
async fn a_weather_question_is_routed_to_the_weather_scene_and_answered_with_its_tool() {
    let server = server("Weather_Scene").await;
    let output = run(&server, CONFIG, &["--json"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["scene"], "weather");
    assert_eq!(json["response"], "It is sunny in Tokyo.");
    assert_eq!(json["stop_reason"], "completed");
    assert_eq!(json["iterations"], 2);
    assert_eq!(json["tool_calls"][0]["name"], "get_weather");
    assert_eq!(json["tool_calls"][0]["is_error"], false);
    // The routing call counts: 50 + 5, then the scene's 100 + 20 and 200 + 10.
    assert_eq!(json["usage"]["input_tokens"], 350);
    assert_eq!(json["usage"]["output_tokens"], 35);
    assert!(
        json["usage"]["cost_usd"].as_f64().is_some_and(|cost| cost > 0.0),
        "{json}"
    );
    let mut keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "iterations",
            "model",
            "provider",
            "response",
            "scene",
            "stop_reason",
            "tool_calls",
            "usage"
        ]
    );

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 3);
    let routing: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(tool_names(&routing), ["flights", "math", "weather"]);
    assert_eq!(routing["tool_choice"], "required");
    let scene: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(tool_names(&scene), ["get_weather"]);
    assert_eq!(scene["messages"][0]["role"], "system");
    assert_eq!(
        scene["messages"][0]["content"],
        "You report the weather. Call get_weather."
    );
}

#[tokio::test]
async fn without_a_matching_scene_or_a_default_the_run_fails_naming_the_scenes() {
    let server = server("Astrology").await;
    let output = run(&server, CONFIG, &[]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains(
            "the model chose the scene `Astrology`, which does not exist; available scenes: flights, math, weather"
        ),
        "{text}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);

    // With a default scene the same answer goes there.
    let server = self::server("Astrology").await;
    let config = CONFIG.replace(
        "[scenes.weather]",
        "[scenes]\ndefault = \"weather\"\n\n[scenes.weather]",
    );
    let output = run(&server, &config, &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "It is sunny in Tokyo.");
    assert!(stderr(&output).contains("⇢ scene weather"), "{}", stderr(&output));
}

#[tokio::test]
async fn a_scene_naming_a_tool_that_is_not_enabled_is_a_configuration_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let config = CONFIG.replace("enabled = [\"math\", \"travel\"]", "enabled = [\"math\"]");
    let output = run(&server, &config, &["--json"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("scenes.flights.tools") && text.contains("get_flight_prices"),
        "{text}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}

/// The last user message of a chat-completions body.
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|message| message["role"] == "user"))
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A streamed chat completion of `text` (server-sent events).
fn streamed_text(text: &str) -> ResponseTemplate {
    let chunk = |choices: Value, usage: Value| {
        let mut chunk = json!({"id": "chatcmpl-test", "object": "chat.completion.chunk",
                               "model": "gpt-4o-mini-2024-07-18", "choices": choices});
        if !usage.is_null() {
            chunk["usage"] = usage;
        }
        format!("data: {chunk}\n\n")
    };
    let body = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]), Value::Null),
        chunk(
            json!([]),
            json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}),
        ),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// Routing calls pick the scene from the user's words (flights for a
/// flight, else weather); a scene's call answers with the tools it was
/// offered, so the demo's output shows which scene ran each turn.
async fn demo_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(|request: &wiremock::Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            if body["tool_choice"] == "required" {
                let scene = if last_user_text(&body).to_lowercase().contains("flight") {
                    "flights"
                } else {
                    "weather"
                };
                return completion(
                    &json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": "route", "type": "function", "function": {"name": scene, "arguments": "{}"}}
                    ]}),
                    "tool_calls",
                    (40, 4),
                );
            }
            let answer = format!("Answered with [{}].", tool_names(&body).join(", "));
            if body["stream"] == true {
                return streamed_text(&answer);
            }
            completion(&json!({"role": "assistant", "content": answer}), "stop", (100, 10))
        })
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn the_travel_demo_runs_as_scenes() {
    let server = demo_server().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentry.toml"), CONFIG).unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["demo", "--base-url", &format!("{}/v1", server.uri())]);
    let output = run_cmd(command).await;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    assert!(output.status.success(), "{text}");

    let requests = server.received_requests().await.unwrap();
    let bodies: Vec<Value> = requests
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect();
    let routing: Vec<&Value> = bodies.iter().filter(|body| body["tool_choice"] == "required").collect();
    // Every one of the ten turns was routed first.
    assert_eq!(routing.len(), 10, "{text}");
    assert_eq!(bodies.len(), 20, "{text}");
    // The flight question went to the flights scene, with its tool only.
    let flight_turn = bodies
        .iter()
        .find(|body| body["tool_choice"] != "required" && last_user_text(body).contains("flight from NYC to Paris"))
        .expect("the flight turn reached a scene");
    assert_eq!(tool_names(flight_turn), ["get_flight_prices"]);
    assert!(text.contains("⇢ scene flights"), "{text}");
    assert!(text.contains("⇢ scene weather"), "{text}");
    assert!(text.contains("Answered with [get_flight_prices]."), "{text}");
    assert!(text.contains("Answered with [get_weather]."), "{text}");
}

/// Starts `agentry run --json` over `server` with [`CONFIG`], waits for
/// `requests` requests, interrupts it and returns its output.
#[cfg(unix)]
async fn interrupted_scene_run(server: &MockServer, requests: usize) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentry.toml"), CONFIG).unwrap();
    let base_url = format!("{}/v1", server.uri());
    let child = cli_support::spawn_agentry(
        dir.path(),
        &["run", "--json", "--base-url", &base_url, "What's the weather in Tokyo?"],
    );
    cli_support::wait_for_requests(server, "", requests).await;
    cli_support::interrupt(child).await
}

/// A chat completion that takes a minute.
fn slow_reply() -> ResponseTemplate {
    completion(&json!({"role": "assistant", "content": "too late"}), "stop", (1, 1))
        .set_delay(std::time::Duration::from_secs(60))
}

#[cfg(unix)]
#[tokio::test]
async fn ctrl_c_while_a_scene_runs_exits_130_and_reports_cancelled() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains("\"tool_choice\":\"required\""))
        .respond_with(completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "route_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
            ]}),
            "tool_calls",
            (50, 5),
        ))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(slow_reply())
        .with_priority(2)
        .mount(&server)
        .await;
    // The routing call, then the scene's first call, which hangs.
    let output = interrupted_scene_run(&server, 2).await;
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["stop_reason"], "cancelled");
    assert_eq!(json["scene"], "weather");
}

#[cfg(unix)]
#[tokio::test]
async fn ctrl_c_while_the_request_is_routed_exits_130() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(slow_reply())
        .mount(&server)
        .await;
    let output = interrupted_scene_run(&server, 1).await;
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert!(stderr(&output).contains("cancelled"), "{}", stderr(&output));
}

#[tokio::test]
async fn an_attached_image_is_named_to_the_router_and_sent_to_the_scene() {
    let server = server("weather").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentry.toml"), CONFIG).unwrap();
    std::fs::write(dir.path().join("sky.png"), agent_testing::media::PNG).unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", "--json", "--base-url", &format!("{}/v1", server.uri())])
        .args(["--attach", "sky.png", "What's the weather like in this picture?"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout_json(&output)["scene"], "weather");

    let requests = server.received_requests().await.unwrap();
    let bodies: Vec<Value> = requests
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect();
    // The router reads what is attached, in words; the bytes go to the scene.
    let routing = bodies[0].to_string();
    assert!(
        routing.contains("[attached: `sky.png` an image (image/png)]") && !routing.contains("image_url"),
        "{routing}"
    );
    let scene_user = bodies[1]["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "user"))
        .cloned()
        .unwrap();
    let parts = scene_user["content"].as_array().expect("content parts");
    assert!(
        parts.iter().any(|part| part["type"] == "image_url"
            && part["image_url"]["url"]
                .as_str()
                .is_some_and(|url| url.starts_with("data:image/png;base64,"))),
        "{scene_user}"
    );
}
