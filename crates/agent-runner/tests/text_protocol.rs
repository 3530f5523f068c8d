//! Text-protocol tool calling and the ReAct agent, against models that only
//! speak text.

mod common;

use std::sync::Arc;

use agent_core::{AgentEvent, Message, RunEnd, StopReason, StreamEvent, ToolContext, ToolError, ToolOutput};
use agent_runner::{Agent, ReactAgent, ToolProtocol};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use futures::StreamExt;
use serde_json::{Value, json};

/// `calculator(expression)` for "a + b" and "a * b".
fn calculator() -> TestTools {
    let compute = |args: &Value| {
        let expression = args["expression"].as_str().unwrap_or_default();
        let (a, op, b) = expression
            .split_once('+')
            .map(|(a, b)| (a, '+', b))
            .or_else(|| expression.split_once('*').map(|(a, b)| (a, '*', b)))
            .ok_or_else(|| ToolError::failed(format!("cannot evaluate {expression:?}")))?;
        let parse = |x: &str| x.trim().parse::<f64>().map_err(|e| ToolError::failed(e.to_string()));
        let value = if op == '+' {
            parse(a)? + parse(b)?
        } else {
            parse(a)? * parse(b)?
        };
        Ok(ToolOutput::Json(json!({"result": value})))
    };
    TestTools::new("math").with(
        TestTool::new("calculator", ToolBehaviour::Compute(Arc::new(compute))).with_schema(json!({
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. 2 + 3"}},
            "required": ["expression"]
        })),
    )
}

fn tagged(expression: &str) -> String {
    format!(
        "<tool_call>\n{{\"name\": \"calculator\", \"arguments\": {{\"expression\": \"{expression}\"}}}}\n</tool_call>"
    )
}

#[tokio::test]
async fn a_text_only_model_completes_a_two_step_task_with_the_same_record_shape_as_native() {
    let client = common::text_only()
        .respond(response::text(format!("First the sum.\n{}", tagged("15 + 27"))))
        // Bare JSON naming a known tool works too: small models write it.
        .respond(response::text(
            "```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"42 * 3\"}}\n```",
        ))
        .respond(response::text("15 + 27 multiplied by 3 is 126."));
    let agent = common::agent_with(&client, calculator()).build();
    let result = agent.run("What is 15 + 27 multiplied by 3?").await.expect("run");

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "15 + 27 multiplied by 3 is 126.");
    assert_eq!(result.iterations, 3);
    let calls: Vec<_> = result
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), c.arguments.clone(), c.result.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("calculator", json!({"expression": "15 + 27"}), r#"{"result":42.0}"#),
            ("calculator", json!({"expression": "42 * 3"}), r#"{"result":126.0}"#),
        ]
    );

    let requests = client.requests();
    assert!(requests[0].tools.is_empty(), "no native tool definitions");
    let system = requests[0].system.clone().unwrap_or_default();
    assert!(system.contains("- calculator:"), "{system}");
    assert!(system.contains("expression (string, required): e.g. 2 + 3"), "{system}");
    assert!(system.contains("<tool_call>"), "protocol instructions");
    assert!(system.contains("You are a test agent."), "the custom prompt is kept");
    let Some(Message::User { content, .. }) = requests[1].messages.last() else {
        panic!("results go back as a user message");
    };
    assert_eq!(
        content,
        "<tool_response name=\"calculator\">\n{\"result\":42.0}\n</tool_response>"
    );
    assert!(
        requests[1].messages.iter().all(|m| !matches!(m, Message::Tool(_))),
        "a text-only model never receives tool messages"
    );

    // The same task in native mode yields the same record shape.
    let native = ScriptedClient::new()
        .respond(response::tool_calls([("calculator", json!({"expression": "15 + 27"}))]))
        .respond(response::tool_calls([("calculator", json!({"expression": "42 * 3"}))]))
        .respond(response::text("15 + 27 multiplied by 3 is 126."));
    let native_result = common::agent_with(&native, calculator())
        .build()
        .run("What is 15 + 27 multiplied by 3?")
        .await
        .expect("run");
    let strip = |r: &agent_core::AgentRunResult| {
        r.tool_calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone(), c.result.clone(), c.is_error))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&result), strip(&native_result));
    assert_eq!(result.stop_reason, native_result.stop_reason);
    assert_eq!(result.iterations, native_result.iterations);
    assert_eq!(result.response, native_result.response);
}

