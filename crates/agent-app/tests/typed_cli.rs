//! `agentry run --schema FILE` against a local OpenAI mock: the schema goes
//! out as `response_format`, the validated answer is printed as JSON (or as
//! the `output` key of `--json`), an invalid answer is retried once with
//! its violations, and a second failure exits 1 naming them.
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer};

use cli_support::{agentry, completion, run_cmd, stderr, stdout_json};

const VALID: &str = r#"{"name": "Oslo", "climate": "cold", "location": {"country": "Norway", "coastal": true}}"#;
const BAD_ENUM: &str = r#"{"name": "Oslo", "climate": "freezing", "location": {"country": "Norway", "coastal": true}}"#;

/// A schema with a nested object and an enum.
fn schema() -> Value {
    json!({
        "title": "CityReport",
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "climate": {"type": "string", "enum": ["cold", "mild", "hot"]},
            "location": {
                "type": "object",
                "properties": {"country": {"type": "string"}, "coastal": {"type": "boolean"}},
                "required": ["country", "coastal"]
            }
        },
        "required": ["name", "climate", "location"]
    })
}

fn write_schema(dir: &Path) {
    std::fs::write(dir.join("city.json"), schema().to_string()).unwrap();
}

/// A server answering `first` to the question, and `retry` to a correction request.
async fn server(first: &str, retry: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("does not match the required JSON schema"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": retry}),
            "stop",
            (120, 30),
        ))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": first}),
            "stop",
            (100, 30),
        ))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

fn command(dir: &Path, server: &MockServer, extra: &[&str]) -> assert_cmd::Command {
    let mut command = agentry(dir);
    command
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", "--provider", "openai", "--model", "gpt-4o-mini", "--tools", ""])
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .args(extra)
        .arg("Describe Oslo.");
    command
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

#[tokio::test]
async fn schema_run_prints_the_validated_json_and_sends_the_format() {
    let server = server(VALID, VALID).await;
    let dir = tempfile::tempdir().unwrap();
    write_schema(dir.path());
    let output = run_cmd(command(dir.path(), &server, &["--schema", "city.json"])).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(value, serde_json::from_str::<Value>(VALID).unwrap());
    assert!(printed.contains("\n  \"climate\""), "pretty printed: {printed}");
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 1);
    assert_eq!(bodies[0]["response_format"]["type"], "json_schema");
    assert_eq!(bodies[0]["response_format"]["json_schema"]["name"], "CityReport");
    assert_eq!(bodies[0]["response_format"]["json_schema"]["schema"], schema());
}

#[tokio::test]
async fn schema_run_json_keeps_the_contract_keys_and_adds_output() {
    let server = server(BAD_ENUM, VALID).await;
    let dir = tempfile::tempdir().unwrap();
    write_schema(dir.path());
    let output = run_cmd(command(dir.path(), &server, &["--schema", "city.json", "--json"])).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let json = stdout_json(&output);
    let mut keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "iterations",
            "model",
            "output",
            "provider",
            "response",
            "stop_reason",
            "tool_calls",
            "usage"
        ]
    );
    assert_eq!(json["output"], serde_json::from_str::<Value>(VALID).unwrap());
    assert_eq!(json["stop_reason"], "completed");
    // Both attempts are counted.
    assert_eq!(json["iterations"], 2);
    assert_eq!(json["usage"]["input_tokens"], 220);
    // The retry named the violation.
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let retry = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
    assert!(retry.contains("/climate") && retry.contains("freezing"), "{retry}");
}

#[tokio::test]
async fn an_answer_invalid_twice_exits_1_with_the_violations() {
    let server = server("Oslo is cold.", BAD_ENUM).await;
    let dir = tempfile::tempdir().unwrap();
    write_schema(dir.path());
    let output = run_cmd(command(dir.path(), &server, &["--schema", "city.json"])).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
    let errors = stderr(&output);
    assert!(
        errors.contains("does not match the schema after 2 attempts"),
        "{errors}"
    );
    assert!(
        errors.contains("at /climate:") && errors.contains("freezing"),
        "{errors}"
    );
    assert_eq!(bodies(&server).await.len(), 2);

    // With --json the object is printed first, without `output`.
    let output = run_cmd(command(dir.path(), &server, &["--schema", "city.json", "--json"])).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert!(json.get("output").is_none(), "{json}");
    assert_eq!(json["response"], BAD_ENUM);
}

#[tokio::test]
async fn an_unreadable_or_unusable_schema_file_exits_2_naming_it() {
    let server = server(VALID, VALID).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.json"), "{not json").unwrap();
    std::fs::write(dir.path().join("wrong.json"), r#"{"type": 42}"#).unwrap();
    for (file, says) in [
        ("missing.json", "cannot read the schema file missing.json"),
        ("broken.json", "the schema file broken.json is not valid JSON"),
        ("wrong.json", "the schema file wrong.json is not a usable JSON Schema"),
    ] {
        let output = run_cmd(command(dir.path(), &server, &["--schema", file])).await;
        assert_eq!(output.status.code(), Some(2), "{file}: {}", stderr(&output));
        assert!(stderr(&output).contains(says), "{file}: {}", stderr(&output));
    }
    // --schema and --stream do not go together.
    write_schema(dir.path());
    let output = run_cmd(command(dir.path(), &server, &["--schema", "city.json", "--stream"])).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(bodies(&server).await.is_empty());
}
