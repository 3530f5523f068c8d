//! Runs paused for the user's approval, decided over HTTP
//! (`POST /v1/runs/{id}/approvals`): the paused run lists its calls, the
//! decisions are checked against them, and the run goes on under the same
//! id, with or without a session, as the owner key only.

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_core::{ConversationStore, Message, ToolOutput};
use agent_runner::Agent;
use agent_store::InMemoryStore;
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use common::{KEY, OTHER_KEY, json_of, start};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The arguments each call of the `book` tool ran with.
type Received = Arc<Mutex<Vec<Value>>>;

/// An agent whose `book` tool needs approval, answering as `client` says;
/// the tool replies `booked SEAT` and records what it ran with.
fn booking_agent(client: Arc<ScriptedClient>) -> (Agent, Received, Arc<std::sync::atomic::AtomicUsize>) {
    let received = Received::default();
    let seen = Arc::clone(&received);
    let book = TestTool::new(
        "book",
        ToolBehaviour::Compute(Arc::new(move |arguments: &Value| {
            seen.lock().unwrap_or_else(|e| panic!("{e}")).push(arguments.clone());
            let seat = arguments["seat"].as_str().unwrap_or("?");
            Ok(ToolOutput::from(format!("booked {seat}")))
        })),
    );
    let calls = book.call_counter();
    let registry = agent_tools::ToolBox::builder()
        .provider(Arc::new(TestTools::new("travel").with(book)))
        .require_approval(["book"])
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let agent = Agent::builder(client).tools(Arc::new(registry)).build();
    (agent, received, calls)
}

/// The run id in a record's `approvals_url`.
fn run_id(record: &Value) -> String {
    let url = record["approvals_url"].as_str().unwrap_or_default();
    let id = url
        .strip_prefix("/v1/runs/")
        .and_then(|rest| rest.strip_suffix("/approvals"));
    id.map_or_else(|| panic!("no approvals_url: {record}"), str::to_owned)
}

fn approvals(id: &str) -> String {
    format!("/v1/runs/{id}/approvals")
}

