//! Loop detection beyond plain repetition: a model going round the same two
//! or three rounds of tool calls is stopped the way a model repeating one
//! round is, and rounds that change are left alone.

mod common;

use agent_core::{AgentEvent, Message, RunEnd, ToolCall, ToolChoice, ToolContext};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use futures::StreamExt;
use serde_json::{Value, json};

/// An agent that leaves every repeat to the loop detection: the re-ask on
/// a reply of answered calls (tests/repeated_calls.rs) off.
fn cycles_only(client: &ScriptedClient) -> agent_runner::AgentBuilder {
    common::agent(client).reask_repeated_calls(false)
}

fn ctx() -> ToolContext {
    ToolContext::new()
}

fn weather(city: &str) -> agent_core::ChatResponse {
    response::tool_calls([("weather", json!({ "location": city }))])
}

fn echo(arguments: Value) -> agent_core::ChatResponse {
    response::tool_calls([("echo", arguments)])
}

fn assert_forced_at(client: &ScriptedClient, forced_request: usize) {
    let choices: Vec<ToolChoice> = client.requests().into_iter().map(|r| r.tool_choice).collect();
    assert_eq!(choices.len(), forced_request + 1, "{choices:?}");
    assert!(
        choices[..forced_request].iter().all(|c| *c == ToolChoice::Auto),
        "{choices:?}"
    );
    assert_eq!(
        choices[forced_request],
        ToolChoice::None,
        "the request after the cycle forces an answer: {choices:?}"
    );
}

#[tokio::test]
async fn alternating_between_two_calls_of_one_tool_forces_a_final_answer_naming_the_cycle() {
    let client = ScriptedClient::new()
        .respond(weather("Paris"))
        .respond(weather("London"))
        .respond(weather("Paris"))
        .respond(weather("London"))
        .respond(response::text("final"));
    let result = cycles_only(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_forced_at(&client, 4);
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    assert_eq!(result.response, "final");
    assert_eq!(result.tool_calls.len(), 4, "every call of the cycle ran once per round");
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(
            r#"the model alternated between the same tool calls twice: weather({"location":"Paris"}), then weather({"location":"London"}); the answer was forced"#
        )
    );
    assert!(
        !result
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { content, .. } if content.contains("Do not call any more"))),
        "the transient instruction is not kept in the history"
    );
}

#[tokio::test]
async fn alternating_between_two_tools_is_detected_and_reported_as_a_loop_event() {
    let client = ScriptedClient::new()
        .respond(echo(json!({"q": 1})))
        .respond(weather("Oslo"))
        .respond(echo(json!({"q": 1})))
        .respond(weather("Oslo"))
        .respond(response::text("final"));
    let events: Vec<AgentEvent> = cycles_only(&client)
        .build()
        .run("go")
        .context(ctx())
        .stream()
        .collect()
        .await;
    let loops: Vec<u32> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::LoopDetected { iteration } => Some(*iteration),
            _ => None,
        })
        .collect();
    assert_eq!(loops, [4], "one loop event, after the fourth round");
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("the stream ends with the result: {:?}", events.last());
    };
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    let detail = result.stop_detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains(r#"echo({"q":1}), then weather({"location":"Oslo"})"#),
        "{detail}"
    );
    assert_forced_at(&client, 4);
}

#[tokio::test]
async fn a_cycle_of_three_rounds_is_detected_whatever_the_order_of_calls_within_a_round() {
    let both = |first: i64, second: i64| {
        response::with_calls(
            "",
            vec![
                ToolCall::new("a", "echo", json!({ "n": first })),
                ToolCall::new("b", "echo", json!({ "n": second })),
            ],
        )
    };
    let client = ScriptedClient::new()
        .respond(both(1, 2))
        .respond(weather("Oslo"))
        .respond(echo(json!({"n": 3})))
        .respond(both(2, 1))
        .respond(weather("Oslo"))
        .respond(echo(json!({"n": 3})))
        .respond(response::text("final"));
    let result = cycles_only(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_forced_at(&client, 6);
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(
            r#"the model cycled through the same tool calls twice: echo({"n":1}) + echo({"n":2}), then weather({"location":"Oslo"}), then echo({"n":3}); the answer was forced"#
        )
    );
}

