//! End to end: the real `agentry` binary against local mock servers for each
//! HTTP provider (OpenAI, Azure OpenAI, an OpenAI-compatible server). No
//! test touches the internet or depends on the developer's environment:
//! every command starts from an empty environment in an empty directory.
//! (They need the `openai` feature, which is on by default.)
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use cli_support::{agentry, completion, run_cmd, stderr, stdout_json, wait_for_requests};
#[cfg(unix)]
use cli_support::{interrupt, spawn_agentry};

/// A server that asks for the calculator first and answers once it sees the
/// tool result. `route` narrows the requests it answers (auth, path).
async fn calculator_server(route: impl Fn(wiremock::MockBuilder) -> wiremock::MockBuilder) -> MockServer {
    let server = MockServer::start().await;
    route(Mock::given(method("POST")).and(body_string_contains("\"tool_call_id\"")))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "17 × 23 = 391."}),
            "stop",
            (150, 10),
        ))
        .with_priority(1)
        .mount(&server)
        .await;
    route(Mock::given(method("POST")))
        .respond_with(completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "calculator", "arguments": "{\"expression\":\"17*23\"}"}}
            ]}),
            "tool_calls",
            (100, 20),
        ))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

/// One streamed chat-completion chunk carrying `delta`.
fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// An OpenAI SSE body: each event as `data:`, then `[DONE]`.
fn sse_body(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        body.push_str("data: ");
        body.push_str(&event.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// The expected `run --json` object for the calculator script; the tool's
/// duration is checked to be a number and then compared as 0.
fn expected(provider: &str, model: &str, cost: &Value) -> Value {
    json!({
        "response": "17 × 23 = 391.",
        "stop_reason": "completed",
        "iterations": 2,
        "tool_calls": [{
            "id": "call_1",
            "name": "calculator",
            "arguments": {"expression": "17*23"},
            "result": "{\"expression\":\"17*23\",\"result\":391}",
            "is_error": false,
            "duration_ms": 0
        }],
        "usage": {
            "input_tokens": 250,
            "output_tokens": 30,
            "cache_read_tokens": 25,
            "cache_write_tokens": 0,
            "total_tokens": 280,
            "cost_usd": cost
        },
        "provider": provider,
        "model": model
    })
}

fn normalised(mut value: Value) -> Value {
    let duration = &mut value["tool_calls"][0]["duration_ms"];
    assert!(duration.is_u64(), "duration_ms is not a number: {duration}");
    *duration = json!(0);
    value
}

fn approx(value: &Value, expected: f64) {
    let actual = value.as_f64().unwrap_or(f64::NAN);
    assert!((actual - expected).abs() < 1e-12, "{actual} != {expected}");
}

#[tokio::test]
async fn openai_run_json_reports_the_tool_call_and_usage() {
    let server = calculator_server(|mock| {
        mock.and(path("/v1/chat/completions"))
            .and(header("authorization", "Bearer sk-test-key"))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test-key")
        .args([
            "run",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--tools",
            "math",
            "--json",
        ])
        .args(["--base-url", &format!("{}/v1", server.uri()), "What is 17 * 23?"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let mut json = normalised(stdout_json(&output));
    // gpt-4o-mini: 225 uncached input at $0.15, 25 cached at $0.075, 30 output at $0.60 per million.
    approx(
        &json["usage"]["cost_usd"],
        (225.0 * 0.15 + 25.0 * 0.075 + 30.0 * 0.6) / 1e6,
    );
    json["usage"]["cost_usd"] = json!("checked");
    assert_eq!(json, expected("openai", "gpt-4o-mini", &json!("checked")));
    // The tool list and the tool result went to the server.
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["calculator", "arithmetic"]);
}

#[tokio::test]
async fn azure_run_json_uses_the_deployment_url_and_api_key_header() {
    let server = calculator_server(|mock| {
        mock.and(path("/openai/deployments/prod-4o-mini/chat/completions"))
            .and(query_param("api-version", "2024-10-21"))
            .and(header("api-key", "azure-test-key"))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agentry.toml"),
        "[agent]\nprovider = \"azure-openai\"\nmodel = \"gpt-4o-mini\"\n\n\
         [providers.azure-openai]\nendpoint = \"https://unused.openai.azure.com\"\ndeployment = \"prod-4o-mini\"\n\n\
         [tools]\nenabled = [\"math\"]\n",
    )
    .unwrap();
    let mut command = agentry(dir.path());
    command.env("AZURE_OPENAI_API_KEY", "azure-test-key").args([
        "run",
        "--json",
        "--base-url",
        &server.uri(),
        "What is 17 * 23?",
    ]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let mut json = normalised(stdout_json(&output));
    assert!(json["usage"]["cost_usd"].as_f64().is_some_and(|cost| cost > 0.0));
    json["usage"]["cost_usd"] = json!("checked");
    assert_eq!(json, expected("azure-openai", "gpt-4o-mini", &json!("checked")));
}

/// A working-directory `agentry.toml` that sends the user's key to a host
/// of its own is refused until trusted, naming the key and the variable
/// (never the secret); nothing is sent.
#[tokio::test]
async fn a_local_config_sending_the_users_key_elsewhere_is_refused_until_trusted() {
    let server = calculator_server(|mock| mock.and(path("/v1/chat/completions"))).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agentry.toml"),
        format!(
            "[agent]\nprovider = \"openai\"\n[providers.openai]\nbase_url = \"{}/v1\"\n[tools]\nenabled = [\"math\"]\n",
            server.uri()
        ),
    )
    .unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-user-secret")
        .args(["run", "What is 17 * 23?"]);
    let output = run_cmd(command).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let stderr = stderr(&output);
    assert!(
        stderr.contains("is not trusted")
            && stderr.contains("providers.openai.base_url sends $OPENAI_API_KEY to 127.0.0.1, not api.openai.com"),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-user-secret"), "{stderr}");
    assert!(server.received_requests().await.unwrap().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn openai_compatible_run_json_needs_no_key_and_prices_unknown_models_as_null() {
    let server = calculator_server(|mock| mock.and(path("/v1/chat/completions"))).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = agentry(dir.path());
    command
        .args([
            "run",
            "--provider",
            "openai-compatible",
            "--model",
            "local-model",
            "--tools",
            "math",
        ])
        .args([
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--json",
            "What is 17 * 23?",
        ]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let json = normalised(stdout_json(&output));
    assert_eq!(json, expected("openai-compatible", "local-model", &Value::Null));
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn streamed_run_json_prints_only_the_final_object() {
    let server = MockServer::start().await;
    let body = sse_body(&[
        chunk(&json!({"role": "assistant", "content": "Hello"}), None),
        chunk(&json!({"content": " there."}), None),
        chunk(&json!({}), Some("stop")),
        json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [],
               "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}),
    ]);
    Mock::given(method("POST"))
        .and(body_string_contains("\"stream\":true"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--provider", "openai", "--stream", "--json", "--tools", ""])
        .args(["--base-url", &format!("{}/v1", server.uri()), "Say hello"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["response"], "Hello there.");
    assert_eq!(json["usage"]["total_tokens"], 15);
    assert_eq!(json["tool_calls"], json!([]));

    // Without --json the text is streamed to stdout as is.
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--provider", "openai", "--stream", "--tools", ""])
        .args(["--base-url", &format!("{}/v1", server.uri()), "Say hello"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Hello there.\n");
}

#[tokio::test]
async fn a_wrong_key_exits_1_naming_the_variable_without_showing_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {
            "message": "Incorrect API key provided: sk-wrong-secret-123.",
            "type": "invalid_request_error", "code": "invalid_api_key"
        }})))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-wrong-secret-123")
        .args(["run", "--provider", "openai", "--json"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "hi"]);
    let output = run_cmd(command).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["stop_reason"], "error");
    let stderr = stderr(&output);
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");
    let everything = format!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
    assert!(!everything.contains("sk-wrong-secret-123"), "{everything}");
}

#[tokio::test]
async fn a_missing_key_exits_2_naming_the_variable() {
    for (provider, variable) in [("openai", "OPENAI_API_KEY"), ("azure-openai", "AZURE_OPENAI_API_KEY")] {
        let dir = tempfile::tempdir().unwrap();
        let mut command = agentry(dir.path());
        command.args([
            "run",
            "--provider",
            provider,
            "--base-url",
            "http://127.0.0.1:9/v1",
            "hi",
        ]);
        let output = run_cmd(command).await;
        assert_eq!(output.status.code(), Some(2), "{provider}: {}", stderr(&output));
        assert!(stderr(&output).contains(variable), "{provider}: {}", stderr(&output));
    }
}

#[test]
fn a_malformed_config_exits_2_naming_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentry.toml"), "[agent]\nmax_iterations = \"ten\"\n").unwrap();
    let output = agentry(dir.path()).args(["tools"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = stderr(&output);
    assert!(stderr.contains("agentry.toml"), "{stderr}");
    assert!(stderr.contains("`agent.max_iterations`"), "{stderr}");
    assert!(stderr.contains("expected u32"), "{stderr}");
}

#[test]
fn a_number_out_of_range_in_the_file_exits_2_naming_the_file_key_and_range() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agentry.toml"),
        "[agent]\nprovider = \"openai\"\n\n[providers.openai]\ntimeout_secs = 1e12\n",
    )
    .unwrap();
    let output = agentry(dir.path())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "agentry.toml: `providers.openai.timeout_secs = 1000000000000.0` is out of range: use 0.001 to 86400 seconds"
        ),
        "{}",
        stderr(&output)
    );
}

/// Arguments, environment, and what stderr must say.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn configuration_mistakes_exit_2_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [Case; 7] = [
        (
            &["run", "--provider", "openia", "hi"],
            &[],
            "valid providers: llama, openai",
        ),
        (
            &["tools", "--tools", "math,wether"],
            &[],
            "available domains: math, travel, sql, web",
        ),
        (&["tools"], &[("AGENTRY_CONFIG", "missing.toml")], "$AGENTRY_CONFIG"),
        (&["run", "--provider", "anthropic", "hi"], &[], "ANTHROPIC_API_KEY"),
        (&["run", "--max-iterations", "0", "hi"], &[], "--max-iterations"),
        (
            &["run", "hi"],
            &[("AGENTRY_PROVIDERS__LLAMA__BATCH_SIZE", "0")],
            "`batch_size = 0` in [providers.llama] is out of range",
        ),
        (
            &["run", "--provider", "openai", "hi"],
            &[
                ("OPENAI_API_KEY", "sk-test"),
                ("AGENTRY_PROVIDERS__OPENAI__TIMEOUT_SECS", "0"),
            ],
            "environment variable AGENTRY_PROVIDERS__OPENAI__TIMEOUT_SECS: `providers.openai.timeout_secs = 0` is out \
             of range: use 0.001 to 86400 seconds",
        ),
    ];
    for (args, env, expected) in cases {
        let output = agentry(dir.path())
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
    }
}

#[test]
fn tools_json_lists_the_enabled_tools_with_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentry(dir.path()).args(["tools", "--json"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["domains"], json!(["math", "travel"]));
    let tools = json["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "calculator",
            "arithmetic",
            "get_weather",
            "get_flight_prices",
            "get_currency_exchange",
            "divide_by_secret_number"
        ]
    );
    let weather = &tools[2];
    assert_eq!(weather["domain"], "travel");
    assert_eq!(weather["input_schema"]["type"], "object");
    assert_eq!(weather["input_schema"]["additionalProperties"], json!(false));
    assert!(weather["input_schema"]["properties"]["location"].is_object());
    assert!(weather["description"].as_str().unwrap().contains("weather"));

    let output = agentry(dir.path())
        .args(["tools", "--json", "--tools", "math"])
        .output()
        .unwrap();
    let json = stdout_json(&output);
    assert_eq!(json["tools"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["tools"][0]["input_schema"]["properties"]["expression"]["type"],
        "string"
    );

    let output = agentry(dir.path()).args(["tools"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("get_weather(location?, units?)"), "{text}");
}

/// A server whose every chat completion takes a minute.
async fn slow_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            completion(&json!({"role": "assistant", "content": "too late"}), "stop", (1, 1))
                .set_delay(std::time::Duration::from_secs(60)),
        )
        .mount(&server)
        .await;
    server
}

#[cfg(unix)]
#[tokio::test]
async fn ctrl_c_cancels_a_run_which_exits_130_and_reports_cancelled() {
    let server = slow_server().await;
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.uri());
    let child = spawn_agentry(
        dir.path(),
        &["run", "--provider", "openai", "--json", "--base-url", &base_url, "hi"],
    );
    // Once the request reached the server, the Ctrl-C handler is installed.
    wait_for_requests(&server, "", 1).await;
    let output = interrupt(child).await;
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert_eq!(stdout_json(&output)["stop_reason"], "cancelled");
}

#[cfg(unix)]
#[tokio::test]
async fn ctrl_c_cancels_a_typed_run_which_exits_130_and_reports_cancelled() {
    let server = slow_server().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("answer.json"), r#"{"type": "object"}"#).unwrap();
    let base_url = format!("{}/v1", server.uri());
    let child = spawn_agentry(
        dir.path(),
        &[
            "run",
            "--provider",
            "openai",
            "--json",
            "--schema",
            "answer.json",
            "--base-url",
            &base_url,
            "hi",
        ],
    );
    wait_for_requests(&server, "", 1).await;
    let output = interrupt(child).await;
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert_eq!(stdout_json(&output)["stop_reason"], "cancelled");
}

#[test]
fn help_and_version_exit_0_and_unknown_commands_exit_2() {
    use predicates::prelude::*;

    let dir = tempfile::tempdir().unwrap();
    let listed = ["run", "chat", "demo", "tools", "sessions"]
        .into_iter()
        .fold(predicate::str::contains("agentry").boxed(), |all, command| {
            all.and(predicate::str::contains(command)).boxed()
        });
    let mut help = agentry(dir.path());
    help.arg("--help").assert().success().stdout(listed);
    agentry(dir.path())
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("agentry "));
    agentry(dir.path())
        .arg("fly")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unrecognized subcommand 'fly'"));
    agentry(dir.path())
        .arg("run")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("<PROMPT>"));
    agentry(dir.path())
        .args(["run", "   "])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the prompt is empty"));
}

