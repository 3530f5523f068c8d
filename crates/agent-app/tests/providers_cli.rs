//! End to end: the real `agentry` binary against local mock servers that
//! speak Anthropic's, Gemini's and Ollama's wire formats, plain and with
//! `--stream`, checking the `run --json` object. No test touches the
//! internet; every command starts from an empty environment.
#![cfg(all(feature = "anthropic", feature = "gemini", feature = "ollama"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::fmt::Write as _;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path, query_param};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

use cli_support::{agentry, run_cmd, stdout_json};

/// Mounts the two turns of the calculator script: `answer` once the tool
/// result (`result_marker` in the body) is there, `call` before.
async fn mount_script(
    server: &MockServer,
    route: impl Fn() -> MockBuilder,
    result_marker: &str,
    call: ResponseTemplate,
    answer: ResponseTemplate,
) {
    route()
        .and(body_string_contains(result_marker))
        .respond_with(answer)
        .with_priority(1)
        .mount(server)
        .await;
    route().respond_with(call).with_priority(2).mount(server).await;
}

fn sse(events: &[(&str, Value)]) -> ResponseTemplate {
    let mut body = String::new();
    for (name, data) in events {
        if !name.is_empty() {
            let _ = writeln!(body, "event: {name}");
        }
        let _ = write!(body, "data: {data}\n\n");
    }
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn ndjson(lines: &[Value]) -> ResponseTemplate {
    let mut body = String::new();
    for line in lines {
        let _ = writeln!(body, "{line}");
    }
    ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson")
}

/// Runs the calculator prompt and returns the `--json` object.
async fn run_json(provider: &str, base_url: &str, env: &[(&str, &str)], stream: bool) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut command = agentry(dir.path());
    command
        .envs(env.iter().copied())
        .args(["run", "--provider", provider, "--tools", "math", "--json"]);
    if stream {
        command.arg("--stream");
    }
    command.args(["--base-url", base_url, "What is 17 * 23?"]);
    let output = run_cmd(command).await;
    assert!(
        output.status.success(),
        "{provider} (stream: {stream}): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout_json(&output)
}

/// What every provider's run must report for the calculator script.
fn check_run(json: &Value, provider: &str, model: &str, usage: (u64, u64)) {
    assert_eq!(json["response"], "17 × 23 = 391.", "{json:#}");
    assert_eq!(json["stop_reason"], "completed");
    assert_eq!(json["iterations"], 2);
    let calls = json["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{json:#}");
    assert_eq!(calls[0]["name"], "calculator");
    assert_eq!(calls[0]["arguments"], json!({"expression": "17*23"}));
    assert_eq!(calls[0]["result"], "{\"expression\":\"17*23\",\"result\":391}");
    assert_eq!(calls[0]["is_error"], false);
    assert!(calls[0]["id"].as_str().is_some_and(|id| !id.is_empty()));
    assert!(calls[0]["duration_ms"].is_u64());
    assert_eq!(json["usage"]["input_tokens"], usage.0);
    assert_eq!(json["usage"]["output_tokens"], usage.1);
    assert_eq!(json["usage"]["total_tokens"], usage.0 + usage.1);
    assert_eq!(json["provider"], provider);
    assert_eq!(json["model"], model);
}

fn approx(value: &Value, expected: f64) {
    let actual = value.as_f64().unwrap_or(f64::NAN);
    assert!((actual - expected).abs() < 1e-12, "{actual} != {expected}");
}

// --- Anthropic ---------------------------------------------------------------

fn anthropic_message(content: &Value, stop: &str, usage: (u64, u64)) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": content, "stop_reason": stop, "stop_sequence": null,
           "usage": {"input_tokens": usage.0, "output_tokens": usage.1}})
}

fn anthropic_stream(message: &Value) -> ResponseTemplate {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut events = vec![("message_start", json!({"type": "message_start", "message": start}))];
    for (index, block) in message["content"].as_array().unwrap().iter().enumerate() {
        if block["type"] == "tool_use" {
            let mut opening = block.clone();
            opening["input"] = json!({});
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": opening}),
            ));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}}),
            ));
        } else {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            ));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": block["text"]}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]},
        "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    sse(&events)
}

async fn anthropic_server(stream: bool) -> MockServer {
    let server = MockServer::start().await;
    let call = anthropic_message(
        &json!([{"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"expression": "17*23"}}]),
        "tool_use",
        (100, 20),
    );
    let answer = anthropic_message(
        &json!([{"type": "text", "text": "17 × 23 = 391."}]),
        "end_turn",
        (150, 10),
    );
    let respond = |message: &Value| {
        if stream {
            anthropic_stream(message)
        } else {
            ResponseTemplate::new(200).set_body_json(message)
        }
    };
    let route = || {
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", "sk-ant-test"))
            .and(header("anthropic-version", "2023-06-01"))
            .and(body_string_contains(if stream {
                "\"stream\":true"
            } else {
                "\"max_tokens\""
            }))
    };
    mount_script(&server, route, "\"tool_result\"", respond(&call), respond(&answer)).await;
    server
}

#[tokio::test]
async fn anthropic_run_json_plain_and_streamed() {
    for stream in [false, true] {
        let server = anthropic_server(stream).await;
        let json = run_json(
            "anthropic",
            &server.uri(),
            &[("ANTHROPIC_API_KEY", "sk-ant-test")],
            stream,
        )
        .await;
        check_run(&json, "anthropic", "claude-sonnet-4-5", (250, 30));
        // claude-sonnet-4-5: $3 in, $15 out per million.
        approx(&json["usage"]["cost_usd"], (250.0 * 3.0 + 30.0 * 15.0) / 1e6);
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
    }
}

// --- Gemini ------------------------------------------------------------------

fn gemini_reply(part: &Value, usage: (u64, u64)) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": usage.0, "candidatesTokenCount": usage.1,
                             "totalTokenCount": usage.0 + usage.1},
           "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"})
}

