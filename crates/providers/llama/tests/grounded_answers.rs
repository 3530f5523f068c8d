//! The runner's grounding check on the real embedded model: after turns the
//! model answered from memory, it answers a weather question with an
//! invented temperature; with grounding on, that answer is re-asked with a
//! required call (the call grammar), and the user gets the tool's figure.
//!
//! Needs the model (`cargo xtask fetch-model`); skipped without it unless
//! `AGENTRY_REQUIRE_MODEL` is set.

use std::future::IntoFuture;
use std::sync::Arc;

use agent_core::{AgentRunResult, GroundingAction, Message, ToolOutput};
mod common;

use agent_provider_llama::{LlamaClient, LlamaConfig};
use agent_runner::grounding::{Evidence, ungrounded};
use agent_runner::{Agent, Grounding};
use agent_testing::{TestTool, TestTools, ToolBehaviour};
use serde_json::json;

const MADRID: &str = "Madrid, Spain: 6.9 °C (feels like 5.2 °C), sunny";

fn client() -> Option<LlamaClient> {
    // The call decided on the whole conversation only: read on the newest
    // message alone too (the default), the odds make "and in Madrid?" a
    // call at once (tests/call_decision.rs), and no figure is invented for
    // the check to catch.
    common::client_with(LlamaConfig {
        newest_message_odds: false,
        ..LlamaConfig::default()
    })
}

fn weather_tools() -> TestTools {
    TestTools::new("travel").with(
        TestTool::new(
            "get_weather",
            ToolBehaviour::Reply(ToolOutput::Json(json!({
                "summary": MADRID,
                "location": "Madrid, Spain",
                "temperature_c": 6.9,
                "condition": "sunny"
            }))),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {"location": {"type": "string", "description": "A city"}},
            "required": ["location"]
        })),
    )
}

/// Earlier turns the model answered without tools, as a small model does
/// once a conversation starts with small talk.
fn history() -> Vec<Message> {
    vec![
        Message::user("hey, what can you do?"),
        Message::assistant("I can tell you the weather and do arithmetic."),
        Message::user("cool. how warm is it in Rome today?"),
        Message::assistant("Rome is 24 °C today, with a clear sky."),
    ]
}

const QUESTION: &str = "and in Madrid?";

fn run(client: &LlamaClient, grounding: Grounding) -> AgentRunResult {
    let registry = agent_tools::ToolBox::new();
    registry.register(Arc::new(weather_tools()), true).expect("register");
    let agent = Agent::builder(Arc::new(client.clone()))
        .system_prompt("You are a travel assistant. Use the tools when they help.")
        .tools(Arc::new(registry))
        .grounding(grounding)
        .max_iterations(3)
        .max_tokens(96)
        .temperature(0.0)
        .build();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(agent.run(QUESTION).history(history()).into_future())
        .unwrap_or_else(|error| *error.result)
}

/// The answer's figures that neither the user nor a tool gave.
fn invented(result: &AgentRunResult) -> Vec<String> {
    let mut evidence = Evidence::new();
    for message in &result.messages {
        if let Message::User { content, .. } = message {
            evidence.add_user(content);
        }
    }
    for call in &result.tool_calls {
        evidence.add(&call.result);
    }
    ungrounded(&result.response, &evidence)
        .into_iter()
        .map(|figure| figure.text)
        .collect()
}

#[test]
fn an_invented_temperature_is_replaced_by_a_tool_call_on_the_real_model() {
    let Some(client) = client() else { return };

    let unchecked = run(&client, Grounding::Off);
    eprintln!("without grounding: {:?} {:?}", unchecked.response, unchecked.tool_calls);
    assert!(
        unchecked.tool_calls.is_empty() && !invented(&unchecked).is_empty(),
        "the model answers from memory with an invented figure: {:?}",
        unchecked.response
    );

    let checked = run(&client, Grounding::On);
    eprintln!("with grounding: {:?} {:?}", checked.response, checked.grounding);
    let grounding = checked.grounding.clone().expect("the check ran");
    assert_eq!(
        grounding.actions.first(),
        Some(&GroundingAction::ReaskedForCall),
        "{grounding:?}"
    );
    assert!(
        checked
            .tool_calls
            .iter()
            .any(|call| call.name == "get_weather" && !call.is_error),
        "the re-ask made the call: {:?}",
        checked.tool_calls
    );
    assert!(
        invented(&checked).is_empty(),
        "no invented figure reaches the user: {:?}",
        checked.response
    );
    assert!(
        checked.response.contains("6.9"),
        "the tool's figure is the answer: {:?}",
        checked.response
    );
}
