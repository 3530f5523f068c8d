//! An agent's run as a stream of events: the answer's text as it is
//! generated, and each tool call as it starts and ends. Offline: the model
//! is a script streaming its reply in pieces (`cargo run --example streaming`).

use std::io::Write as _;
use std::sync::Arc;

use agent_testing::{ScriptedClient, response};
use agentry::core::{StopReason, StreamEvent};
use agentry::prelude::*;
use agentry::serde_json::json;

/// Arguments of `word_count`.
#[derive(Deserialize, JsonSchema)]
struct Text {
    /// The text to count the words of.
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let answer = ["The sentence ", "has ", "five ", "words."];
    let client = ScriptedClient::new()
        .respond(response::tool_calls([(
            "word_count",
            json!({"text": "the quick brown fox jumps"}),
        )]))
        .stream_events(
            answer
                .iter()
                .map(|piece| StreamEvent::TextDelta {
                    text: (*piece).to_owned(),
                })
                .chain([StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                }])
                .collect(),
        );

    let agent = Agent::builder(Arc::new(client))
        .tool(TypedTool::new(
            "word_count",
            "Counts the words of a text.",
            |args: Text, _: ToolContext| async move { Ok(args.text.split_whitespace().count().to_string()) },
        ))
        .build();

    let mut events = agent.run("How many words in 'the quick brown fox jumps'?").stream();
    let mut deltas = 0;
    let mut finished = None;
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::TextDelta { text } => {
                deltas += 1;
                print!("{text}");
                std::io::stdout().flush()?;
            }
            AgentEvent::ToolStarted { name, .. } => println!("[running {name}]"),
            AgentEvent::ToolCompleted { name, result, .. } => println!("[{name} -> {result}]"),
            AgentEvent::RunFinished { result } => finished = Some(result),
            _ => {}
        }
    }
    let result = finished.ok_or("the stream ended without a result")?;
    println!(
        "\n({:?}, {} text pieces, {} tool call)",
        result.stop_reason,
        deltas,
        result.tool_calls.len()
    );
    if result.stop_reason != RunEnd::Completed || deltas < answer.len() || result.response != answer.concat() {
        return Err(format!("unexpected run: {:?} {:?}", result.stop_reason, result.response).into());
    }
    Ok(())
}
