//! The runs and sessions API over a real socket: runs followed by id,
//! sessions owned by their key, request rates, and runs at shutdown.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{ConversationStore, Message, ToolContext};
use agent_runner::{Agent, RunCheckpoints, StoreCheckpoints};
use agent_store::InMemoryStore;
use agent_testing::{ScriptedClient, response};
use agent_tools::{NoArgs, TypedTool};
use common::{KEY, OTHER_KEY, json_of, start};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// An agent that calls `now` once, then answers.
fn timekeeper(answers: &[&str]) -> Agent {
    let client = answers.iter().fold(
        ScriptedClient::new().respond(response::tool_calls([("now", json!({}))])),
        |client, answer| client.respond(response::text(*answer)),
    );
    Agent::builder(Arc::new(client))
        .tool(TypedTool::new("now", "The time", |_: NoArgs, _: ToolContext| async {
            Ok("12:00")
        }))
        .build()
}

/// A tool that tells when it started and then waits to be cancelled.
fn waiting_tool() -> (TypedTool, oneshot::Receiver<()>) {
    let (started, tool_started) = oneshot::channel::<()>();
    let started = Arc::new(std::sync::Mutex::new(Some(started)));
    let tool = TypedTool::new("wait", "Waits", move |_: NoArgs, context: ToolContext| {
        let started = Arc::clone(&started);
        async move {
            if let Some(started) = started.lock().ok().and_then(|mut s| s.take()) {
                let _ = started.send(());
            }
            tokio::select! {
                () = context.cancel.cancelled() => Ok("cancelled"),
                () = tokio::time::sleep(Duration::from_secs(60)) => Ok("done"),
            }
        }
    });
    (tool, tool_started)
}

async fn new_session(server: &common::Running, key: &str) -> String {
    let (status, session) = json_of(server.post("/v1/sessions", Some(key), &json!({}))).await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    session["id"]
        .as_str()
        .map_or_else(|| panic!("{session}"), str::to_owned)
}

/// The `type` of each event of a server-sent event stream's body, checking
/// that each data line is the event named by its `event:` line.
fn event_types(body: &str) -> Vec<String> {
    let mut types = Vec::new();
    let mut name = None;
    for line in body.lines() {
        if let Some(event) = line.strip_prefix("event: ") {
            name = Some(event.to_owned());
        } else if let Some(data) = line.strip_prefix("data: ") {
            let event: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            assert_eq!(name.take().as_deref(), Some(kind.as_str()), "{body}");
            types.push(kind);
        }
    }
    types
}

