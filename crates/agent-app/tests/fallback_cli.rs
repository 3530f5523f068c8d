//! `[agent] fallback` end to end: the real `agentry` binary with OpenAI
//! first and Anthropic as its fallback, both local mock servers. OpenAI
//! answers 503, so Anthropic answers; `run --json` says so under
//! `fallbacks`, and `agentry serve`'s `/readyz` shows each provider's
//! circuit breaker, OpenAI's open once it has failed.
#![cfg(all(feature = "anthropic", feature = "serve", feature = "resilience"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::{agentry, run_cmd, spawn_serve, stdout_json, stop_serving};
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "fallback-test-key";

/// OpenAI failing with 503, Anthropic answering.
async fn providers() -> (MockServer, MockServer) {
    let (openai, anthropic) = (MockServer::start().await, MockServer::start().await);
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "busy", "type": "server_error"}})),
        )
        .mount(&openai)
        .await;
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Anthropic answers."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|event| format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap()))
        .collect();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_string_contains("\"stream\":true"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .with_priority(1)
        .mount(&anthropic)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Anthropic answers."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 3}
        })))
        .with_priority(2)
        .mount(&anthropic)
        .await;
    (openai, anthropic)
}

/// A config file (named with --config, so trusted) with the chain.
fn chain_config(dir: &Path, openai: &MockServer, anthropic: &MockServer) -> PathBuf {
    let file = dir.join("chain.toml");
    let toml = format!(
        "[agent]\nprovider = \"openai\"\nfallback = [\"anthropic\"]\n\
         [providers.openai]\nmodel = \"gpt-4o-mini\"\nbase_url = \"{}/v1\"\nmax_retries = 0\n\
         [providers.openai.circuit_breaker]\nconsecutive_failures = 1\nopen_secs = 600\n\
         [providers.anthropic]\nbase_url = \"{}\"\nmax_retries = 0\n\
         [serve]\napi_keys = [\"{}\"]\n",
        openai.uri(),
        anthropic.uri(),
        agent_server::hash_key(KEY)
    );
    std::fs::write(&file, toml).unwrap();
    file
}

fn check_fallback(json: &Value) {
    assert_eq!(json["response"], "Anthropic answers.", "{json:#}");
    assert_eq!(json["stop_reason"], "completed");
    assert_eq!(json["provider"], "openai", "the configured provider");
    let calls = json["fallbacks"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{json:#}");
    let route = &calls[0]["route"];
    assert_eq!(route["provider"], "anthropic");
    assert_eq!(route["failed"][0]["provider"], "openai");
    assert_eq!(route["failed"][0]["error"]["kind"], "overloaded");
    assert_eq!(route["failed"][0]["error"]["status"], 503);
}

#[tokio::test]
async fn a_run_falls_back_and_its_json_says_who_answered() {
    let (openai, anthropic) = providers().await;
    let dir = tempfile::tempdir().unwrap();
    let config = chain_config(dir.path(), &openai, &anthropic);
    for stream in [false, true] {
        let mut command = agentry(dir.path());
        command
            .env("OPENAI_API_KEY", "sk-test")
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .args(["run", "--json", "--config"])
            .arg(&config);
        if stream {
            command.arg("--stream");
        }
        command.arg("hello");
        let output = run_cmd(command).await;
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        check_fallback(&stdout_json(&output));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_shows_each_providers_breaker() {
    let (openai, anthropic) = providers().await;
    let dir = tempfile::tempdir().unwrap();
    let config = chain_config(dir.path(), &openai, &anthropic);
    let env = [("OPENAI_API_KEY", "sk-test"), ("ANTHROPIC_API_KEY", "sk-ant-test")];
    let (serving, base) = spawn_serve(dir.path(), &env, &["--config", config.to_str().unwrap()]);
    let http = reqwest::Client::new();
    let readiness = || async {
        let body: Value = http
            .get(format!("{base}/readyz"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body
    };

    let ready = readiness().await;
    assert_eq!(ready["status"], "ready", "{ready:#}");
    let states: Vec<(Value, Value)> = ready["details"]["circuit_breakers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|breaker| (breaker["name"].clone(), breaker["state"].clone()))
        .collect();
    assert_eq!(
        states,
        [
            (json!("openai"), json!("closed")),
            (json!("anthropic"), json!("closed"))
        ]
    );

    let run: Value = http
        .post(format!("{base}/v1/runs"))
        .bearer_auth(KEY)
        .json(&json!({"prompt": "hello"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    check_fallback(&run);
    let after = readiness().await;
    assert_eq!(after["details"]["circuit_breakers"][0]["state"], "open", "{after:#}");
    assert_eq!(after["details"]["circuit_breakers"][0]["times_opened"], 1);
    assert_eq!(after["status"], "ready", "an open breaker does not take the server out");
    stop_serving(serving);
}