/// An OpenAI-compatible mock that streams `text` as every reply.
async fn streamed_text_server(text: &str) -> MockServer {
    let server = MockServer::start().await;
    let body = sse_body(&[
        chunk(&json!({"role": "assistant", "content": text}), None),
        chunk(&json!({}), Some("stop")),
    ]);
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn demo_check_prints_a_verdict_per_turn_and_the_score_for_any_provider() {
    let server = streamed_text_server("I help with weather and flights. Which city do you mean?").await;
    let dir = tempfile::tempdir().unwrap();
    let demo = |extra: &[&str]| {
        let mut command = agentry(dir.path());
        command
            .env("OPENAI_API_KEY", "sk-test")
            .args(["demo", "--provider", "openai", "--check", "--today", "2026-11-22"])
            .args(["--base-url", &format!("{}/v1", server.uri())])
            .args(extra);
        command
    };
    let output = run_cmd(demo(&[])).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.contains("today is 2026-11-22"), "{out}");
    assert!(out.contains("| 1 | an answer without tools | pass |"), "{out}");
    assert!(
        out.contains("| 2 | a tool call | FAIL: no successful get_weather for Tokyo"),
        "{out}"
    );
    assert!(
        out.contains("| 3 | a question for missing information | pass |"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("passed: 3/10"), "{out}");

    let output = run_cmd(demo(&["--min-pass", "8"])).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("3 of 10 turns passed, fewer than --min-pass 8"),
        "{}",
        stderr(&output)
    );
}

