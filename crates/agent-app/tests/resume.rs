//! Resumable runs end to end: the real `agentry` binary, a local
//! OpenAI-compatible mock server and local pages for the `web` tool. A run
//! is killed (or interrupted with Ctrl-C) while a slow tool runs;
//! `agentry resume` finishes it without running the finished call again.
#![cfg(all(feature = "openai", unix))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use agent_core::ConversationStore;
use agent_store_sqlite::SqliteStore;
use serde_json::json;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer};

use cli_support::{
    agentry, completion, interrupt, page, run_cmd, spawn_agentry, stderr, stdout_json, wait_for_requests,
    write_local_web_config,
};

const SESSION: &str = "pages";

/// The model asks for two pages at once, then answers from their results
/// (priorities 3 and 2: a test may mount a model reply of its own above
/// them); `/fast` answers at once, the first request of `/slow` takes a
/// minute.
async fn server() -> MockServer {
    let server = MockServer::start().await;
    let fast = format!("{}/fast", server.uri());
    let slow = format!("{}/slow", server.uri());
    Mock::given(method("POST"))
        .and(body_string_contains("\"tool_call_id\""))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "Both pages are read."}),
            "stop",
            (300, 8),
        ))
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_fast", "type": "function",
                 "function": {"name": "fetch_url", "arguments": json!({"url": fast}).to_string()}},
                {"id": "call_slow", "type": "function",
                 "function": {"name": "fetch_url", "arguments": json!({"url": slow}).to_string()}}
            ]}),
            "tool_calls",
            (100, 30),
        ))
        .with_priority(3)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/fast"))
        .respond_with(page("the fast page"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(page("the slow page").set_delay(Duration::from_secs(60)))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(page("the slow page"))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

fn start_run(dir: &Path, server: &MockServer) -> Child {
    let base_url = format!("{}/v1", server.uri());
    spawn_agentry(
        dir,
        &[
            "run",
            "--provider",
            "openai",
            "--base-url",
            &base_url,
            "--session",
            SESSION,
            "Read both pages",
        ],
    )
}

async fn requests_to(server: &MockServer, page: &str) -> usize {
    let requests = server.received_requests().await.unwrap_or_default();
    requests.iter().filter(|request| request.url.path() == page).count()
}

/// Waits until the run's saved state holds the fast page's result (the
/// fast call finished while the slow one still runs).
async fn wait_for_the_fast_result_to_be_saved(dir: &Path, server: &MockServer) {
    let started = Instant::now();
    let database = dir.join("home/sessions/conversations.sqlite");
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run never saved the fast result"
        );
        if requests_to(server, "/slow").await == 1 && database.is_file() {
            let store = SqliteStore::open(&database).unwrap();
            let saved = store.checkpoint(SESSION).await.ok().flatten();
            if saved.is_some_and(|saved| saved.to_string().contains("the fast page")) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn resume(dir: &Path, server: &MockServer) -> std::process::Output {
    let mut command = agentry(dir);
    command.env("OPENAI_API_KEY", "sk-test").args([
        "resume",
        "--provider",
        "openai",
        "--base-url",
        &format!("{}/v1", server.uri()),
        "--json",
        SESSION,
    ]);
    run_cmd(command).await
}

/// After the resumed run: the finished call ran once, the interrupted one
/// twice, and the session holds the whole turn once, with no saved state.
async fn assert_resumed(dir: &Path, server: &MockServer, output: &std::process::Output) {
    assert!(output.status.success(), "{}", stderr(output));
    let json = stdout_json(output);
    assert_eq!(json["response"], "Both pages are read.");
    assert_eq!(json["stop_reason"], "completed");
    let results: Vec<&str> = json["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["result"].as_str().unwrap())
        .collect();
    assert!(
        results[0].contains("the fast page") && results[1].contains("the slow page"),
        "{results:?}"
    );
    assert_eq!(
        requests_to(server, "/fast").await,
        1,
        "the finished call is not run again"
    );
    assert_eq!(requests_to(server, "/slow").await, 2, "the interrupted call runs again");

    let output = agentry(dir)
        .args(["sessions", "show", SESSION, "--json"])
        .output()
        .unwrap();
    let messages = stdout_json(&output)["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);
    let store = SqliteStore::open(dir.join("home/sessions/conversations.sqlite")).unwrap();
    assert_eq!(
        store.checkpoint(SESSION).await.unwrap(),
        None,
        "the saved state is gone"
    );

    let again = resume(dir, server).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("has no interrupted run to resume"),
        "{}",
        stderr(&again)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_while_a_slow_tool_runs_is_resumed_without_repeating_finished_calls() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    write_local_web_config(dir.path());
    let mut child = start_run(dir.path(), &server);
    wait_for_the_fast_result_to_be_saved(dir.path(), &server).await;
    child.kill().unwrap();
    child.wait().unwrap();

    let output = agentry(dir.path()).args(["sessions", "list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(listed.contains(&format!("agentry resume {SESSION}")), "{listed}");

    let output = resume(dir.path(), &server).await;
    assert_resumed(dir.path(), &server, &output).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_interrupted_with_ctrl_c_exits_130_says_how_to_resume_it_and_is_resumed() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    write_local_web_config(dir.path());
    let child = start_run(dir.path(), &server);
    wait_for_the_fast_result_to_be_saved(dir.path(), &server).await;
    let interrupted = interrupt(child).await;
    assert_eq!(interrupted.status.code(), Some(130), "{}", stderr(&interrupted));
    assert!(
        stderr(&interrupted).contains(&format!("`agentry resume {SESSION}` continues it")),
        "{}",
        stderr(&interrupted)
    );

    let output = resume(dir.path(), &server).await;
    assert_resumed(dir.path(), &server, &output).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_interrupted_with_ctrl_c_exits_130_and_is_resumed_again() {
    let server = server().await;
    // The first answer after the tool results takes a minute.
    Mock::given(method("POST"))
        .and(body_string_contains("\"tool_call_id\""))
        .respond_with(
            completion(&json!({"role": "assistant", "content": "too late"}), "stop", (1, 1))
                .set_delay(Duration::from_secs(60)),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    write_local_web_config(dir.path());
    let child = start_run(dir.path(), &server);
    wait_for_the_fast_result_to_be_saved(dir.path(), &server).await;
    assert_eq!(interrupt(child).await.status.code(), Some(130));

    let base_url = format!("{}/v1", server.uri());
    let child = spawn_agentry(
        dir.path(),
        &[
            "resume",
            "--provider",
            "openai",
            "--base-url",
            &base_url,
            "--json",
            SESSION,
        ],
    );
    // The resumed run fetched the slow page again and asks for the answer.
    wait_for_requests(&server, "\"tool_call_id\"", 1).await;
    let interrupted = interrupt(child).await;
    assert_eq!(interrupted.status.code(), Some(130), "{}", stderr(&interrupted));
    assert_eq!(stdout_json(&interrupted)["stop_reason"], "cancelled");
    assert!(
        stderr(&interrupted).contains(&format!("`agentry resume {SESSION}` continues it")),
        "{}",
        stderr(&interrupted)
    );

    let output = resume(dir.path(), &server).await;
    assert_resumed(dir.path(), &server, &output).await;
}