#[tokio::test]
async fn rounds_that_change_are_not_a_loop() {
    // Paging forward, and coming back to a call between different ones, is
    // progress: no two whole cycles repeat.
    let client = ScriptedClient::new()
        .respond(echo(json!({"page": 1})))
        .respond(echo(json!({"page": 2})))
        .respond(echo(json!({"page": 1})))
        .respond(echo(json!({"page": 3})))
        .respond(echo(json!({"page": 1})))
        .respond(echo(json!({"page": 2})))
        .respond(weather("Oslo"))
        .respond(echo(json!({"page": 2})))
        .respond(response::text("done"));
    let result = cycles_only(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::Completed, "{:?}", result.stop_detail);
    assert_eq!(result.response, "done");
    assert!(client.requests().iter().all(|r| r.tool_choice == ToolChoice::Auto));
}

#[tokio::test]
async fn a_round_whose_calls_could_not_run_breaks_a_cycle() {
    // A round with no runnable call (an unknown tool still runs and fails;
    // unreadable arguments do not run at all) is not part of any cycle.
    let unreadable = || response::with_calls("", vec![ToolCall::from_argument_text("x", "echo", "{\"n\": ")]);
    let client = ScriptedClient::new()
        .respond(echo(json!({"n": 1})))
        .respond(unreadable())
        .respond(echo(json!({"n": 1})))
        .respond(response::text("done"));
    let result = common::agent_with(
        &client,
        TestTools::new("t").with(TestTool::new("echo", ToolBehaviour::Echo)),
    )
    .build()
    .run("go")
    .context(ctx())
    .await
    .expect("run");
    assert_eq!(result.stop_reason, RunEnd::Completed, "{:?}", result.stop_detail);
}

#[tokio::test]
async fn plain_repetition_is_still_caught_after_one_repeat_and_names_the_calls() {
    let client = ScriptedClient::new()
        .respond(weather("Paris"))
        .respond(echo(json!({"q": 1})))
        .respond(echo(json!({"q": 1})))
        .respond(response::text("final"));
    let result = cycles_only(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_forced_at(&client, 3);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(r#"the model repeated the same tool calls: echo({"q":1}); the answer was forced"#)
    );
}

#[test]
fn the_rounds_seen_so_far_survive_saving_and_resuming_a_run() {
    use agent_runner::{RunState, Step, ToolOutcome};

    let client = ScriptedClient::new();
    let agent = cycles_only(&client).build();
    let mut state = agent.start(vec![], "go");
    let outcome = || ToolOutcome {
        content: "ok".into(),
        is_error: false,
        duration: std::time::Duration::ZERO,
        cached: false,
        delegated_usage: None,
        attachments: Vec::new(),
    };
    for (round, city) in ["Paris", "London", "Paris", "London"].into_iter().enumerate() {
        // Save and restore between every step: the loop detector's rounds
        // are part of the state.
        let saved = serde_json::to_string(&state).expect("state serialises");
        state = serde_json::from_str::<RunState>(&saved).expect("state deserialises");
        assert!(matches!(state.next_step(), Step::CallModel(r) if r.tool_choice == ToolChoice::Auto));
        state
            .on_model_response(weather(city), std::time::Duration::ZERO)
            .expect("in phase");
        assert!(
            matches!(state.next_step(), Step::RunTools(calls) if calls.len() == 1),
            "round {round}"
        );
        state.on_tool_results(&[outcome()]).expect("in phase");
    }
    let Step::CallModel(request) = state.next_step() else {
        panic!("the answer is forced");
    };
    assert_eq!(request.tool_choice, ToolChoice::None);
    state
        .on_model_response(response::text("final"), std::time::Duration::ZERO)
        .expect("in phase");
    let result = state.into_result();
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    assert!(
        result
            .stop_detail
            .is_some_and(|d| d.starts_with("the model alternated between the same tool calls twice")),
    );
}
