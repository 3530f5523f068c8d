//! Streaming runs, saved-and-resumed runs, and telemetry.

mod common;

use agent_core::{AgentEvent, Message, ModelProgress, StopReason, StreamEvent, Usage};
use agent_runner::{RunState, Step};
use agent_testing::{ScriptedClient, response};
use futures::StreamExt;
use serde_json::json;

fn script() -> ScriptedClient {
    ScriptedClient::new()
        .stream_events(vec![
            StreamEvent::TextDelta { text: "Let me ".into() },
            StreamEvent::TextDelta { text: "check.".into() },
            StreamEvent::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "echo".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"city\":".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "\"Tokyo\"}".into(),
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 40,
                    output_tokens: 12,
                    cache_read_tokens: 30,
                    ..Usage::default()
                },
            },
            StreamEvent::Stop {
                reason: StopReason::ToolUse,
            },
        ])
        .stream_events(vec![
            StreamEvent::TextDelta { text: "Sunny".into() },
            StreamEvent::TextDelta {
                text: " in Tokyo.".into(),
            },
            StreamEvent::Usage {
                usage: Usage::new(60, 5),
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn,
            },
        ])
}

#[tokio::test]
async fn a_streamed_run_reports_events_in_order_and_ends_with_the_result() {
    let client = script();
    let agent = common::agent(&client).build();
    let events: Vec<AgentEvent> = agent.run("weather?").stream().collect().await;

    assert!(matches!(events.first(), Some(AgentEvent::RunStarted { .. })));
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "Let me check.Sunny in Tokyo.");
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            AgentEvent::RunStarted { .. } => "run_started",
            AgentEvent::ModelRequestStarted { .. } => "model_started",
            AgentEvent::ModelRequestFinished { .. } => "model_finished",
            AgentEvent::TextDelta { .. } => "text",
            AgentEvent::ModelProgress { .. } => "progress",
            AgentEvent::ToolCallRequested { .. } => "tool_requested",
            AgentEvent::ToolStarted { .. } => "tool_started",
            AgentEvent::ToolCompleted { .. } => "tool_completed",
            AgentEvent::LoopDetected { .. } => "loop",
            AgentEvent::AnswerUngrounded { .. } => "answer_ungrounded",
            AgentEvent::CallsRepeated { .. } => "calls_repeated",
            AgentEvent::IterationFinished { .. } => "iteration_finished",
            AgentEvent::ContextCompacted { .. } => "context_compacted",
            AgentEvent::SceneEntered { .. } => "scene_entered",
            AgentEvent::ApprovalRequested { .. } => "approval_requested",
            AgentEvent::Error { .. } => "error",
            AgentEvent::RunFinished { .. } => "run_finished",
        })
        .filter(|k| *k != "text")
        .collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "model_started",
            "model_finished",
            "tool_requested",
            "tool_started",
            "tool_completed",
            "iteration_finished",
            "model_started",
            "model_finished",
            "run_finished"
        ]
    );
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("the last event is the result");
    };
    assert_eq!(result.response, "Sunny in Tokyo.");
    assert_eq!(result.tool_calls[0].arguments, json!({"city": "Tokyo"}));
}

/// A local model's reply: two prompt steps, then 30 tokens 10 ms apart,
/// their text, the stop.
fn progress_script() -> ScriptedClient {
    let mut events = vec![
        StreamEvent::Progress {
            progress: ModelProgress::ReadingPrompt { done: 0, total: 900 },
        },
        StreamEvent::Progress {
            progress: ModelProgress::ReadingPrompt { done: 900, total: 900 },
        },
    ];
    for tokens in 1..=30 {
        events.push(StreamEvent::Progress {
            progress: ModelProgress::Writing {
                tokens,
                elapsed_ms: (tokens - 1) * 10,
            },
        });
        events.push(StreamEvent::TextDelta { text: "ab".into() });
    }
    events.push(StreamEvent::Stop {
        reason: StopReason::EndTurn,
    });
    ScriptedClient::new().stream_events(events)
}

#[tokio::test]
async fn a_streamed_run_forwards_the_providers_progress_thinned_out() {
    let client = progress_script();
    let events: Vec<AgentEvent> = common::agent(&client).build().run("hi").stream().collect().await;
    let progress: Vec<ModelProgress> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ModelProgress { progress } => Some(*progress),
            _ => None,
        })
        .collect();
    let writing = |tokens: u64| ModelProgress::Writing {
        tokens,
        elapsed_ms: (tokens - 1) * 10,
    };
    assert_eq!(
        progress,
        [
            ModelProgress::ReadingPrompt { done: 0, total: 900 },
            ModelProgress::ReadingPrompt { done: 900, total: 900 },
            writing(1),
            writing(11),
            writing(21),
        ]
    );
    let started = events
        .iter()
        .position(|event| matches!(event, AgentEvent::ModelRequestStarted { .. }));
    let finished = events
        .iter()
        .position(|event| matches!(event, AgentEvent::ModelRequestFinished { .. }));
    let first = events
        .iter()
        .position(|event| matches!(event, AgentEvent::ModelProgress { .. }));
    assert!(started < first && first < finished, "{events:?}");
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("the last event is the result");
    };
    assert_eq!(result.response, "ab".repeat(30));
}

