//! The response format goes only with the model calls that must give the
//! final answer (they cannot call tools): never while tools are offered,
//! on a forced final answer, on a typed run's correction, and on every
//! call of an agent without tools. Snapshot of what each call carried.

mod common;

use std::sync::Arc;

use agent_core::{ChatRequest, ResponseFormat, ToolChoice, ToolContext};
use agent_runner::Agent;
use agent_testing::{ScriptedClient, response};
use serde_json::{Value, json};

/// What a call offered and asked for, for the snapshot.
fn calls(requests: &[ChatRequest]) -> Vec<Value> {
    requests
        .iter()
        .map(|request| {
            json!({
                "tools": request.tools.iter().map(|tool| tool.name.as_str()).collect::<Vec<_>>(),
                "tool_choice": match request.tool_choice {
                    ToolChoice::None => "none",
                    ToolChoice::Auto => "auto",
                    _ => "other",
                },
                "response_format": request.response_format.as_ref().map(|format| format.name.as_str()),
            })
        })
        .collect()
}

fn format() -> ResponseFormat {
    ResponseFormat {
        name: "answer".into(),
        schema: json!({"type": "object", "required": ["city"]}),
        strict: false,
    }
}

#[tokio::test]
async fn the_format_goes_only_with_calls_that_must_answer() {
    // A typed run with tools: a tool call, an answer that is not JSON, the correction.
    let typed = common::json_schema_client()
        .respond(response::tool_calls([("echo", json!({"city": "Oslo"}))]))
        .respond(response::text("Oslo, I think."))
        .respond(response::text(r#"{"city": "Oslo"}"#));
    let agent = common::agent(&typed).build();
    let schema = format().schema;
    let run = agent
        .run_json(vec![], "Which city?", schema.clone(), &ToolContext::new())
        .await
        .expect("valid on the correction");
    assert_eq!(run.attempts, 2);

    // A run whose iteration limit forces the final answer.
    let forced = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"n": 1}))]))
        .respond(response::text(r#"{"city": "Oslo"}"#));
    let agent = common::agent(&forced).max_iterations(1).build();
    let state = agent
        .start(Vec::new(), "Which city?")
        .with_response_format(Some(format()));
    agent.resume(state).await.expect("a forced answer");

    // An agent without tools: every call must answer.
    let bare = common::json_schema_client().respond(response::text(r#"{"city": "Oslo"}"#));
    Agent::builder(Arc::new(bare.clone()))
        .build()
        .run_json(vec![], "Which city?", schema, &ToolContext::new())
        .await
        .expect("a valid answer");

    insta::assert_json_snapshot!(json!({
        "typed run with tools": calls(&typed.requests()),
        "forced final answer": calls(&forced.requests()),
        "agent without tools": calls(&bare.requests()),
    }));
}

#[tokio::test]
async fn a_client_whose_format_keeps_tool_calls_gets_it_with_every_call() {
    let client = ScriptedClient::new()
        .with_capabilities(agent_core::Capabilities {
            native_tools: true,
            json_schema: true,
            format_with_tools: true,
            ..agent_core::Capabilities::default()
        })
        .respond(response::tool_calls([("echo", json!({"city": "Oslo"}))]))
        .respond(response::text(r#"{"city": "Oslo"}"#));
    let agent = common::agent(&client).build();
    let run = agent
        .run_json(vec![], "Which city?", format().schema, &ToolContext::new())
        .await
        .expect("a valid answer");
    assert_eq!(run.attempts, 1);
    let requests = client.requests();
    assert!(
        requests
            .iter()
            .all(|request| !request.tools.is_empty() && request.response_format.is_some())
    );
    // The format says it: the question goes as it is.
    let Some(agent_core::Message::User { content, .. }) = requests[0].messages.last() else {
        panic!("no user message");
    };
    assert_eq!(content, "Which city?");
}
