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

/// Writes `dir/agentry.toml` and trusts it with `agentry trust` (as a user
/// would after reading it), so its MCP servers, telemetry endpoint and key
/// routes may be used.
pub fn write_trusted_config(dir: &Path, toml: &str) {
    std::fs::write(dir.join("agentry.toml"), toml).expect("writes agentry.toml");
    let output = agentry(dir).arg("trust").output().expect("agentry trust runs");
    assert!(
        output.status.success(),
        "agentry trust failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes `dir/agentry.toml` enabling only the `web` tool, allowed to fetch
/// local pages (a mock server's).
pub fn write_local_web_config(dir: &Path) {
    std::fs::write(
        dir.join("agentry.toml"),
        "[tools]\nenabled = [\"web\"]\n\n[tools.web]\nallow_private_addresses = true\n",
    )
    .expect("writes agentry.toml");
}

/// An HTML page whose one paragraph is `text`, for the `web` tool to fetch.
pub fn page(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/html")
        .set_body_string(format!("<html><body><p>{text}</p></body></html>"))
}

/// Runs `command` off the async runtime, so mock servers keep answering.
pub async fn run_cmd(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().expect("agentry runs"))
        .await
        .expect("the command thread")
}

/// How long a test waits for a process or a server to get somewhere.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// `agentry ARGS` in `dir` (an empty environment but an OpenAI key,
/// `$AGENTRY_HOME` inside `dir`), started with stdout and stderr piped, for
/// a test that interrupts it.
pub fn spawn_agentry(dir: &Path, args: &[&str]) -> std::process::Child {
    use std::process::Stdio;
    std::process::Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .env_clear()
        .env("AGENTRY_HOME", dir.join("home"))
        .env("OPENAI_API_KEY", "sk-test")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("agentry starts: {e}"))
}

/// Waits until `server` has received `count` requests whose body contains
/// `needle` (`""`: any request); fails after 30 s.
pub async fn wait_for_requests(server: &wiremock::MockServer, needle: &str, count: usize) {
    let started = std::time::Instant::now();
    loop {
        let requests = server.received_requests().await.unwrap_or_default();
        let seen = requests
            .iter()
            .filter(|request| String::from_utf8_lossy(&request.body).contains(needle))
            .count();
        if seen >= count {
            return;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the server got {seen} of {count} requests with {needle:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Sends SIGINT (what Ctrl-C sends) to `child` and returns its output once
/// it exits; a child still running after 30 s is killed and the test fails.
#[cfg(unix)]
pub async fn interrupt(child: std::process::Child) -> Output {
    let pid = child.id().to_string();
    let signal = |name: &str| {
        std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .is_ok_and(|status| status.success())
    };
    assert!(signal("-INT"), "SIGINT is sent");
    let waiting = tokio::task::spawn_blocking(move || child.wait_with_output());
    let Ok(output) = tokio::time::timeout(PATIENCE, waiting).await else {
        signal("-KILL");
        panic!("agentry did not exit within {PATIENCE:?} of SIGINT");
    };
    output
        .expect("the waiting thread")
        .unwrap_or_else(|e| panic!("waiting for agentry: {e}"))
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

/// An `agentry serve` process, killed if a test fails before stopping it
/// (it would otherwise hold the test's output open).
pub struct Serving(Option<std::process::Child>);

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `agentry serve` in `dir` with `config` as its `agentry.toml`, on a free
/// port, over the OpenAI-compatible model at `model_uri`; its base URL.
pub fn start_serve(dir: &Path, config: &str, model_uri: &str) -> (Serving, String) {
    std::fs::write(dir.join("agentry.toml"), config).unwrap_or_else(|e| panic!("{e}"));
    let base_url = format!("{model_uri}/v1");
    spawn_serve(
        dir,
        &[("OPENAI_API_KEY", "sk-test")],
        &["--provider", "openai", "--base-url", &base_url],
    )
}

/// `agentry serve ARGS --addr 127.0.0.1:0` in `dir` with only `env` (and
/// `$AGENTRY_HOME`) set; the server and its base URL.
pub fn spawn_serve(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (Serving, String) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .env_clear()
        .env("AGENTRY_HOME", dir.join("home"))
        .envs(env.iter().copied())
        .current_dir(dir)
        .arg("serve")
        .args(args)
        .args(["--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("agentry serve starts: {e}"));
    let stdout = child.stdout.take();
    let serving = Serving(Some(child));
    let mut line = String::new();
    if let Some(stdout) = stdout {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    (serving, base)
}

/// Stops the server with SIGTERM and checks that it exits with 0.
pub fn stop_serving(mut serving: Serving) {
    let Some(mut child) = serving.0.take() else { return };
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let exit = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(exit.code(), Some(0), "agentry serve exits cleanly on SIGTERM");
}

/// An SSE body of OpenAI chunks: `delta`, then the finish reason with usage.
pub fn sse(delta: &Value, finish_reason: &str, usage: (u64, u64)) -> ResponseTemplate {
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
