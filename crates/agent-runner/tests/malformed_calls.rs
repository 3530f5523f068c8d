//! A reply whose tool call the provider could not use
//! (`LlmErrorKind::MalformedToolCall`, e.g. Gemini's
//! `MALFORMED_FUNCTION_CALL`): the model is asked once to write the call
//! again, with a transient message naming the problem; a second malformed
//! reply in a row ends the run with the typed error. The history stays
//! sendable either way. With the scripted client, whole and streamed.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agent_core::{AgentEvent, ChatRequest, LlmError, LlmErrorKind, Message, RunEnd, StreamEvent};
use agent_runner::history::is_sendable;
use agent_testing::{Script, ScriptedClient, response};
use futures::StreamExt;
use serde_json::json;

const PROBLEM: &str = "Malformed function call: weather(location='Rome'";

fn malformed() -> LlmError {
    LlmError::malformed_tool_call(format!("finishReason MALFORMED_FUNCTION_CALL: {PROBLEM}"))
}

fn weather(city: &str) -> agent_core::ChatResponse {
    response::tool_calls([("weather", json!({"location": city}))])
}

fn last_user_message(request: &ChatRequest) -> Option<&str> {
    match request.messages.last() {
        Some(Message::User { content, .. }) => Some(content.as_str()),
        _ => None,
    }
}

fn user_messages(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|message| matches!(message, Message::User { .. }))
        .count()
}

#[tokio::test]
async fn one_malformed_call_is_answered_with_a_correction_and_the_run_completes() {
    let client = ScriptedClient::new()
        .respond(weather("Oslo"))
        .fail(malformed())
        .respond(weather("Rome"))
        .respond(response::text("Oslo and Rome are both at 21 °C."));
    let result = common::agent(&client)
        .build()
        .run("How warm is it in Oslo and in Rome?")
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "Oslo and Rome are both at 21 °C.");
    assert_eq!(result.tool_calls.len(), 2, "both calls ran");

    let requests = client.requests();
    assert_eq!(requests.len(), 4);
    // The re-ask is the failed request plus the correction, which names
    // the problem in the provider's words.
    let reasked = &requests[2].messages;
    assert_eq!(reasked[..reasked.len() - 1], requests[1].messages[..]);
    let correction = last_user_message(&requests[2]).expect("the re-ask ends with the correction");
    assert!(correction.contains(PROBLEM), "{correction}");
    assert!(correction.contains("again"), "{correction}");
    assert!(is_sendable(reasked), "{reasked:?}");
    // The correction was transient: the next request and the record hold
    // only the user's own message.
    assert!(matches!(requests[3].messages.last(), Some(Message::Tool(_))));
    assert_eq!(user_messages(&requests[3].messages), 1);
    assert_eq!(user_messages(&result.messages), 1);
    assert!(is_sendable(&result.messages));
}

#[tokio::test]
async fn two_malformed_calls_in_a_row_end_the_run_with_the_typed_error() {
    let client = ScriptedClient::new()
        .respond(weather("Oslo"))
        .fail(malformed())
        .fail(malformed());
    let error = common::agent(&client)
        .build()
        .run("How warm is it in Oslo and in Rome?")
        .await
        .unwrap_err();
    assert_eq!(client.requests().len(), 3, "the call, then one re-ask");
    assert_eq!(error.result.stop_reason, RunEnd::Error);
    let source = error.source_error.expect("the run ended on the model's error");
    assert_eq!(source.kind, LlmErrorKind::MalformedToolCall);
    assert!(source.message.contains(PROBLEM), "{}", source.message);
    let messages = &error.result.messages;
    assert!(is_sendable(messages), "{messages:?}");
    assert!(
        matches!(messages.last(), Some(Message::Tool(_))),
        "no correction is left behind: {:?}",
        messages.last()
    );
    assert_eq!(user_messages(messages), 1);
}

#[tokio::test]
async fn a_later_malformed_call_after_a_usable_reply_is_corrected_again() {
    let client = ScriptedClient::new()
        .fail(malformed())
        .respond(weather("Oslo"))
        .fail(malformed())
        .respond(weather("Rome"))
        .respond(response::text("21 °C in both."));
    let result = common::agent(&client)
        .build()
        .run("How warm is it in Oslo and in Rome?")
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(client.requests().len(), 5);
    assert_eq!(result.tool_calls.len(), 2);
}

#[tokio::test]
async fn a_streamed_malformed_call_is_corrected_the_same_way() {
    let client = ScriptedClient::new()
        .push(
            Script::Events(vec![
                Ok(StreamEvent::Started { model: None, id: None }),
                Err(malformed()),
            ]),
            Duration::ZERO,
        )
        .respond(response::text("It is 21 °C in Rome."));
    let agent = common::agent(&client).build();
    let mut events = agent.run("How warm is it in Rome?").stream();
    let mut errors = 0;
    let mut finished = None;
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::Error { .. } => errors += 1,
            AgentEvent::RunFinished { result } => finished = Some(result),
            _ => {}
        }
    }
    let result = finished.expect("the run finished");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "It is 21 °C in Rome.");
    assert_eq!(errors, 0, "a corrected reply is no run error");
    let requests = client.requests();
    assert_eq!(requests.len(), 2);
    assert!(last_user_message(&requests[1]).is_some_and(|text| text.contains(PROBLEM)));
    assert_eq!(result.messages.len(), 2, "the question and the answer");
}

/// A reply whose call has no name (found by the `provider_streams` fuzz
/// target: a provider's reply can carry one) is malformed output, whatever
/// the provider: providers refuse an unnamed call in the history, so it is
/// never kept, and the model is asked to write the call again.
#[tokio::test]
async fn a_call_without_a_name_is_corrected_and_never_enters_the_history() {
    for name in ["", "  "] {
        let client = ScriptedClient::new()
            .respond(response::tool_calls([(name, json!({"location": "Rome"}))]))
            .respond(weather("Rome"))
            .respond(response::text("It is 21 °C in Rome."));
        let result = common::agent(&client)
            .build()
            .run("How warm is it in Rome?")
            .await
            .unwrap();
        assert_eq!(result.stop_reason, RunEnd::Completed);
        assert_eq!(result.tool_calls.len(), 1, "only the named call ran");
        let requests = client.requests();
        assert_eq!(requests.len(), 3);
        let correction = last_user_message(&requests[1]).expect("the re-ask ends with the correction");
        assert!(correction.contains("no name"), "{correction}");
        for request in &requests {
            assert!(is_sendable(&request.messages));
            assert!(!unnamed_call_in(&request.messages), "{:?}", request.messages);
        }
        assert!(!unnamed_call_in(&result.messages));
        assert_eq!(user_messages(&result.messages), 1);
        assert_eq!(result.usage.input_tokens, 30, "the malformed reply's usage counts too");
    }
}

fn unnamed_call_in(messages: &[Message]) -> bool {
    messages.iter().any(|message| match message {
        Message::Assistant(assistant) => assistant.tool_calls.iter().any(|call| call.name.trim().is_empty()),
        _ => false,
    })
}
