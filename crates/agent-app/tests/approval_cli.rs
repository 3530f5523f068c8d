//! Human approval end to end: the real `agentry` binary against a local
//! OpenAI-compatible mock server. A run whose model asks for a tool that
//! requires approval pauses (`awaiting_approval`, the waiting calls in the
//! `--json` object), its state stays in the session, and a second process
//! (`agentry resume NAME --approve ID` or `--deny ID`) continues it.
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;

use agent_core::{ConversationStore, Message, TurnMeta, Usage};
use agent_store_sqlite::SqliteStore;
use serde_json::{Value, json};
use wiremock::MockServer;

use cli_support::{agentry, mount_calls_then_answer, run_cmd, stderr, stdout_json};

const SESSION: &str = "sums";

/// The model asks for the calculator, then answers from its result.
async fn server() -> MockServer {
    let server = MockServer::start().await;
    mount_calls_then_answer(
        &server,
        json!([{"id": "call_calc", "type": "function",
                "function": {"name": "calculator", "arguments": "{\"expression\":\"6*7\"}"}}]),
        (100, 20),
        "That is settled.",
        (200, 6),
    )
    .await;
    server
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agentry.toml"),
        "[tools]\nenabled = [\"math\"]\nrequire_approval = [\"calculator\"]\n",
    )
    .unwrap();
    dir
}

fn agentry_on(dir: &Path, server: &MockServer, args: &[&str]) -> assert_cmd::Command {
    let mut command = agentry(dir);
    command.env("OPENAI_API_KEY", "sk-test").args(args[..1].iter()).args([
        "--provider",
        "openai",
        "--base-url",
        &format!("{}/v1", server.uri()),
    ]);
    command.args(args[1..].iter());
    command
}

/// The bodies of the model requests, in order.
async fn model_requests(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap_or_default();
    requests
        .iter()
        .filter(|request| request.method.as_str() == "POST")
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

/// The tool-result message of a model request.
fn tool_message(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "tool"))
        .cloned()
        .expect("the request carries a tool result")
}

/// Runs the prompt in the session; it must pause for the calculator.
async fn paused_run(dir: &Path, server: &MockServer) {
    let output = run_cmd(agentry_on(
        dir,
        server,
        &["run", "--session", SESSION, "--json", "What is 6*7?"],
    ))
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["stop_reason"], "awaiting_approval");
    assert_eq!(
        json["pending_approvals"],
        json!([{"id": "call_calc", "name": "calculator", "arguments": {"expression": "6*7"}}])
    );
    assert!(
        stderr(&output).contains(&format!("agentry resume {SESSION} --approve ID")),
        "{}",
        stderr(&output)
    );
    // The calculator did not run; the model was asked once.
    assert_eq!(model_requests(server).await.len(), 1);
    let listed = run_cmd({
        let mut command = agentry(dir);
        command.args(["sessions", "list", "--json"]);
        command
    })
    .await;
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["name"], SESSION);
    assert_eq!(listed[0]["interrupted"], true, "{listed}");
}

#[tokio::test]
async fn a_paused_run_is_approved_and_finished_by_another_process() {
    let server = server().await;
    let dir = setup();
    paused_run(dir.path(), &server).await;

    // An id that is not waiting is a usage error naming the waiting one.
    let wrong = run_cmd(agentry_on(
        dir.path(),
        &server,
        &["resume", "--approve", "call_nope", SESSION],
    ))
    .await;
    assert_eq!(wrong.status.code(), Some(2), "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("call_calc"), "{}", stderr(&wrong));

    let resumed = run_cmd(agentry_on(
        dir.path(),
        &server,
        &["resume", "--json", "--approve", "call_calc", SESSION],
    ))
    .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let json = stdout_json(&resumed);
    assert_eq!(json["stop_reason"], "completed");
    assert_eq!(json["response"], "That is settled.");
    assert!(json.get("pending_approvals").is_none(), "{json}");
    let calculator = &json["tool_calls"][0];
    assert_eq!(calculator["is_error"], false);
    assert!(calculator["result"].as_str().unwrap().contains("42"), "{calculator}");

    // The model read the calculator's result.
    let requests = model_requests(&server).await;
    assert_eq!(requests.len(), 2);
    let tool_message = tool_message(&requests[1]);
    assert!(
        tool_message["content"].as_str().unwrap().contains("42"),
        "{tool_message}"
    );

    // The turn is stored and nothing waits any more.
    let again = run_cmd(agentry_on(dir.path(), &server, &["resume", SESSION])).await;
    assert_ne!(again.status.code(), Some(0));
    assert!(
        stderr(&again).contains("has no interrupted run to resume"),
        "{}",
        stderr(&again)
    );
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_reads_the_refusal() {
    let server = server().await;
    let dir = setup();
    paused_run(dir.path(), &server).await;

    let resumed = run_cmd(agentry_on(
        dir.path(),
        &server,
        &[
            "resume",
            "--json",
            "--deny",
            "call_calc",
            "--reason",
            "not now",
            SESSION,
        ],
    ))
    .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let json = stdout_json(&resumed);
    assert_eq!(json["stop_reason"], "completed");
    let calculator = &json["tool_calls"][0];
    assert_eq!(calculator["is_error"], true);
    let result = calculator["result"].as_str().unwrap();
    assert!(
        result.contains("did not approve") && result.contains("not now"),
        "{result}"
    );
    assert!(!result.contains("42"), "the calculator ran: {result}");

    let requests = model_requests(&server).await;
    let tool_message = tool_message(&requests[1]);
    assert!(
        tool_message["content"].as_str().unwrap().contains("did not approve"),
        "{tool_message}"
    );
}

#[tokio::test]
async fn an_unknown_tool_in_require_approval_is_a_configuration_error() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agentry.toml"),
        "[tools]\nenabled = [\"math\"]\nrequire_approval = [\"calculater\"]\n",
    )
    .unwrap();
    let output = run_cmd(agentry_on(dir.path(), &server, &["run", "What is 6*7?"])).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("`calculater`") && message.contains("calculator"),
        "{message}"
    );
    assert!(model_requests(&server).await.is_empty());
}

