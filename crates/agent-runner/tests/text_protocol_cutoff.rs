//! A text-protocol reply is read only until its calls are complete: at the
//! call cap or the first repeated call the driver stops reading the stream
//! (docs/loop.md, behaviour 21). What the scripted stream holds after that
//! point would fail the run if it were read: a fragment of a call that
//! never started.

mod common;

use std::sync::Arc;

use agent_core::{AgentEvent, Message, RunEnd, StopReason, StreamEvent, ToolOutput};
use agent_testing::{TestTool, TestTools, ToolBehaviour, response};
use futures::StreamExt;
use serde_json::json;

fn weather() -> TestTools {
    TestTools::new("travel").with(
        TestTool::new(
            "get_weather",
            ToolBehaviour::Compute(Arc::new(|args: &serde_json::Value| {
                Ok(ToolOutput::Json(json!({"city": args["city"], "celsius": 20})))
            })),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        })),
    )
}

fn call(city: &str) -> StreamEvent {
    StreamEvent::TextDelta {
        text: format!(
            "<tool_call>{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}</tool_call>\n"
        ),
    }
}

/// A reply of `events`, then what must never be read: a fragment of a
/// call that never started (an accumulator error), more calls, the end.
fn reply_then_garbage(mut events: Vec<StreamEvent>) -> Vec<StreamEvent> {
    events.push(StreamEvent::ToolCallDelta {
        index: 7,
        arguments: "{".into(),
    });
    events.extend([call("Lima"), call("Bern")]);
    events.push(StreamEvent::Stop {
        reason: StopReason::EndTurn,
    });
    events
}

fn cities(result: &agent_core::AgentRunResult) -> Vec<String> {
    result
        .tool_calls
        .iter()
        .map(|call| call.arguments["city"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn an_unwatched_reply_is_read_until_its_calls_reach_the_cap() {
    let client = common::text_only()
        .stream_events(reply_then_garbage(vec![
            StreamEvent::TextDelta {
                text: "Checking both.\n".into(),
            },
            call("Oslo"),
            call("Rome"),
        ]))
        .respond(response::text("Oslo and Rome are both at 20 °C."));
    let agent = common::agent_with(&client, weather())
        .tool_protocol(agent_runner::ToolProtocol::Text)
        .max_calls_per_reply(2)
        .build();
    let result = agent
        .run("Weather in Oslo and Rome?")
        .await
        .expect("the run reads no further than the two calls");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(cities(&result), ["Oslo", "Rome"]);
    let requests = client.requests();
    let Some(Message::Assistant(reply)) = requests[1].messages.iter().rev().nth(1) else {
        panic!("the reply is in the history: {:?}", requests[1].messages);
    };
    assert!(
        reply.content.contains("Rome") && !reply.content.contains("Lima"),
        "{}",
        reply.content
    );
}

#[tokio::test]
async fn a_streamed_reply_ends_at_its_first_repeated_call() {
    let client = common::text_only()
        .stream_events(reply_then_garbage(vec![call("Oslo"), call("Rome"), call("Oslo")]))
        .respond(response::text("Oslo and Rome are both at 20 °C."));
    let agent = common::agent_with(&client, weather())
        .tool_protocol(agent_runner::ToolProtocol::Text)
        .build();
    let mut events = agent.run("Weather in Oslo and Rome?").stream();
    let mut finished = None;
    while let Some(event) = events.next().await {
        if let AgentEvent::RunFinished { result, .. } = event {
            finished = Some(result);
        }
    }
    let result = finished.expect("the run finished");
    assert_eq!(result.stop_reason, RunEnd::Completed, "{:?}", result.stop_detail);
    assert_eq!(cities(&result), ["Oslo", "Rome"]);
}