async fn gemini_server(stream: bool) -> MockServer {
    let server = MockServer::start().await;
    let call = gemini_reply(
        &json!({"functionCall": {"name": "calculator", "args": {"expression": "17*23"}}}),
        (100, 20),
    );
    let answer = gemini_reply(&json!({"text": "17 × 23 = 391."}), (150, 10));
    let respond = |reply: &Value| {
        if stream {
            sse(&[("", reply.clone())])
        } else {
            ResponseTemplate::new(200).set_body_json(reply)
        }
    };
    let route = || {
        let endpoint = if stream {
            "streamGenerateContent"
        } else {
            "generateContent"
        };
        let builder = Mock::given(method("POST"))
            .and(path(format!("/v1beta/models/gemini-2.5-flash:{endpoint}")))
            .and(header("x-goog-api-key", "gm-test"));
        if stream {
            builder.and(query_param("alt", "sse"))
        } else {
            builder
        }
    };
    mount_script(&server, route, "\"functionResponse\"", respond(&call), respond(&answer)).await;
    server
}

#[tokio::test]
async fn gemini_run_json_plain_and_streamed() {
    for stream in [false, true] {
        let server = gemini_server(stream).await;
        let json = run_json("gemini", &server.uri(), &[("GEMINI_API_KEY", "gm-test")], stream).await;
        check_run(&json, "gemini", "gemini-2.5-flash", (250, 30));
        assert!(
            json["usage"]["cost_usd"].as_f64().is_some_and(|cost| cost > 0.0),
            "{json:#}"
        );
        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 2);
        assert!(
            requests.iter().all(|r| !r.url.as_str().contains("gm-test")),
            "the key is never in the URL"
        );
    }
}

// --- Ollama ------------------------------------------------------------------

fn ollama_reply(message: &Value, usage: (u64, u64)) -> Value {
    json!({"model": "llama3.2", "created_at": "2025-07-07T20:32:53.8Z", "message": message,
           "done_reason": "stop", "done": true, "prompt_eval_count": usage.0, "eval_count": usage.1})
}

async fn ollama_server(stream: bool) -> MockServer {
    let server = MockServer::start().await;
    let call = ollama_reply(
        &json!({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "calculator", "arguments": {"expression": "17*23"}}}]}),
        (100, 20),
    );
    let answer = ollama_reply(&json!({"role": "assistant", "content": "17 × 23 = 391."}), (150, 10));
    let respond = |reply: &Value| {
        if stream {
            let mut first = reply.clone();
            first["done"] = json!(false);
            let mut last = reply.clone();
            last["message"] = json!({"role": "assistant", "content": ""});
            ndjson(&[first, last])
        } else {
            ResponseTemplate::new(200).set_body_json(reply)
        }
    };
    let route = || {
        Mock::given(method("POST"))
            .and(path("/api/chat"))
            .and(body_string_contains(if stream {
                "\"stream\":true"
            } else {
                "\"stream\":false"
            }))
    };
    mount_script(&server, route, "\"role\":\"tool\"", respond(&call), respond(&answer)).await;
    server
}

#[tokio::test]
async fn ollama_run_json_plain_and_streamed() {
    for stream in [false, true] {
        let server = ollama_server(stream).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("agentry.toml"),
            "[providers.ollama]\nmodel = \"llama3.2\"\n",
        )
        .unwrap();
        let mut command = agentry(dir.path());
        command.args(["run", "--provider", "ollama", "--tools", "math", "--json"]);
        if stream {
            command.arg("--stream");
        }
        command.args(["--base-url", &server.uri(), "What is 17 * 23?"]);
        let output = run_cmd(command).await;
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let json = stdout_json(&output);
        check_run(&json, "ollama", "llama3.2", (250, 30));
        assert_eq!(
            json["usage"]["cost_usd"],
            Value::Null,
            "a model not in the catalog has no price"
        );
    }
}

#[tokio::test]
async fn ollama_host_is_the_server_when_no_base_url_is_given() {
    let server = ollama_server(false).await;
    let json = run_json_with_host(&server).await;
    check_run(&json, "ollama", "llama3.2", (250, 30));
}

async fn run_json_with_host(server: &MockServer) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut command = agentry(dir.path());
    command.env("OLLAMA_HOST", server.address().to_string()).args([
        "run",
        "--provider",
        "ollama",
        "--model",
        "llama3.2",
        "--tools",
        "math",
        "--json",
        "What is 17 * 23?",
    ]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    stdout_json(&output)
}

#[test]
fn a_missing_gemini_key_exits_2_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentry(dir.path())
        .args(["run", "--provider", "gemini", "--base-url", "http://127.0.0.1:9", "hi"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("GEMINI_API_KEY"));
}

#[test]
fn help_lists_every_provider_of_this_build() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentry(dir.path()).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(
        help.contains("Provider: llama, openai, azure-openai, openai-compatible, anthropic, gemini, ollama"),
        "{help}"
    );
}