#[tokio::test]
async fn a_missing_parameter_goes_back_to_the_model_which_can_ask_the_user() {
    let client = common::text_only()
        .respond(response::text(
            "<tool_call>{\"name\": \"calculator\", \"arguments\": {}}</tool_call>",
        ))
        .respond(response::text("Which expression should I compute?"));
    let result = common::agent_with(&client, calculator())
        .build()
        .run("Compute something")
        .await
        .expect("run");
    assert!(result.tool_calls[0].is_error);
    assert!(
        result.tool_calls[0].result.contains("expression"),
        "{}",
        result.tool_calls[0].result
    );
    let Some(Message::User { content, .. }) = client.requests()[1].messages.last().cloned() else {
        panic!("the error goes back as a tool response");
    };
    assert!(
        content.contains("error=\"true\"") && content.contains("expression"),
        "{content}"
    );
    assert_eq!(result.response, "Which expression should I compute?");
    assert_eq!(result.stop_reason, RunEnd::Completed);
}

#[tokio::test]
async fn the_text_protocol_can_be_forced_for_a_native_model() {
    let client = ScriptedClient::new().respond(response::text("No tools needed."));
    common::agent_with(&client, calculator())
        .tool_protocol(ToolProtocol::Text)
        .build()
        .run("hi")
        .await
        .expect("run");
    assert!(client.requests()[0].tools.is_empty());
    assert!(
        client.requests()[0]
            .system
            .as_deref()
            .is_some_and(|s| s.contains("<tool_call>"))
    );
}

#[tokio::test]
async fn loop_detection_and_the_forced_answer_work_in_text_mode() {
    let client = common::text_only()
        .respond(response::text(tagged("1 + 1")))
        .respond(response::text(tagged("1 + 1")))
        .respond(response::text(format!("It is 2. {}", tagged("1 + 1"))));
    let result = common::agent_with(&client, calculator())
        .build()
        .run("1+1?")
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    assert_eq!(result.tool_calls.len(), 2, "the call in the forced answer is not run");
    assert_eq!(result.response, "It is 2.");
    let last_request = &client.requests()[2];
    assert!(
        matches!(last_request.messages.last(), Some(Message::User { content, .. }) if content.starts_with("No more tool calls."))
    );
}

#[tokio::test]
async fn streamed_text_mode_never_shows_protocol_tags() {
    let client = common::text_only()
        .stream_events(vec![
            StreamEvent::TextDelta {
                text: "Let me add. <tool".into(),
            },
            StreamEvent::TextDelta {
                text: "_call>{\"name\": \"calculator\", ".into(),
            },
            StreamEvent::TextDelta {
                text: "\"arguments\": {\"expression\": \"2 + 2\"}}</tool_call>".into(),
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn,
            },
        ])
        .stream_events(vec![
            StreamEvent::TextDelta {
                text: "It is 4.".into(),
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn,
            },
        ]);
    let agent = common::agent_with(&client, calculator()).build();
    let events: Vec<AgentEvent> = agent.run("2+2?").stream().collect().await;
    let shown: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, "Let me add.It is 4.");
    assert!(!shown.contains("tool_call"));
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("ends with the result");
    };
    assert_eq!(result.tool_calls[0].result, r#"{"result":4.0}"#);
}

// The ReAct agent.

fn react_agent(client: &ScriptedClient) -> ReactAgent {
    ReactAgent::new(
        Agent::builder(Arc::new(client.clone()))
            .tools(common::registry(calculator()))
            .max_iterations(4),
    )
}

