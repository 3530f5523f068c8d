//! An agent on the embedded local model (Qwen2.5-Coder-0.5B run in-process
//! by llama.cpp): no key, no server, no network once the model is fetched.
//!
//! ```sh
//! cargo xtask fetch-model                                   # once: ~491 MB, verified
//! cargo run --release --example local_model --features agentry/llama
//! ```
//!
//! Without the model it stops at once, saying what to run.

use std::io::Write as _;
use std::sync::Arc;

use agentry::prelude::*;

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("local_model: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let config = LlamaConfig {
        max_tokens: 256,
        context_size: 4096,
        ..LlamaConfig::default()
    };
    // Loading blocks for about a second; a missing model is an error that
    // says to run `cargo xtask fetch-model`.
    let client = tokio::task::spawn_blocking(move || LlamaClient::load(config)).await??;

    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You are a terse assistant. Use the calculator for arithmetic.")
        .tools_from(Arc::new(agentry::math::tool_set()))
        // A 0.5B model may call a tool again and again: after two rounds
        // the answer is forced from what the tools returned.
        .max_iterations(2)
        .temperature(0.0)
        .build();

    let mut events = agent.run("What is 1234 * 5678?").stream();
    let mut finished = None;
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                std::io::stdout().flush()?;
            }
            AgentEvent::ToolCompleted { name, result, .. } => println!("[{name} -> {result}]"),
            AgentEvent::RunFinished { result } => finished = Some(result),
            _ => {}
        }
    }
    let result = finished.ok_or("the stream ended without a result")?;
    println!(
        "\n({:?}, {} tool call(s), {} tokens)",
        result.stop_reason,
        result.tool_calls.len(),
        result.usage.total_tokens()
    );
    match result.stop_reason {
        RunEnd::Completed | RunEnd::MaxIterations | RunEnd::LoopDetected => Ok(()),
        other => Err(format!(
            "the run ended with {other:?}: {}",
            result.stop_detail.unwrap_or_default()
        )
        .into()),
    }
}