#[tokio::test]
async fn a_session_keeps_the_conversation_and_the_next_run_continues_it() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::text("Hello, Ada."))
            .respond(response::text("You are Ada.")),
    );
    let server = start(Agent::builder(client.clone()).build(), |server| server).await;
    let session = new_session(&server, KEY).await;
    let (status, first) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "I am Ada.", "session": session}),
    ))
    .await;
    assert_eq!(
        (status, first["response"].clone()),
        (StatusCode::OK, json!("Hello, Ada.")),
        "{first}"
    );
    let (status, second) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Who am I?", "session": session}),
    ))
    .await;
    assert_eq!(
        (status, second["response"].clone()),
        (StatusCode::OK, json!("You are Ada.")),
        "{second}"
    );
    assert_eq!(client.requests()[1].messages.len(), 3, "the stored turn was sent");

    let (status, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    let messages: Vec<Message> = serde_json::from_value(shown["messages"].clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        messages,
        [
            Message::user("I am Ada."),
            Message::assistant("Hello, Ada."),
            Message::user("Who am I?"),
            Message::assistant("You are Ada.")
        ]
    );
    assert_eq!(
        (shown["user_turns"].clone(), shown["interrupted"].clone()),
        (json!(2), json!(false))
    );
    let (_, listed) = server.get_as("/v1/sessions", KEY).await;
    assert_eq!(listed["data"][0]["id"], json!(session), "{listed}");

    let (status, body) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "x", "session": session, "messages": [{"role": "user", "content": "y"}]}),
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        server.delete_as(&format!("/v1/sessions/{session}"), KEY).await,
        StatusCode::NO_CONTENT
    );
    let (status, _) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn another_keys_sessions_and_runs_are_not_found() {
    let server = start(timekeeper(&["Noon.", "Noon again."]), |server| server).await;
    let session = new_session(&server, KEY).await;
    let response = server
        .post("/v1/runs", Some(KEY), &json!({"prompt": "Time?", "session": session}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), StatusCode::OK);
    let run = response
        .headers()
        .get("x-run-id")
        .and_then(|id| id.to_str().ok())
        .map_or_else(|| panic!("the run's id is in x-run-id"), str::to_owned);

    for path in [
        format!("/v1/sessions/{session}"),
        format!("/v1/runs/{run}"),
        format!("/v1/runs/{run}/events"),
    ] {
        let (status, body) = server.get_as(&path, OTHER_KEY).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"]["type"], "not_found_error");
        let (status, _) = server.get_as(&path, KEY).await;
        assert_eq!(status, StatusCode::OK, "{path} is the owner's");
    }
    let (status, _) =
        json_of(server.post("/v1/runs", Some(OTHER_KEY), &json!({"prompt": "x", "session": session}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = json_of(server.post(&format!("/v1/runs/{run}/cancel"), Some(OTHER_KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        server.delete_as(&format!("/v1/sessions/{session}"), OTHER_KEY).await,
        StatusCode::NOT_FOUND
    );
    let (_, theirs) = server.get_as("/v1/sessions", OTHER_KEY).await;
    assert_eq!(theirs["data"], json!([]), "the list holds only the caller's");
    let (status, _) = server.get_as("/v1/sessions/sess_not-even-an-id", KEY).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(
        shown["message_count"], 4,
        "still there after the other key's attempts: {shown}"
    );
}

#[tokio::test]
async fn a_run_started_without_waiting_is_followed_through_its_events_and_read_by_id() {
    let server = start(timekeeper(&["It is noon."]), |server| server).await;
    let (status, started) =
        json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Time?", "wait": false}))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let id = started["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(started["events_url"], json!(format!("/v1/runs/{id}/events")));

    let (status, body) = server.events_as(&format!("/v1/runs/{id}/events"), KEY).await;
    assert_eq!(status, StatusCode::OK);
    let types = event_types(&body);
    assert_eq!(types.first().map(String::as_str), Some("run_started"), "{types:?}");
    assert_eq!(types.last().map(String::as_str), Some("run_finished"), "{types:?}");
    for expected in ["tool_call_requested", "tool_completed", "text_delta"] {
        assert!(types.iter().any(|t| t == expected), "{expected} in {types:?}");
    }

    let (status, run) = server.get_as(&format!("/v1/runs/{id}"), KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(run["status"], "ended");
    assert_eq!(run["record"]["response"], "It is noon.");
    assert_eq!(run["record"]["tool_calls"][0]["name"], "now");
    let (_, again) = server.events_as(&format!("/v1/runs/{id}/events"), KEY).await;
    assert_eq!(event_types(&again), types, "an ended run replays the same events");
}

#[tokio::test]
async fn a_local_models_progress_is_not_in_the_runs_events() {
    use agent_core::{ModelProgress, StopReason, StreamEvent};
    let mut events = vec![StreamEvent::Progress {
        progress: ModelProgress::ReadingPrompt { done: 10, total: 10 },
    }];
    for tokens in 1..=3 {
        events.push(StreamEvent::Progress {
            progress: ModelProgress::Writing {
                tokens,
                elapsed_ms: tokens * 200,
            },
        });
        events.push(StreamEvent::TextDelta { text: "ok ".into() });
    }
    events.push(StreamEvent::Stop {
        reason: StopReason::EndTurn,
    });
    let agent = Agent::builder(Arc::new(ScriptedClient::new().stream_events(events))).build();
    let server = start(agent, |server| server).await;
    let (_, started) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Hi", "wait": false}))).await;
    let id = started["id"].as_str().unwrap_or_default().to_owned();
    let (_, body) = server.events_as(&format!("/v1/runs/{id}/events"), KEY).await;
    let types = event_types(&body);
    assert!(types.iter().any(|t| t == "text_delta"), "{types:?}");
    assert!(!types.iter().any(|t| t == "model_progress"), "{types:?}");
    assert_eq!(types.last().map(String::as_str), Some("run_finished"), "{types:?}");
}

#[tokio::test]
async fn a_cancelled_run_ends_as_cancelled_and_keeps_its_turn_in_the_session() {
    let (tool, tool_started) = waiting_tool();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("wait", json!({}))]))
        .respond(response::text("never"));
    let server = start(Agent::builder(Arc::new(client)).tool(tool).build(), |server| server).await;
    let session = new_session(&server, KEY).await;
    let (_, started) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Wait.", "session": session, "wait": false}),
    ))
    .await;
    let id = started["id"].as_str().unwrap_or_default().to_owned();
    let _ = tokio::time::timeout(Duration::from_secs(10), tool_started).await;
    let (status, _) = json_of(server.post(&format!("/v1/runs/{id}/cancel"), Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, body) = server.events_as(&format!("/v1/runs/{id}/events"), KEY).await;
    assert_eq!(event_types(&body).last().map(String::as_str), Some("run_finished"));
    let (_, run) = server.get_as(&format!("/v1/runs/{id}"), KEY).await;
    assert_eq!(run["record"]["stop_reason"], "cancelled", "{run}");
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(shown["messages"][0], json!(Message::user("Wait.")), "{shown}");
    assert_eq!(shown["interrupted"], false, "the stored turn ended the saved run");
}

#[tokio::test]
async fn requests_over_a_keys_rate_are_429_with_retry_after() {
    let server = start(timekeeper(&[]), |server| {
        server.requests_per_minute(std::num::NonZeroU32::new(3))
    })
    .await;
    for _ in 0..3 {
        let (status, _) = server.get_as("/v1/sessions", KEY).await;
        assert_eq!(status, StatusCode::OK);
    }
    let response = server
        .http
        .get(format!("{}/v1/sessions", server.base))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
        .unwrap_or_default();
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    let (status, _) = server.get_as("/v1/sessions", OTHER_KEY).await;
    assert_eq!(status, StatusCode::OK, "another key has its own allowance");
}

#[tokio::test]
async fn at_shutdown_a_run_past_the_grace_is_cancelled_and_its_turn_stored() {
    let (tool, tool_started) = waiting_tool();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("wait", json!({}))]))
        .respond(response::text("never"));
    let store = Arc::new(InMemoryStore::new());
    let mut server = start(Agent::builder(Arc::new(client)).tool(tool).build(), |server| {
        server.store(store.clone()).shutdown_grace(Duration::from_millis(300))
    })
    .await;
    let session = new_session(&server, KEY).await;
    let (status, _) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Wait.", "session": session, "wait": false}),
    ))
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let _ = tokio::time::timeout(Duration::from_secs(10), tool_started).await;

    let stopped = tokio::time::timeout(Duration::from_secs(10), server.stop()).await;
    assert!(
        matches!(stopped, Ok(Ok(()))),
        "serve returned after cancelling the run: {stopped:?}"
    );
    let metas = store.list().await.unwrap_or_else(|e| panic!("{e}"));
    let stored = metas
        .iter()
        .find(|meta| meta.name.ends_with(&session))
        .unwrap_or_else(|| panic!("the session is stored: {metas:?}"));
    assert!(
        stored.message_count >= 2,
        "the prompt and the call were kept: {stored:?}"
    );
    assert!(
        !stored.has_checkpoint,
        "the turn was appended, not left as a checkpoint"
    );
    let conversation = store.load(&stored.name).await.ok().flatten();
    assert_eq!(
        conversation.map(|c| c.messages[0].clone()),
        Some(Message::user("Wait."))
    );
}