#[tokio::test]
async fn a_react_agent_completes_a_two_step_task_and_records_both_steps() {
    let client = common::text_only()
        .respond(response::text(
            "Thought: first add.\nAction: calculator\nAction Input: {\"expression\": \"15 + 27\"}",
        ))
        .respond(response::text(
            "Thought: now multiply.\nAction: calculator\nAction Input: {\"expression\": \"42 * 3\"}",
        ))
        .respond(response::text(
            "Thought: I now know the final answer\nFinal Answer: 126",
        ));
    let outcome = react_agent(&client)
        .run(Vec::new(), "What is 15 + 27 multiplied by 3?", &ToolContext::new())
        .await
        .expect("run");
    assert_eq!(outcome.result.response, "126");
    assert_eq!(outcome.result.stop_reason, RunEnd::Completed);
    assert_eq!(outcome.steps.len(), 3);
    assert_eq!(outcome.steps[0].thought.as_deref(), Some("first add."));
    assert_eq!(outcome.steps[0].action.as_deref(), Some("calculator"));
    assert_eq!(outcome.steps[0].arguments, Some(json!({"expression": "15 + 27"})));
    assert_eq!(outcome.steps[0].observation.as_deref(), Some(r#"{"result":42.0}"#));
    assert_eq!(outcome.steps[1].observation.as_deref(), Some(r#"{"result":126.0}"#));
    assert_eq!(outcome.steps[2].final_answer.as_deref(), Some("126"));
    let second = &client.requests()[1];
    assert!(
        matches!(second.messages.last(), Some(Message::User { content, .. }) if content == r#"Observation: {"result":42.0}"#)
    );
    assert!(
        second
            .system
            .as_deref()
            .is_some_and(|s| s.contains("Action: the tool to use, one of [calculator]"))
    );
}

#[tokio::test]
async fn stop_sequences_are_sent_and_a_made_up_observation_is_discarded() {
    let client = common::text_only()
        .respond(response::text(
            "Thought: add.\nAction: calculator\nAction Input: {\"expression\": \"2 + 2\"}\nObservation: {\"result\": 5}\nFinal Answer: 5",
        ))
        .respond(response::text("Thought: done.\nFinal Answer: 4"));
    let outcome = react_agent(&client)
        .run(Vec::new(), "2+2?", &ToolContext::new())
        .await
        .expect("run");
    let requests = client.requests();
    assert!(
        requests[0].stop.iter().any(|s| s.contains("Observation:")),
        "{:?}",
        requests[0].stop
    );
    // The invented observation (and the answer after it) never reached the history.
    let history = &requests[1].messages;
    let assistant = history
        .iter()
        .rev()
        .find_map(Message::as_assistant)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    assert!(!assistant.contains("Observation"), "{assistant}");
    assert!(!assistant.contains("Final Answer: 5"), "{assistant}");
    assert!(
        matches!(history.last(), Some(Message::User { content, .. }) if content == r#"Observation: {"result":4.0}"#)
    );
    assert_eq!(outcome.result.response, "4");
    assert_eq!(outcome.steps[0].observation.as_deref(), Some(r#"{"result":4.0}"#));
}

#[tokio::test]
async fn a_malformed_react_step_gets_a_corrective_observation() {
    let client = common::text_only()
        .respond(response::text("Hmm, let me think about this."))
        .respond(response::text("Thought: ok.\nFinal Answer: 4"));
    let outcome = react_agent(&client)
        .run(Vec::new(), "2+2?", &ToolContext::new())
        .await
        .expect("run");
    assert_eq!(outcome.result.response, "4");
    assert!(outcome.steps[0].is_error);
    let correction = outcome.steps[0].observation.clone().unwrap_or_default();
    assert!(correction.contains("Final Answer"), "{correction}");
    assert!(
        matches!(client.requests()[1].messages.last(), Some(Message::User { content, .. }) if content.starts_with("Observation: Error:"))
    );
}

#[tokio::test]
async fn a_react_run_that_hits_max_steps_ends_with_a_forced_answer() {
    let mut client = common::text_only();
    for n in 0..4 {
        client = client.respond(response::text(format!(
            "Thought: again.\nAction: calculator\nAction Input: {{\"expression\": \"{n} + 1\"}}"
        )));
    }
    let client = client.respond(response::text(
        "Thought: out of steps.\nFinal Answer: I could not finish.",
    ));
    let outcome = react_agent(&client)
        .run(Vec::new(), "count", &ToolContext::new())
        .await
        .expect("run");
    assert_eq!(outcome.result.stop_reason, RunEnd::MaxIterations);
    assert_eq!(outcome.result.response, "I could not finish.");
    assert_eq!(outcome.result.tool_calls.len(), 4);
    assert_eq!(
        outcome.steps.last().and_then(|s| s.final_answer.as_deref()),
        Some("I could not finish.")
    );
}
