//! A reply that only repeats calls already answered in the run
//! (`reask_repeated_calls`, on by default): it does not run, the model is
//! asked once more with the calls and the question restated, and a second
//! such reply forces the answer. With the scripted client, for every path.

mod common;

use agent_core::{AgentEvent, AgentRunResult, Message, RunEnd, ToolChoice};
use agent_testing::{ScriptedClient, response};
use futures::StreamExt;
use serde_json::json;

fn weather(city: &str, unit: &str) -> agent_core::ChatResponse {
    response::tool_calls([("weather", json!({"location": city, "unit": unit}))])
}

async fn run(client: &ScriptedClient, reask: bool) -> AgentRunResult {
    common::agent(client)
        .reask_repeated_calls(reask)
        .build()
        .run("How warm is it in Oslo and in Rome?")
        .await
        .unwrap_or_else(|error| *error.result)
}

fn last_user_message(request: &agent_core::ChatRequest) -> Option<&str> {
    match request.messages.last() {
        Some(Message::User { content, .. }) => Some(content.as_str()),
        _ => None,
    }
}

#[tokio::test]
async fn a_repeated_call_is_not_run_and_the_reminder_leads_to_the_next_call() {
    let client = ScriptedClient::new()
        .respond(weather("Oslo", "celsius"))
        // The same place in other units: the same required argument.
        .respond(weather("Oslo", "fahrenheit"))
        .respond(weather("Rome", "celsius"))
        .respond(response::text("Oslo and Rome are both at 21 °C."));
    let result = run(&client, true).await;
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "Oslo and Rome are both at 21 °C.");
    let places: Vec<&str> = result
        .tool_calls
        .iter()
        .filter_map(|call| call.arguments["location"].as_str())
        .collect();
    assert_eq!(places, ["Oslo", "Rome"], "the repeat never ran");

    let requests = client.requests();
    assert_eq!(requests.len(), 4);
    let reminder = last_user_message(&requests[2]).expect("the re-ask ends with the reminder");
    assert!(
        reminder.contains(r#"weather({"location":"Oslo","unit":"celsius"})"#)
            && reminder.ends_with("My question was: How warm is it in Oslo and in Rome?"),
        "{reminder}"
    );
    assert_eq!(requests[2].tool_choice, ToolChoice::Auto, "further calls stay open");
    // The reminder was transient, and the repeat never entered the history.
    assert!(
        matches!(requests[3].messages.last(), Some(Message::Tool(_))),
        "{:?}",
        requests[3].messages.last()
    );
    let users = result
        .messages
        .iter()
        .filter(|message| matches!(message, Message::User { .. }))
        .count();
    assert_eq!(users, 1, "only the user's own message stays");
    let assistant_calls: usize = result
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(reply) => Some(reply.tool_calls.len()),
            _ => None,
        })
        .sum();
    assert_eq!(assistant_calls, 2);
}

#[tokio::test]
async fn a_second_repeat_forces_the_answer() {
    let client = ScriptedClient::new()
        .respond(weather("Oslo", "celsius"))
        .respond(weather("Oslo", "fahrenheit"))
        .respond(response::tool_calls([("weather", json!({"location": "Oslo"}))]))
        .respond(response::text("It is 21 °C in Oslo."));
    let result = run(&client, true).await;
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    assert_eq!(result.response, "It is 21 °C in Oslo.");
    assert_eq!(result.tool_calls.len(), 1, "only the first call ran");
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(r#"the model repeated the same tool calls: weather({"location":"Oslo"}); the answer was forced"#)
    );
    let choices: Vec<ToolChoice> = client.requests().iter().map(|r| r.tool_choice.clone()).collect();
    assert_eq!(
        choices,
        [ToolChoice::Auto, ToolChoice::Auto, ToolChoice::Auto, ToolChoice::None]
    );
}

#[tokio::test]
async fn a_result_fed_back_to_its_tool_counts_as_a_repeat() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"text": "hello"}))]))
        // `echo` returned {"text": "hello"}: the same value again adds nothing.
        .respond(response::tool_calls([("echo", json!({"value": "hello"}))]))
        .respond(response::text("It said hello."));
    let result = run(&client, true).await;
    assert_eq!(result.response, "It said hello.");
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(client.requests().len(), 3);
}

#[tokio::test]
async fn a_reply_with_text_or_a_new_call_runs_as_usual() {
    // A new call beside a repeated one: both run.
    let client = ScriptedClient::new()
        .respond(weather("Oslo", "celsius"))
        .respond(response::tool_calls([
            ("weather", json!({"location": "Oslo", "unit": "celsius"})),
            ("weather", json!({"location": "Rome", "unit": "celsius"})),
        ]))
        .respond(response::text("Both are at 21 °C."));
    let result = run(&client, true).await;
    assert_eq!(result.tool_calls.len(), 3);
    assert_eq!(result.stop_reason, RunEnd::Completed);

    // A repeat after the user's next message is not a repeat: a new turn.
    let client = ScriptedClient::new()
        .respond(weather("Oslo", "celsius"))
        .respond(response::text("21 °C."))
        .respond(weather("Oslo", "celsius"))
        .respond(response::text("Still 21 °C."));
    let agent = common::agent(&client).build();
    let first = agent.run("Oslo?").await.unwrap_or_else(|error| *error.result);
    let second = agent
        .run("And now?")
        .history(first.messages)
        .await
        .unwrap_or_else(|error| *error.result);
    assert_eq!(second.tool_calls.len(), 1, "the call of the new turn ran");
    assert_eq!(second.response, "Still 21 °C.");
}

#[tokio::test]
async fn exactly_the_previous_rounds_calls_again_are_a_loop_not_a_re_ask() {
    // ARCHITECTURE.md, behaviour 5: the next request forces the answer.
    let client = ScriptedClient::new()
        .respond(weather("Oslo", "celsius"))
        .respond(weather("Oslo", "celsius"))
        .respond(response::text("21 °C."));
    let result = run(&client, true).await;
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    let choices: Vec<ToolChoice> = client.requests().iter().map(|r| r.tool_choice.clone()).collect();
    assert_eq!(choices, [ToolChoice::Auto, ToolChoice::Auto, ToolChoice::None]);
}

#[tokio::test]
async fn switched_off_the_repeat_runs() {
    let client = ScriptedClient::new()
        .respond(weather("Oslo", "celsius"))
        .respond(weather("Oslo", "fahrenheit"))
        .respond(response::text("21 °C."));
    let result = run(&client, false).await;
    assert_eq!(result.tool_calls.len(), 2, "the repeat ran");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(client.requests().len(), 3);
}

#[tokio::test]
async fn the_re_ask_is_reported_as_an_event() {
    let client = ScriptedClient::new()
        .respond(weather("Oslo", "celsius"))
        .respond(weather("Oslo", "fahrenheit"))
        .respond(response::text("21 °C."));
    let agent = common::agent(&client).build();
    let mut stream = agent.run("Oslo?").stream();
    let mut repeated = Vec::new();
    while let Some(event) = stream.next().await {
        if let AgentEvent::CallsRepeated { iteration, tools } = event {
            repeated.push((iteration, tools));
        }
    }
    assert_eq!(repeated, [(2, vec!["weather".to_owned()])]);
}
