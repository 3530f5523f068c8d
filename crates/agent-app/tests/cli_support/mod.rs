//! Shared by the tests that run the `agentry` binary against local mock
//! servers. Each test binary uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;
use serde_json::{Value, json};
use wiremock::ResponseTemplate;

/// The binary with an empty environment, run in `dir`, with `$AGENTRY_HOME` inside it.
pub fn agentry(dir: &Path) -> Command {
    let mut command = Command::cargo_bin("agentry").expect("the agentry binary");
    command
        .env_clear()
        .env("AGENTRY_HOME", dir.join("home"))
        .current_dir(dir);
    command
}

/// Runs `command` off the async runtime, so mock servers keep answering.
pub async fn run_cmd(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().expect("agentry runs"))
        .await
        .expect("the command thread")
}

/// Stdout as the one JSON object it must be.
pub fn stdout_json(output: &Output) -> Value {
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|error| {
        panic!(
            "stdout is not one JSON object ({error}):\n{text}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// An OpenAI chat completion carrying `message`.
pub fn completion(message: &Value, finish_reason: &str, usage: (u64, u64)) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1, "total_tokens": usage.0 + usage.1,
                  "prompt_tokens_details": {"cached_tokens": usage.0 / 10}}
    }))
}

/// Mounts on `server` an OpenAI model that asks for `calls` (an OpenAI
/// `tool_calls` array) with usage `calls_usage`, and answers `answer` with
/// `answer_usage` once a tool result is in the request.
pub async fn mount_calls_then_answer(
    server: &wiremock::MockServer,
    calls: Value,
    calls_usage: (u64, u64),
    answer: &str,
    answer_usage: (u64, u64),
) {
    use wiremock::Mock;
    use wiremock::matchers::{body_string_contains, method, path};
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("\"tool_call_id\""))
        .respond_with(completion(
            &json!({"role": "assistant", "content": answer}),
            "stop",
            answer_usage,
        ))
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
            calls_usage,
        ))
        .with_priority(2)
        .mount(server)
        .await;
}