#[tokio::test]
async fn no_run_starts_once_the_server_shuts_down() {
    let (tool, tool_started) = waiting_tool();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("wait", json!({}))]))
        .respond(response::text("done"));
    let mut server = start(Agent::builder(Arc::new(client)).tool(tool).build(), |server| {
        server
            .drain_delay(Duration::from_millis(800))
            .shutdown_grace(Duration::from_millis(200))
    })
    .await;
    let (status, _) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "Wait.", "wait": false}))).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let _ = tokio::time::timeout(Duration::from_secs(10), tool_started).await;
    if let Some(stop) = server.stop.take() {
        let _ = stop.send(());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, body) = json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": "late"}))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let stopped = tokio::time::timeout(Duration::from_secs(10), server.stop()).await;
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
}

#[tokio::test]
async fn an_interrupted_run_of_a_session_is_resumed_from_its_saved_state() {
    let client = ScriptedClient::new().respond(response::text("It is noon."));
    let agent = Agent::builder(Arc::new(client)).build();
    let store = Arc::new(InMemoryStore::new());
    let server = start(agent.clone(), |server| server.store(store.clone())).await;
    let session = new_session(&server, KEY).await;
    let path = format!("/v1/sessions/{session}/resume");
    let (status, body) = json_of(server.post(&path, Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "nothing to resume yet: {body}");

    // The instance that ran it saved its state after its first step, then died.
    let stored = store.list().await.unwrap_or_else(|e| panic!("{e}"));
    let name = stored
        .iter()
        .find(|meta| meta.name.ends_with(&session))
        .map_or_else(|| panic!("stored: {stored:?}"), |meta| meta.name.clone());
    let state = agent.start(Vec::new(), "What time is it?");
    StoreCheckpoints::new(store.clone(), name)
        .save(&state)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(shown["interrupted"], true, "{shown}");

    let (status, _) = json_of(server.post(&path, Some(OTHER_KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "not the other key's");
    let (status, record) = json_of(server.post(&path, Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["response"], "It is noon.");
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(shown["interrupted"], false, "{shown}");
    assert_eq!(
        shown["messages"],
        json!([Message::user("What time is it?"), Message::assistant("It is noon.")])
    );
    let (status, _) = json_of(server.post(&path, Some(KEY), &json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "resumed once");
}

#[tokio::test]
async fn every_v1_endpoint_needs_a_key() {
    let server = start(timekeeper(&["Noon."]), |server| server).await;
    let session = new_session(&server, KEY).await;
    let run = "run_0123456789abcdef01234567";
    let endpoints = [
        (reqwest::Method::POST, "/v1/chat/completions".to_owned()),
        (reqwest::Method::POST, "/v1/runs".to_owned()),
        (reqwest::Method::GET, format!("/v1/runs/{run}")),
        (reqwest::Method::GET, format!("/v1/runs/{run}/events")),
        (reqwest::Method::POST, format!("/v1/runs/{run}/cancel")),
        (reqwest::Method::POST, "/v1/sessions".to_owned()),
        (reqwest::Method::GET, "/v1/sessions".to_owned()),
        (reqwest::Method::GET, format!("/v1/sessions/{session}")),
        (reqwest::Method::DELETE, format!("/v1/sessions/{session}")),
        (reqwest::Method::POST, format!("/v1/sessions/{session}/resume")),
    ];
    for (method, path) in endpoints {
        for key in [None, Some("not-a-key")] {
            let mut request = server
                .http
                .request(method.clone(), format!("{}{path}", server.base))
                .json(&json!({"prompt": "x", "messages": [{"role": "user", "content": "x"}]}));
            if let Some(key) = key {
                request = request.bearer_auth(key);
            }
            let status = request.send().await.map_or_else(|e| panic!("{e}"), |r| r.status());
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} with {key:?}");
        }
    }
    let (status, _) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(status, StatusCode::OK, "the refused DELETE deleted nothing");
}

#[tokio::test]
async fn run_options_lower_the_limits_and_reach_the_model_but_cannot_raise_them() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([("now", json!({}))]))
            .respond(response::text("Noon.")),
    );
    let agent = Agent::builder(client.clone())
        .tool(TypedTool::new("now", "The time", |_: NoArgs, _: ToolContext| async {
            Ok("12:00")
        }))
        .build();
    let server = start(agent, |server| server).await;
    let limit = agent_runner::AgentConfig::default().run.max_iterations;
    let (status, body) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Time?", "options": {"max_iterations": limit + 1}}),
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("options.max_iterations")),
        "{body}"
    );

    let (status, record) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Time?", "options": {"max_iterations": 1, "max_tokens": 64, "temperature": 0.25}}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["stop_reason"], "max_iterations", "{record}");
    let first = &client.requests()[0];
    assert_eq!((first.max_tokens, first.temperature), (Some(64), Some(0.25)));
}

