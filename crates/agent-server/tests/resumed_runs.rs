//! Runs of a session that do not end in one go: a run that pauses for the
//! user's approval stays saved in its session (its turn is not stored), and
//! a run resumed after another instance sharing the store added a turn to
//! the session keeps every message of its own turn.

mod common;

use std::sync::Arc;

use agent_core::{ConversationStore, Message, ToolContext};
use agent_runner::{Agent, RunCheckpoints, StoreCheckpoints};
use agent_store::InMemoryStore;
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use agent_tools::{NoArgs, TypedTool};
use common::{KEY, json_of, start};
use reqwest::StatusCode;
use serde_json::json;

async fn new_session(server: &common::Running) -> String {
    let (status, session) = json_of(server.post("/v1/sessions", Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    session["id"]
        .as_str()
        .map_or_else(|| panic!("{session}"), str::to_owned)
}

/// The name the store keeps the session `id` under.
async fn stored_name(store: &InMemoryStore, id: &str) -> String {
    let stored = store.list().await.unwrap_or_else(|e| panic!("{e}"));
    stored
        .iter()
        .find(|meta| meta.name.ends_with(id))
        .map_or_else(|| panic!("stored: {stored:?}"), |meta| meta.name.clone())
}

async fn stored_messages(store: &InMemoryStore, name: &str) -> Vec<Message> {
    let conversation = store.load(name).await.unwrap_or_else(|e| panic!("{e}"));
    conversation.map(|c| c.messages).unwrap_or_default()
}

async fn has_checkpoint(store: &InMemoryStore, name: &str) -> bool {
    let meta = store.meta(name).await.unwrap_or_else(|e| panic!("{e}"));
    meta.is_some_and(|meta| meta.has_checkpoint)
}

#[tokio::test]
async fn a_run_pausing_for_approval_keeps_its_checkpoint_and_the_stored_messages_unchanged() {
    let book = TestTool::new("book", ToolBehaviour::Reply("booked 12A".into()));
    let registry = agent_tools::ToolBox::builder()
        .provider(Arc::new(TestTools::new("travel").with(book.clone())))
        .require_approval(["book"])
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = ScriptedClient::new()
        .respond(response::text("Hello."))
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]));
    let agent = Agent::builder(Arc::new(client)).tools(Arc::new(registry)).build();
    let store = Arc::new(InMemoryStore::new());
    let server = start(agent, |server| server.store(store.clone())).await;
    let session = new_session(&server).await;
    let name = stored_name(&store, &session).await;

    let (status, first) =
        json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Hi", "session": session}))).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let before = stored_messages(&store, &name).await;
    assert_eq!(before, [Message::user("Hi"), Message::assistant("Hello.")]);

    let (status, paused) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Book seat 12A.", "session": session}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["stop_reason"], "awaiting_approval", "{paused}");
    assert_eq!(book.call_counter().load(std::sync::atomic::Ordering::SeqCst), 0);

    assert_eq!(
        stored_messages(&store, &name).await,
        before,
        "the paused turn is not stored"
    );
    assert!(has_checkpoint(&store, &name).await, "the paused run stays saved");
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(shown["interrupted"], true, "{shown}");
}

/// An agent that calls `now` once, then answers.
fn timekeeper() -> Agent {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("now", json!({}))]))
        .respond(response::text("It is noon."));
    Agent::builder(Arc::new(client))
        .tool(TypedTool::new("now", "The time", |_: NoArgs, _: ToolContext| async {
            Ok("12:00")
        }))
        .build()
}

#[tokio::test]
async fn a_resumed_run_keeps_its_whole_turn_when_another_instance_stored_one_meanwhile() {
    let store = Arc::new(InMemoryStore::new());
    let agent = timekeeper();
    let first = start(agent.clone(), |server| server.store(store.clone())).await;
    let other_client = ScriptedClient::new()
        .respond(response::text("Hello from the other instance."))
        .respond(response::text("You are welcome."));
    let other = start(Agent::builder(Arc::new(other_client)).build(), |server| {
        server.store(store.clone())
    })
    .await;
    let session = new_session(&first).await;
    let name = stored_name(&store, &session).await;

    // The first instance starts a run of the session (empty then) ...
    let state = agent.start(Vec::new(), "What time is it?");
    let checkpoints = StoreCheckpoints::new(store.clone(), name.clone());
    checkpoints.save(&state).await.unwrap_or_else(|e| panic!("{e}"));
    // ... the other instance stores a turn of the same session meanwhile ...
    let (status, body) = json_of(other.post("/v1/runs", Some(KEY), &json!({"prompt": "Hi", "session": session}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // ... the first one saves its state after its next step, and dies.
    checkpoints.save(&state).await.unwrap_or_else(|e| panic!("{e}"));

    let (status, record) = json_of(first.post(&format!("/v1/sessions/{session}/resume"), Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["response"], "It is noon.");

    let stored = stored_messages(&store, &name).await;
    let roles: Vec<String> = stored
        .iter()
        .map(|message| serde_json::to_value(message).unwrap_or_default()["role"].to_string())
        .collect();
    assert_eq!(stored.len(), 6, "both turns whole: {roles:?}");
    assert_eq!(stored[0], Message::user("Hi"));
    assert_eq!(stored[1], Message::assistant("Hello from the other instance."));
    assert_eq!(stored[2], Message::user("What time is it?"), "{roles:?}");
    assert_eq!(stored[5], Message::assistant("It is noon."));
    assert!(!has_checkpoint(&store, &name).await, "the resumed run ended");

    // The session is not stuck: a later turn is stored after both.
    let (status, body) =
        json_of(other.post("/v1/runs", Some(KEY), &json!({"prompt": "Thanks", "session": session}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(stored_messages(&store, &name).await.len(), 8);
}

#[tokio::test]
async fn a_saved_run_resumed_is_held_to_the_servers_approval_rules_and_identity() {
    let book = TestTool::new("book", ToolBehaviour::Reply("booked 12A".into()));
    let registry = agent_tools::ToolBox::builder()
        .provider(Arc::new(TestTools::new("travel").with(book.clone())))
        .require_approval(["book"])
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::text("Booked."));
    let agent = Agent::builder(Arc::new(client)).tools(Arc::new(registry)).build();
    let store = Arc::new(InMemoryStore::new());
    let server = start(agent.clone(), |server| server.store(store.clone())).await;
    let session = new_session(&server).await;
    let name = stored_name(&store, &session).await;
    let (status, paused) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Book seat 12A.", "session": session}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["stop_reason"], "awaiting_approval", "{paused}");

    // A write to the shared store empties the approval gate.
    let mut saved = store
        .checkpoint(&name)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the paused run is saved"));
    saved["state"]["approval"] = json!({});
    store
        .save_checkpoint(&name, &saved)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let path = format!("/v1/sessions/{session}/resume");
    let (status, resumed) = json_of(server.post(&path, Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["stop_reason"], "awaiting_approval", "{resumed}");
    assert_eq!(book.call_counter().load(std::sync::atomic::Ordering::SeqCst), 0);

    // A saved run that says it is another agent's is refused, and stays.
    let mut saved = store
        .checkpoint(&name)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("still saved"));
    saved["state"]["identity"]["agent"] = json!("intruder");
    store
        .save_checkpoint(&name, &saved)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (status, refused) = json_of(server.post(&path, Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{refused}");
    assert!(refused.to_string().contains("intruder"), "{refused}");
    assert_eq!(book.call_counter().load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(has_checkpoint(&store, &name).await);
}
