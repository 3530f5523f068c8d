//! Honest endings: a final answer the model stopped at its token limit
//! (`max_tokens`) ends the run with `RunEnd::MaxTokens` and a detail
//! naming the limit, never `completed`; awaited and streamed alike.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agent_core::{AgentEvent, RunEnd, StopReason, StreamEvent};
use agent_testing::{Script, ScriptedClient, response};
use futures::StreamExt;
use serde_json::json;

fn cut_off(text: &str) -> agent_core::ChatResponse {
    let mut reply = response::text(text);
    reply.stop_reason = StopReason::MaxTokens;
    reply
}

#[tokio::test]
async fn an_answer_cut_at_max_tokens_ends_with_max_tokens_and_says_so() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("weather", json!({"location": "Rome"}))]))
        .respond(cut_off("Rome is warm today, with a high of 21 °C and"));
    let result = common::agent(&client)
        .max_tokens(12)
        .build()
        .run("How warm is it in Rome?")
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::MaxTokens);
    assert_eq!(result.response, "Rome is warm today, with a high of 21 °C and");
    let detail = result.stop_detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("max_tokens = 12") && detail.contains("incomplete"),
        "{detail}"
    );
    assert_eq!(serde_json::to_value(result.stop_reason).unwrap(), json!("max_tokens"));
    assert_eq!(result.stop_reason.as_str(), "max_tokens");
}

#[tokio::test]
async fn a_finished_answer_still_completes() {
    let client = ScriptedClient::new().respond(response::text("21 °C."));
    let result = common::agent(&client)
        .max_tokens(12)
        .build()
        .run("Rome?")
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.stop_detail, None);
}

#[tokio::test]
async fn a_streamed_answer_cut_at_max_tokens_ends_with_max_tokens() {
    let client = ScriptedClient::new().push(
        Script::Events(vec![
            Ok(StreamEvent::Started { model: None, id: None }),
            Ok(StreamEvent::TextDelta {
                text: "Rome is warm today, and".into(),
            }),
            Ok(StreamEvent::Stop {
                reason: StopReason::MaxTokens,
            }),
        ]),
        Duration::ZERO,
    );
    let agent = common::agent(&client).build();
    let mut events = agent.run("How warm is it in Rome?").stream();
    let mut finished = None;
    while let Some(event) = events.next().await {
        if let AgentEvent::RunFinished { result } = event {
            finished = Some(result);
        }
    }
    let result = finished.expect("the run finished");
    assert_eq!(result.stop_reason, RunEnd::MaxTokens);
    assert_eq!(result.response, "Rome is warm today, and");
    assert!(
        result
            .stop_detail
            .as_deref()
            .is_some_and(|detail| detail.contains("the model's limit")),
        "{:?}",
        result.stop_detail
    );
}