/// `agentry demo` runs the agent of `agentry run`: the same system prompt
/// (written for the demo's today) and `[agent]` settings, and nothing
/// prepended to the conversation for the model to copy.
#[tokio::test]
async fn the_demo_runs_the_agent_of_run_with_no_example_prepended() {
    let server = streamed_text_server("Which city do you mean?").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentry.toml"), "[agent]\nmax_tokens = 77\n").unwrap();
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test")
        .args(["demo", "--provider", "openai", "--today", "2026-07-15"])
        .args(["--base-url", &format!("{}/v1", server.uri())]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        2,
        "the system prompt and the first turn only: {messages:#?}"
    );
    let system = messages[0]["content"].as_str().unwrap_or_default();
    assert!(
        system.starts_with("You are Agentry, a helpful assistant that uses tools")
            && system.contains("Wednesday, July 15, 2026 (2026-07-15)"),
        "{system}"
    );
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(
        first["max_tokens"].as_u64().or(first["max_completion_tokens"].as_u64()),
        Some(77)
    );
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(!out.contains("worked example"), "{out}");
}

/// An answer the model stopped at its token limit (`finish_reason:
/// length`) is reported as cut, never as completed: `stop_reason:
/// max_tokens` in `--json`, a warning on stderr, exit status 0 (the answer,
/// incomplete, is there).
#[tokio::test]
async fn an_answer_cut_at_max_tokens_reports_max_tokens_and_warns_on_stderr() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "The first three primes are 2, 3 and"}),
            "length",
            (20, 12),
        ))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = agentry(dir.path());
    command
        .args(["run", "--provider", "openai-compatible", "--model", "local-model"])
        .args([
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--json",
            "Name the first three primes.",
        ]);
    let output = run_cmd(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["stop_reason"], "max_tokens");
    assert_eq!(json["response"], "The first three primes are 2, 3 and");
    let warning = stderr(&output);
    assert!(
        warning.contains("[stop: max_tokens") && warning.contains("cut off"),
        "{warning}"
    );
}
