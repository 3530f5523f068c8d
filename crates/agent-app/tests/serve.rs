//! `agentry serve` as a process: the configured agent (math tools, an
//! OpenAI-compatible mock model) behind the HTTP API, called with reqwest and
//! with the official OpenAI Python SDK, and stopped with SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use cli_support::completion;
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "serve-test-key";

/// `agentry serve` on a free port over the mock model; its base URL.
fn start(dir: &Path, model: &MockServer) -> (Serving, String) {
    std::fs::write(
        dir.join("agentry.toml"),
        format!(
            "[tools]\nenabled = [\"math\"]\n[serve]\napi_keys = [\"{}\"]\n",
            agent_server::hash_key(KEY)
        ),
    )
    .unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .env_clear()
        .env("AGENTRY_HOME", dir.join("home"))
        .env("OPENAI_API_KEY", "sk-test")
        .current_dir(dir)
        .args(["serve", "--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", model.uri()))
        .args(["--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("agentry serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    (Serving(Some(child)), base)
}

/// An SSE body of OpenAI chunks: `delta`, then the finish reason with usage.
fn sse(delta: &Value, finish_reason: &str, usage: (u64, u64)) -> ResponseTemplate {
    let chunk = |choices: Value, usage: Value| json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": choices, "usage": usage});
    let chunks = [
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": finish_reason}]),
            Value::Null,
        ),
        chunk(
            json!([]),
            json!({"prompt_tokens": usage.0, "completion_tokens": usage.1, "total_tokens": usage.0 + usage.1}),
        ),
    ];
    let mut body = String::new();
    for chunk in chunks {
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// A model that asks for the calculator, then answers once the result is
/// in the request; streamed when the request asks for a stream.
async fn model() -> MockServer {
    let server = MockServer::start().await;
    let call = json!([{"id": "call_1", "type": "function",
                       "function": {"name": "calculator", "arguments": "{\"expression\": \"6 * 7\"}"}}]);
    let streamed_call = json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "calculator", "arguments": "{\"expression\": \"6 * 7\"}"}}]});
    let answered = || body_string_contains("\"tool_call_id\"");
    let streamed = || body_string_contains("\"stream\":true");
    let post = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
    post()
        .and(answered())
        .and(streamed())
        .respond_with(sse(&json!({"content": "6 * 7 = 42."}), "stop", (70, 8)))
        .with_priority(1)
        .mount(&server)
        .await;
    post()
        .and(answered())
        .respond_with(completion(
            &json!({"role": "assistant", "content": "6 * 7 = 42."}),
            "stop",
            (70, 8),
        ))
        .with_priority(2)
        .mount(&server)
        .await;
    post()
        .and(streamed())
        .respond_with(sse(&streamed_call, "tool_calls", (50, 10)))
        .with_priority(3)
        .mount(&server)
        .await;
    post()
        .respond_with(completion(
            &json!({"role": "assistant", "content": null, "tool_calls": call}),
            "tool_calls",
            (50, 10),
        ))
        .with_priority(4)
        .mount(&server)
        .await;
    server
}

/// Kills the server if a test fails before stopping it (it would otherwise
/// hold the test's output open).
struct Serving(Option<Child>);

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn stop(mut serving: Serving) {
    let Some(mut child) = serving.0.take() else { return };
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "agentry serve exits cleanly on SIGTERM");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_over_http_answers_with_the_run_json_object_and_needs_a_key() {
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = start(dir.path(), &model);
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{base}/v1/runs"))
        .bearer_auth(KEY)
        .json(&json!({"prompt": "What is 6 * 7?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let run: Value = response.json().await.unwrap();
    assert_eq!(run["response"], "6 * 7 = 42.");
    assert_eq!(run["stop_reason"], "completed");
    assert_eq!(run["iterations"], 2);
    assert_eq!(run["tool_calls"][0]["name"], "calculator");
    assert_eq!(run["provider"], "openai");
    assert_eq!(run["usage"]["total_tokens"], 138);
    let keys: Vec<&str> = run.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "response",
            "stop_reason",
            "iterations",
            "tool_calls",
            "usage",
            "provider",
            "model"
        ]
    );

    let refused = http
        .post(format!("{base}/v1/runs"))
        .bearer_auth("not-the-key")
        .json(&json!({"prompt": "What is 6 * 7?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    stop(child);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_python_sdk_talks_to_the_agent_plain_and_streaming() {
    let Some(deps) = agent_testing::mcp_deps::deps("the_openai_python_sdk_talks_to_the_agent_plain_and_streaming")
    else {
        return;
    };
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = start(dir.path(), &model);
    let script = r#"
import sys
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2])
plain = client.chat.completions.create(model="agentry", messages=[{"role": "user", "content": "What is 6 * 7?"}])
print("plain:", plain.choices[0].message.content, plain.choices[0].finish_reason, plain.usage.total_tokens)
stream = client.chat.completions.create(
    model="agentry", messages=[{"role": "user", "content": "What is 6 * 7?"}], stream=True,
    stream_options={"include_usage": True})
text, finish, total = "", None, None
for chunk in stream:
    if chunk.choices:
        text += chunk.choices[0].delta.content or ""
        finish = chunk.choices[0].finish_reason or finish
    if chunk.usage:
        total = chunk.usage.total_tokens
print("stream:", text, finish, total)
try:
    OpenAI(base_url=sys.argv[1] + "/v1", api_key="wrong").chat.completions.create(
        model="agentry", messages=[{"role": "user", "content": "x"}])
except Exception as error:
    print("wrong key:", type(error).__name__)
"#;
    let python = deps.python.clone();
    let base_url = base.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .args(["-c", script, &base_url, KEY])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "plain: 6 * 7 = 42. stop 138",
            "stream: 6 * 7 = 42. stop 138",
            "wrong key: AuthenticationError"
        ]
    );
    stop(child);
}
