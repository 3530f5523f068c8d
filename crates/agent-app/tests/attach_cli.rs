//! `agentry run --attach FILE`: the real binary against a local
//! OpenAI-compatible mock server. The file goes with the prompt as an
//! image part; a file whose content is not what its name says is refused
//! before any request (exit status 2).
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use cli_support::{agentry, completion, run_cmd, stdout_json};

fn run(dir: &Path, server: &MockServer, extra: &[&str]) -> assert_cmd::Command {
    let mut command = agentry(dir);
    command
        .env("OPENAI_API_KEY", "sk-test")
        .args([
            "run",
            "--provider",
            "openai",
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--json",
        ])
        .args(extra);
    command
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap_or_default();
    requests
        .iter()
        .filter(|request| request.method.as_str() == "POST")
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

#[tokio::test]
async fn an_attached_image_goes_with_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dot.png"), agent_testing::media::PNG).unwrap();
    std::fs::write(dir.path().join("agentry.toml"), "[tools]\nenabled = []\n").unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "A single transparent pixel."}),
            "stop",
            (90, 8),
        ))
        .mount(&server)
        .await;
    let output = run_cmd(run(
        dir.path(),
        &server,
        &["--attach", "dot.png", "What is in this picture?"],
    ))
    .await;

    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout_json(&output)["response"], "A single transparent pixel.");
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 1);
    let user = sent[0]["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "user"))
        .cloned()
        .expect("a user message");
    let parts = user["content"].as_array().expect("content parts");
    assert_eq!(parts[0]["type"], "text");
    assert_eq!(parts[0]["text"], "What is in this picture?");
    let image = parts
        .iter()
        .find(|part| part["type"] == "image_url")
        .expect("an image part");
    let url = image["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,iVBORw0KGgo"), "{url}");
}

#[tokio::test]
async fn a_file_that_is_not_what_its_name_says_is_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.pdf"), agent_testing::media::PNG).unwrap();
    let server = MockServer::start().await;
    let output = run_cmd(run(dir.path(), &server, &["--attach", "report.pdf", "Summarise it."])).await;

    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("report.pdf cannot be attached") && stderr.contains("its content is image/png"),
        "{stderr}"
    );
    assert!(bodies(&server).await.is_empty());
}

#[tokio::test]
async fn a_typed_run_answers_about_an_attached_image_in_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dot.png"), agent_testing::media::PNG).unwrap();
    std::fs::write(dir.path().join("agentry.toml"), "[tools]\nenabled = []\n").unwrap();
    let schema = json!({"type": "object", "properties": {"pixels": {"type": "integer"}},
                        "required": ["pixels"], "additionalProperties": false});
    std::fs::write(dir.path().join("count.json"), schema.to_string()).unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "{\"pixels\": 1}"}),
            "stop",
            (90, 8),
        ))
        .mount(&server)
        .await;
    let output = run_cmd(run(
        dir.path(),
        &server,
        &["--schema", "count.json", "--attach", "dot.png", "How many pixels?"],
    ))
    .await;

    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout_json(&output)["output"], json!({"pixels": 1}));
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["response_format"]["type"], "json_schema");
    let user = sent[0]["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "user"))
        .cloned()
        .expect("a user message");
    assert!(
        user["content"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|part| part["type"] == "image_url")),
        "{user}"
    );
}
