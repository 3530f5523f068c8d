//! The call is decided per user message on the real embedded model: after
//! turns of small talk the model answered without tools, a question that
//! needs a tool still gets its call, because the odds of a call are also
//! read on the newest message alone (`newest_message_odds`, on by default).
//!
//! Needs the model (`cargo xtask fetch-model`); skipped without it unless
//! `AGENTRY_REQUIRE_MODEL` is set.

use agent_core::{ChatRequest, ChatResponse, Message};
mod common;

use agent_provider_llama::{LlamaClient, LlamaConfig};

fn client(newest_message_odds: bool) -> Option<LlamaClient> {
    common::client_with(LlamaConfig {
        context_size: 4096,
        newest_message_odds,
        ..LlamaConfig::default()
    })
}

/// Two turns of small talk answered in prose, then `question`.
fn after_small_talk(question: &str) -> ChatRequest {
    let mut request = ChatRequest::new(vec![
        Message::user("hey there! what kinds of things can you help me with?"),
        Message::assistant("Hi! I'm happy to chat about your travel plans and answer your questions."),
        Message::user("nice. I'm planning a trip next month, just daydreaming for now."),
        Message::assistant("That sounds exciting! Let me know if there is anything I can help with."),
        Message::user(question),
    ])
    .with_system("You are a helpful travel assistant. Use the tools when they help.");
    request.tools = common::weather_and_calculator().into();
    request.max_tokens = Some(48);
    request.temperature = Some(0.0);
    request
}

fn called(response: &ChatResponse) -> Vec<&str> {
    response
        .message
        .tool_calls
        .iter()
        .map(|call| call.name.as_str())
        .collect()
}

#[test]
fn after_small_talk_a_question_needing_a_tool_gets_its_call() {
    let question = "what's the weather like in Lisbon right now?";
    let Some(by_history) = client(false) else { return };
    let unchecked = common::reply(&by_history, &after_small_talk(question));
    eprintln!("decided on the whole conversation: {:?}", unchecked.message);
    assert!(
        called(&unchecked).is_empty(),
        "the conversation's shape talks the model out of the call: {:?}",
        unchecked.message
    );
    drop(by_history);

    let Some(per_message) = client(true) else { return };
    let decided = common::reply(&per_message, &after_small_talk(question));
    eprintln!("decided on the newest message too: {:?}", decided.message);
    assert_eq!(called(&decided), ["get_weather"], "{:?}", decided.message);
    let city = decided.message.tool_calls[0].arguments["city"]
        .as_str()
        .unwrap_or_default();
    assert!(
        city.contains("Lisbon") || city.contains("Lisboa"),
        "{:?}",
        decided.message.tool_calls
    );
}

#[test]
fn small_talk_after_small_talk_still_gets_no_call() {
    let Some(client) = client(true) else { return };
    let response = common::reply(
        &client,
        &after_small_talk("haha, thanks, you're sweet. have a nice evening!"),
    );
    eprintln!("{:?}", response.message);
    assert!(called(&response).is_empty(), "{:?}", response.message);
    assert!(!response.message.content.trim().is_empty(), "{:?}", response.message);
}

/// The model, made to call by its odds on the message alone, writes the
/// same call line after line; the reply ends at the first repeat instead
/// of at `max_tokens`, and its complete calls are read (a fence left open
/// included).
#[test]
fn a_call_written_twice_ends_the_reply_and_its_calls_are_kept() {
    let Some(client) = client(true) else { return };
    let response = common::reply(&client, &after_small_talk("what's 17 times 23?"));
    eprintln!("{:?} {:?}", response.message, response.stop_reason);
    assert_ne!(
        response.stop_reason,
        agent_core::StopReason::MaxTokens,
        "{:?}",
        response.message
    );
    let calls = &response.message.tool_calls;
    assert!(!calls.is_empty(), "{:?}", response.message);
    for call in calls {
        assert_eq!(call.name, "calculator", "{calls:?}");
        let expression = call.arguments["expression"].as_str().unwrap_or_default();
        assert!(expression.contains("17") && expression.contains("23"), "{calls:?}");
    }
}
