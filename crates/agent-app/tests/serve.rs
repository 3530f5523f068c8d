//! `agentry serve` as a process: the configured agent (math tools, an
//! OpenAI-compatible mock model) behind the HTTP API, called with reqwest and
//! with the official OpenAI Python SDK, and stopped with SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;
use std::process::Command;

use cli_support::{Serving, completion, sse, start_serve, stop_serving};
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer};

const KEY: &str = "serve-test-key";

/// `agentry serve` on a free port over the mock model; its base URL.
fn start(dir: &Path, model: &MockServer) -> (Serving, String) {
    let config = format!(
        "[tools]\nenabled = [\"math\"]\n[serve]\napi_keys = [\"{}\"]\n",
        agent_server::hash_key(KEY)
    );
    start_serve(dir, &config, &model.uri())
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
    stop_serving(child);
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
    stop_serving(child);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_url_of_no_known_kind_is_a_configuration_error_that_hides_its_password() {
    let table = format!(
        "[serve]\napi_keys = [\"{}\"]\n[store]\nurl = \"mysql://agentry:hunter2-secret@db/app\"\n",
        agent_server::hash_key(KEY)
    );
    let (status, stderr) = serve_refusing(&table).await;
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("store.url"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_serve_table_is_a_configuration_error_naming_its_key() {
    for (table, key) in [
        ("[serve]\napi_keys = [\"sk-plain-key\"]\n", "serve.api_keys"),
        (
            &*format!(
                "[serve]\napi_keys = [\"{}\"]\nmax_body_byte = 10\n",
                agent_server::hash_key(KEY)
            ),
            "serve.max_body_byte",
        ),
        (
            &*format!(
                "[serve]\napi_keys = [\"{}\"]\nmax_runs_per_key = -1\n",
                agent_server::hash_key(KEY)
            ),
            "serve.max_runs_per_key",
        ),
    ] {
        let (status, stderr) = serve_refusing(table).await;
        assert_eq!(status, Some(2), "{table}: {stderr}");
        assert!(stderr.contains(key), "{table}: {stderr}");
    }
}

/// `agentry serve` with `agentry.toml` holding `table`, which it is
/// expected to refuse before listening: its exit status and stderr.
async fn serve_refusing(table: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentry.toml"), table).unwrap();
    let mut command = cli_support::agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test")
        .args(["serve", "--provider", "openai", "--addr", "127.0.0.1:0"]);
    let output = cli_support::run_cmd(command).await;
    (output.status.code(), cli_support::stderr(&output))
}