/// The run's status once it is no longer `running`.
async fn settled(server: &common::Running, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let (status, run) = server.get_as(&format!("/v1/runs/{id}"), KEY).await;
        assert_eq!(status, StatusCode::OK, "{run}");
        if run["status"] != "running" {
            return run;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "still running: {run}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The events of a run's stream after `Last-Event-ID: after` (all without),
/// as (id, type) pairs.
async fn events(server: &common::Running, id: &str, after: Option<u64>) -> Vec<(Option<u64>, String)> {
    let request = server
        .http
        .get(format!("{}/v1/runs/{id}/events", server.base))
        .bearer_auth(KEY);
    let request = match after {
        Some(after) => request.header("last-event-id", after.to_string()),
        None => request,
    };
    let response = request.send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await.unwrap_or_default();
    let (mut events, mut number) = (Vec::new(), None);
    for line in body.lines() {
        if let Some(value) = line.strip_prefix("id: ") {
            number = value.parse().ok();
        } else if let Some(data) = line.strip_prefix("data: ") {
            let event: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            events.push((number.take(), kind));
        }
    }
    events
}

fn kinds(events: &[(Option<u64>, String)]) -> Vec<&str> {
    events.iter().map(|(_, kind)| kind.as_str()).collect()
}

#[tokio::test]
async fn a_paused_run_lists_its_calls_and_an_approval_lets_it_go_on_under_the_same_id() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::text("Booked 12A."));
    let (agent, received, calls) = booking_agent(Arc::new(client));
    let server = start(agent, |server| server).await;

    let (status, paused) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Book 12A."}))).await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["stop_reason"], "awaiting_approval", "{paused}");
    assert_eq!(
        paused["pending_approvals"],
        json!([{"id": "call_1", "name": "book", "arguments": {"seat": "12A"}}]),
        "{paused}"
    );
    let id = run_id(&paused);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "nothing ran before the approval");

    let (status, run) = server.get_as(&format!("/v1/runs/{id}"), KEY).await;
    assert_eq!(status, StatusCode::OK, "{run}");
    assert_eq!(run["status"], "awaiting_approval", "{run}");
    assert_eq!(run["approvals_url"], json!(approvals(&id)));
    assert_eq!(run["pending_approvals"], paused["pending_approvals"], "{run}");
    assert_eq!(run["record"]["stop_reason"], "awaiting_approval", "{run}");
    let before = events(&server, &id, None).await;
    assert!(kinds(&before).contains(&"approval_requested"), "{before:?}");
    assert_eq!(
        kinds(&before).last(),
        Some(&"run_finished"),
        "the stream ends at the pause"
    );
    let last_seen = before
        .iter()
        .filter_map(|(number, _)| *number)
        .max()
        .unwrap_or_default();
    assert_eq!(last_seen as usize, before.len() - 1, "each logged event is numbered");

    // Another key's run is not found, whatever it sends.
    let (status, _) = server.get_as(&format!("/v1/runs/{id}"), OTHER_KEY).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = json_of(server.post(&approvals(&id), Some(OTHER_KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // Bodies that do not decide the waiting call exactly once.
    for (body, named) in [
        (json!({"approve": ["call_9"]}), "not waiting for approval: `call_9`"),
        (json!({}), "not decided: `call_1`"),
        (
            json!({"approve": ["call_1"], "deny": [{"id": "call_1"}]}),
            "decided more than once: `call_1`",
        ),
        (json!({"approve": ["call_1"], "yes": true}), "unknown field `yes`"),
    ] {
        let (status, error) = json_of(server.post(&approvals(&id), Some(KEY), &body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{body}: {message}");
    }
    let (_, run) = server.get_as(&format!("/v1/runs/{id}"), KEY).await;
    assert_eq!(
        run["status"], "awaiting_approval",
        "a refused body changes nothing: {run}"
    );

    let response = server
        .post(&approvals(&id), Some(KEY), &json!({"approve": ["call_1"]}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), StatusCode::OK);
    let header = response.headers().get("x-run-id").and_then(|v| v.to_str().ok());
    assert_eq!(header, Some(id.as_str()), "the same run");
    let done: Value = response.json().await.unwrap_or_default();
    assert_eq!(done["stop_reason"], "completed", "{done}");
    assert_eq!(done["response"], "Booked 12A.", "{done}");
    assert_eq!(done["tool_calls"][0]["result"], "booked 12A", "{done}");
    assert_eq!(done["tool_calls"].as_array().map(Vec::len), Some(1), "{done}");
    assert!(done.get("approvals_url").is_none(), "{done}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        *received.lock().unwrap_or_else(|e| panic!("{e}")),
        [json!({"seat": "12A"})]
    );

    let (_, run) = server.get_as(&format!("/v1/runs/{id}"), KEY).await;
    assert_eq!(run["status"], "ended", "{run}");
    assert_eq!(run["pending_approvals"], json!([]), "{run}");
    assert_eq!(run["approvals_url"], Value::Null, "{run}");
    let (status, again) = json_of(server.post(&approvals(&id), Some(KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert!(again.to_string().contains("does not wait for approval"), "{again}");

    // The log goes on after the pause: whole, or after the last event seen.
    let whole = events(&server, &id, None).await;
    assert_eq!(whole[..before.len() - 1], before[..before.len() - 1], "{whole:?}");
    let after = events(&server, &id, Some(last_seen)).await;
    let after_kinds = kinds(&after);
    assert!(after_kinds.contains(&"tool_completed"), "{after_kinds:?}");
    assert!(!after_kinds.contains(&"approval_requested"), "{after_kinds:?}");
    assert_eq!(after_kinds.last(), Some(&"run_finished"));
    assert_eq!(after.first().and_then(|(number, _)| *number), Some(last_seen + 1));
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_is_told_why() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([
                ("book", json!({"seat": "12A"})),
                ("book", json!({"seat": "1A"})),
            ]))
            .respond(response::text("I booked 12A, not 1A.")),
    );
    let (agent, received, calls) = booking_agent(Arc::clone(&client));
    let server = start(agent, |server| server).await;
    let (status, started) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Book 12A and 1A.", "wait": false}),
    ))
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let id = started["id"].as_str().unwrap_or_default().to_owned();
    let run = settled(&server, &id).await;
    assert_eq!(run["status"], "awaiting_approval", "{run}");
    let waiting: Vec<&str> = run["pending_approvals"]
        .as_array()
        .map(|calls| calls.iter().filter_map(|call| call["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(waiting, ["call_1", "call_2"], "{run}");

    let (status, done) = json_of(server.post(
        &approvals(&id),
        Some(KEY),
        &json!({"approve": ["call_1"], "deny": [{"id": "call_2", "reason": "too expensive"}]}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["response"], "I booked 12A, not 1A.", "{done}");
    assert_eq!(done["tool_calls"][0]["result"], "booked 12A", "{done}");
    let denied = &done["tool_calls"][1];
    assert_eq!(denied["is_error"], true, "{done}");
    assert!(
        denied["result"].as_str().is_some_and(|r| r.contains("too expensive")),
        "{done}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the denied call did not run");
    assert_eq!(
        *received.lock().unwrap_or_else(|e| panic!("{e}")),
        [json!({"seat": "12A"})]
    );

    // What the model got for the denied call.
    let requests = client.requests();
    let told = requests
        .last()
        .map(|request| serde_json::to_string(&request.messages).unwrap_or_default());
    let told = told.unwrap_or_default();
    assert!(
        told.contains("did not approve") && told.contains("too expensive"),
        "{told}"
    );
}

#[tokio::test]
async fn an_edited_call_runs_with_the_arguments_given_and_a_run_may_pause_again() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::tool_calls([("book", json!({"seat": "15F"}))]))
        .respond(response::text("Booked 14C and 15F."));
    let (agent, received, _) = booking_agent(Arc::new(client));
    let server = start(agent, |server| server).await;
    let (_, paused) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Book two seats."}))).await;
    let id = run_id(&paused);

    let (status, going) = json_of(server.post(
        &approvals(&id),
        Some(KEY),
        &json!({"edit": [{"id": "call_1", "arguments": {"seat": "14C"}}], "wait": false}),
    ))
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{going}");
    assert_eq!(going["id"], json!(id), "{going}");
    assert_eq!(going["status"], "running", "{going}");

    // The next reply asks for another call: the run waits again, same id.
    let run = settled(&server, &id).await;
    assert_eq!(run["status"], "awaiting_approval", "{run}");
    assert_eq!(
        run["pending_approvals"],
        json!([{"id": "call_1", "name": "book", "arguments": {"seat": "15F"}}]),
        "{run}"
    );
    assert_eq!(
        *received.lock().unwrap_or_else(|e| panic!("{e}")),
        [json!({"seat": "14C"})]
    );

    let (status, done) = json_of(server.post(&approvals(&id), Some(KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["stop_reason"], "completed", "{done}");
    assert_eq!(done["iterations"], 3, "the record is the whole run's: {done}");
    let ran: Vec<(Value, Value)> = done["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|call| (call["arguments"].clone(), call["result"].clone()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        ran,
        [
            (json!({"seat": "14C"}), json!("booked 14C")),
            (json!({"seat": "15F"}), json!("booked 15F"))
        ],
        "{done}"
    );
    assert_eq!(
        *received.lock().unwrap_or_else(|e| panic!("{e}")),
        [json!({"seat": "14C"}), json!({"seat": "15F"})]
    );
}

#[tokio::test]
async fn a_cancelled_pause_cannot_be_decided() {
    let client = ScriptedClient::new().respond(response::tool_calls([("book", json!({"seat": "12A"}))]));
    let (agent, _, calls) = booking_agent(Arc::new(client));
    let server = start(agent, |server| server).await;
    let (_, paused) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Book."}))).await;
    let id = run_id(&paused);
    let (status, cancelled) = json_of(server.post(&format!("/v1/runs/{id}/cancel"), Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{cancelled}");
    assert_eq!(cancelled["status"], "ended", "{cancelled}");
    let (status, refused) = json_of(server.post(&approvals(&id), Some(KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_paused_session_run_is_decided_over_http_and_its_turn_is_stored() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::text("Booked 12A."));
    let (agent, _, calls) = booking_agent(Arc::new(client));
    let store = Arc::new(InMemoryStore::new());
    let server = start(agent, |server| server.store(store.clone())).await;
    let (_, session) = json_of(server.post("/v1/sessions", Some(KEY), &json!({}))).await;
    let session = session["id"].as_str().unwrap_or_default().to_owned();
    let stored = store.list().await.unwrap_or_else(|e| panic!("{e}"));
    let name = stored
        .iter()
        .find(|meta| meta.name.ends_with(&session))
        .map_or_else(|| panic!("{stored:?}"), |meta| meta.name.clone());

    let (status, paused) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Book 12A.", "session": session}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    let id = run_id(&paused);
    let (_, run) = server.get_as(&format!("/v1/runs/{id}"), KEY).await;
    assert_eq!(
        (run["status"].clone(), run["session"].clone()),
        (json!("awaiting_approval"), json!(session)),
        "{run}"
    );
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(shown["interrupted"], true, "{shown}");
    assert_eq!(shown["messages"], json!([]), "the paused turn is not stored yet");
    let (status, _) = json_of(server.post(&approvals(&id), Some(OTHER_KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, done) = json_of(server.post(&approvals(&id), Some(KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["response"], "Booked 12A.", "{done}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let conversation = store.load(&name).await.unwrap_or_else(|e| panic!("{e}"));
    let messages = conversation.map(|c| c.messages).unwrap_or_default();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[0], Message::user("Book 12A."));
    assert!(
        matches!(&messages[2], Message::Tool(result) if result.content == "booked 12A"),
        "{messages:?}"
    );
    assert_eq!(messages[3], Message::assistant("Booked 12A."));
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(
        shown["interrupted"], false,
        "the stored turn ended the saved run: {shown}"
    );
}

#[tokio::test]
async fn a_paused_session_run_resumed_through_the_session_waits_again_as_a_new_run_to_decide() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::text("Booked 12A."));
    let (agent, _, calls) = booking_agent(Arc::new(client));
    let server = start(agent, |server| server).await;
    let (_, session) = json_of(server.post("/v1/sessions", Some(KEY), &json!({}))).await;
    let session = session["id"].as_str().unwrap_or_default().to_owned();
    let (_, paused) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Book 12A.", "session": session}),
    ))
    .await;
    let first = run_id(&paused);

    // No model call: the saved run waits for the same call at once.
    let (status, again) = json_of(server.post(&format!("/v1/sessions/{session}/resume"), Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["stop_reason"], "awaiting_approval", "{again}");
    assert_eq!(again["pending_approvals"], paused["pending_approvals"], "{again}");
    let second = run_id(&again);
    assert_ne!(second, first, "a new run");

    let (status, done) = json_of(server.post(&approvals(&second), Some(KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["response"], "Booked 12A.", "{done}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // The first run's pause is gone from the session with the stored turn.
    let (status, refused) = json_of(server.post(&approvals(&first), Some(KEY), &json!({"approve": ["call_1"]}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert!(
        refused.to_string().contains("no longer holds the paused run"),
        "{refused}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "nothing ran twice");
}