#[tokio::test]
async fn with_scenes_each_prompt_goes_to_the_chosen_scene_and_its_turn_is_stored() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Weather", json!({}))]))
        .respond(response::tool_calls([("get_weather", json!({}))]))
        .respond(response::text("Sunny in Paris."));
    let weather = agent_testing::TestTools::new("travel").with(agent_testing::TestTool::new(
        "get_weather",
        agent_testing::ToolBehaviour::Reply("sunny, 21 °C".into()),
    ));
    let router = agent_runner::SceneRouter::builder(Arc::new(client.clone()))
        .providers([Arc::new(weather) as Arc<dyn agent_core::ToolProvider>])
        .scene(agent_runner::Scene::new("Weather", "The current weather in a city.").tools(["get_weather"]))
        .scene(agent_runner::Scene::new("Calculator", "Arithmetic."))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let agent = Agent::builder(Arc::new(client.clone())).build();
    let server = start(agent, |server| server.scenes(router)).await;
    let session = new_session(&server, KEY).await;
    let (status, body) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Weather in Paris?", "session": session, "options": {"max_iterations": 2}}),
    ))
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "options do not apply to scenes: {body}"
    );
    let (status, record) = json_of(server.post(
        "/v1/runs",
        Some(KEY),
        &json!({"prompt": "Weather in Paris?", "session": session}),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["response"], "Sunny in Paris.");
    assert_eq!(record["scene"], "Weather");
    let (_, shown) = server.get_as(&format!("/v1/sessions/{session}"), KEY).await;
    assert_eq!(
        shown["messages"][0],
        json!(Message::user("Weather in Paris?")),
        "{shown}"
    );
    assert_eq!(shown["user_turns"], 1);
}