/// The session store the binary uses in `dir`.
fn session_store(dir: &Path) -> SqliteStore {
    SqliteStore::open(dir.join("home/sessions/conversations.sqlite")).unwrap()
}

/// Changes the saved state of the paused run with `tamper`, as a write to
/// the session database could.
async fn tamper_with_the_saved_run(dir: &Path, tamper: impl FnOnce(&mut Value)) {
    let store = session_store(dir);
    let mut saved = store
        .checkpoint(SESSION)
        .await
        .unwrap()
        .expect("the paused run is saved");
    tamper(&mut saved["state"]);
    store.save_checkpoint(SESSION, &saved).await.unwrap();
}

#[tokio::test]
async fn a_saved_run_whose_approval_gate_was_emptied_still_waits_for_approval() {
    let server = server().await;
    let dir = setup();
    paused_run(dir.path(), &server).await;
    tamper_with_the_saved_run(dir.path(), |state| state["approval"] = json!({})).await;

    // `require_approval = ["calculator"]` is still configured: no --approve, no run.
    let resumed = run_cmd(agentry_on(dir.path(), &server, &["resume", "--json", SESSION])).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let json = stdout_json(&resumed);
    assert_eq!(json["stop_reason"], "awaiting_approval", "{json}");
    assert_eq!(json["pending_approvals"][0]["id"], "call_calc", "{json}");
    assert_eq!(model_requests(&server).await.len(), 1, "the model was not asked again");
    assert!(session_store(dir.path()).checkpoint(SESSION).await.unwrap().is_some());

    // Approved, it runs.
    let approved = run_cmd(agentry_on(
        dir.path(),
        &server,
        &["resume", "--json", "--approve", "call_calc", SESSION],
    ))
    .await;
    assert_eq!(approved.status.code(), Some(0), "{}", stderr(&approved));
    assert_eq!(stdout_json(&approved)["stop_reason"], "completed");
}

#[tokio::test]
async fn a_saved_run_of_another_agent_is_refused() {
    let server = server().await;
    let dir = setup();
    paused_run(dir.path(), &server).await;
    tamper_with_the_saved_run(dir.path(), |state| state["identity"]["agent"] = json!("intruder")).await;

    let refused = run_cmd(agentry_on(
        dir.path(),
        &server,
        &["resume", "--approve", "call_calc", SESSION],
    ))
    .await;
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(message.contains("`intruder`") && message.contains(SESSION), "{message}");
    assert_eq!(model_requests(&server).await.len(), 1, "nothing ran");
    assert!(session_store(dir.path()).checkpoint(SESSION).await.unwrap().is_some());
}

#[tokio::test]
async fn a_resumed_run_is_stored_whole_after_a_turn_stored_meanwhile() {
    let server = server().await;
    let dir = setup();
    paused_run(dir.path(), &server).await;

    // Another writer of the session database stores a turn (which drops the
    // saved run), and the paused run's state is saved again.
    let store = session_store(dir.path());
    let saved = store.checkpoint(SESSION).await.unwrap().expect("saved");
    let other = [Message::user("Hi"), Message::assistant("Hello.")];
    let meta = TurnMeta::new("openai", "elsewhere", Usage::default(), 0.0);
    store.append(SESSION, &other, &meta).await.unwrap();
    store.save_checkpoint(SESSION, &saved).await.unwrap();

    let resumed = run_cmd(agentry_on(
        dir.path(),
        &server,
        &["resume", "--json", "--approve", "call_calc", SESSION],
    ))
    .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(stdout_json(&resumed)["stop_reason"], "completed");

    let stored = session_store(dir.path()).load(SESSION).await.unwrap().expect("stored");
    let roles: Vec<String> = stored
        .messages
        .iter()
        .map(|message| {
            serde_json::to_value(message).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "tool", "assistant"]);
    assert_eq!(stored.messages[..2], other);
    assert_eq!(stored.messages[2], Message::user("What is 6*7?"));
    assert!(!stored.meta.has_checkpoint);
}