#[tokio::test]
async fn a_watched_run_reports_its_steps_but_asks_for_whole_replies() {
    let client = progress_script();
    let agent = common::agent(&client).build();
    let state = agent.start(vec![], "hi");
    let events: Vec<AgentEvent> = agent.resume(state).whole_replies().stream().collect().await;
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, AgentEvent::TextDelta { .. } | AgentEvent::ModelProgress { .. })),
        "{events:?}"
    );
    assert!(matches!(events.first(), Some(AgentEvent::RunStarted { .. })));
    assert!(
        events
            .iter()
            .any(|event| matches!(event, AgentEvent::ModelRequestStarted { iteration: 1, .. }))
    );
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("the last event is the result");
    };
    assert_eq!(result.response, "ab".repeat(30));

    // Its tool calls are reported as a streamed run's are.
    let client = script();
    let agent = common::agent(&client).build();
    let events: Vec<AgentEvent> = agent
        .resume(agent.start(vec![], "weather?"))
        .whole_replies()
        .stream()
        .collect()
        .await;
    assert!(
        events
            .iter()
            .any(|event| matches!(event, AgentEvent::ToolStarted { name, .. } if name == "echo")),
        "{events:?}"
    );
    assert!(!events.iter().any(|event| matches!(event, AgentEvent::TextDelta { .. })));
}

#[tokio::test]
async fn streamed_and_unstreamed_runs_of_the_same_script_report_identical_usage() {
    let streamed_client = script();
    let events: Vec<AgentEvent> = common::agent(&streamed_client)
        .build()
        .run("weather?")
        .stream()
        .collect()
        .await;
    let Some(AgentEvent::RunFinished { result: streamed }) = events.last().cloned() else {
        panic!("no result");
    };
    let plain_client = script();
    let plain = common::agent(&plain_client).build().run("weather?").await.expect("run");
    assert_eq!(streamed.usage, plain.usage);
    assert_eq!(
        plain.usage,
        Usage {
            input_tokens: 100,
            output_tokens: 17,
            cache_read_tokens: 30,
            ..Usage::default()
        }
    );
    assert_eq!(streamed.response, plain.response);
    assert_eq!(streamed.messages, plain.messages);
}

#[tokio::test]
async fn dropping_the_event_stream_cancels_the_run() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("slow_a", json!({}))]))
        .respond(response::text("never"));
    let agent = common::agent(&client).build();
    let mut stream = Box::pin(agent.run("go").stream());
    // Read until the tool starts, then walk away.
    while let Some(event) = stream.next().await {
        if matches!(event, AgentEvent::ToolStarted { .. }) {
            break;
        }
    }
    drop(stream);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        client.requests().len(),
        1,
        "no second model call after the stream was dropped"
    );
}

#[tokio::test]
async fn a_run_saved_between_steps_resumes_to_the_same_result() {
    let make = || {
        ScriptedClient::new()
            .respond(response::tool_calls([("echo", json!({"n": 1}))]))
            .respond(response::text("done"))
    };
    // Uninterrupted.
    let client = make();
    let agent = common::agent(&client).build();
    let expected = agent.run("go").await.expect("run");

    // Stepped by hand: one model call, then saved as JSON, then resumed.
    let client = make();
    let agent = common::agent(&client).build();
    let mut state = agent.start(vec![], "go");
    let Step::CallModel(request) = state.next_step() else {
        panic!("a new run calls the model first");
    };
    let response = {
        use agent_core::LlmClient;
        client
            .complete(request, &agent_core::CancellationToken::new())
            .await
            .expect("scripted")
    };
    state
        .on_model_response(response, std::time::Duration::ZERO)
        .expect("in phase");
    assert!(matches!(state.next_step(), Step::RunTools(calls) if calls.len() == 1));
    let saved = serde_json::to_string(&state).expect("state serialises");
    let restored: RunState = serde_json::from_str(&saved).expect("state deserialises");
    assert_eq!(restored, state);
    let resumed = agent.resume(restored).await.expect("run");
    assert_eq!(resumed.response, expected.response);
    assert_eq!(resumed.messages, expected.messages);
    assert_eq!(resumed.tool_calls.len(), expected.tool_calls.len());
}

#[test]
fn reports_out_of_phase_are_rejected_not_applied() {
    let client = ScriptedClient::new();
    let agent = common::agent(&client).build();
    let mut state = agent.start(vec![Message::user("hi")], "go");
    let before = state.clone();
    let error = state.on_tool_results(&[]).expect_err("a new run waits for the model");
    assert!(error.to_string().contains("waiting for a model response"), "{error}");
    assert_eq!(state, before);
}

#[tokio::test]
async fn reasoning_in_the_history_is_tagged_with_the_provider_that_produced_it() {
    let signed = agent_core::ReasoningBlock {
        text: "Think first.".into(),
        signature: Some("sig-1".into()),
        ..agent_core::ReasoningBlock::default()
    };
    let mut reply = response::text("Done.");
    reply.message.reasoning.push(signed);
    let streamed = vec![
        StreamEvent::ReasoningDelta {
            text: "Think first.".into(),
        },
        StreamEvent::ReasoningSignature {
            signature: "sig-1".into(),
        },
        StreamEvent::TextDelta { text: "Done.".into() },
        StreamEvent::Stop {
            reason: StopReason::EndTurn,
        },
    ];
    let client = ScriptedClient::new().respond(reply).stream_events(streamed);
    let agent = common::agent(&client).build();
    let plain = agent.run("hi").await.expect("run");
    let events: Vec<AgentEvent> = agent.run("hi").stream().collect().await;
    let Some(AgentEvent::RunFinished { result: streamed }) = events.last() else {
        panic!("{events:?}")
    };
    for result in [&plain, &**streamed] {
        let reasoning = &result
            .messages
            .iter()
            .rev()
            .find_map(Message::as_assistant)
            .expect("an assistant message")
            .reasoning;
        assert_eq!(reasoning.len(), 1);
        assert_eq!(reasoning[0].provider.as_deref(), Some("scripted"));
        assert_eq!(reasoning[0].signature.as_deref(), Some("sig-1"));
        assert!(!reasoning[0].is_from("another-provider"));
    }
}
