//! The Travel Assistant demo on the embedded local model (Qwen2.5-Coder-0.5B
//! run in-process by llama.cpp): the ten turns of `agentry demo` through the
//! `agent-travel-assistant` library, each turn's answer, tools and stop
//! reason, then the checker's verdicts. No key, no server, no network once
//! the model is fetched.
//!
//! ```sh
//! cargo xtask fetch-model                         # once: ~491 MB, verified
//! cargo run --release --example travel_assistant
//! ```
//!
//! Without the model it stops at once, saying what to run.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Instant;

use agent_core::ModelCatalog;
use agent_provider_llama::{LlamaClient, LlamaConfig};
use agent_travel_assistant::{DemoEvent, DemoOptions, DemoTotals, check_demo, run_turns};

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("travel_assistant: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    // Loading blocks for about a second; a missing model is an error that
    // says to run `cargo xtask fetch-model`.
    let client = tokio::task::spawn_blocking(|| LlamaClient::load(LlamaConfig::default())).await??;

    // As `agentry demo` runs it on the local model: today's date, 5
    // iterations a turn (1 for the limit turn), greedy decoding, and one
    // worked example to open the conversation, which a 0.5B model copies.
    let options = DemoOptions::default();
    let reports = run_turns(Arc::new(client), Arc::new(ModelCatalog::new()), &options, |event| {
        let mut out = std::io::stdout();
        match event {
            DemoEvent::Started {
                provider, model, today, ..
            } => writeln!(out, "Travel Assistant · {provider}/{model} · today is {today}"),
            DemoEvent::TurnStarted { index, turn, .. } => {
                writeln!(out, "\n{}/10 · {}\nyou> {}", index + 1, turn.shows, turn.prompt)
            }
            DemoEvent::TurnFinished { report, .. } => {
                let result = &report.result;
                let tools = report.tools_called();
                writeln!(out, "assistant> {}", result.response.trim())?;
                writeln!(
                    out,
                    "   tools: {} · stop: {} · {:.1} s",
                    if tools.is_empty() {
                        "none".to_owned()
                    } else {
                        tools.join(", ")
                    },
                    result.stop_reason.as_str(),
                    report.elapsed.as_secs_f64()
                )
            }
            _ => Ok(()),
        }
    })
    .await?;

    println!("\n{}", check_demo(&reports, options.today));
    let totals = DemoTotals::of(&reports);
    println!(
        "{} turns · {} tool calls · {} tokens · {:.1} s",
        totals.turns,
        totals.tool_calls,
        totals.usage.total_tokens(),
        started.elapsed().as_secs_f64()
    );
    // What the model says is the model's doing (the checker's verdicts above);
    // a turn that failed is the framework's.
    if totals.failed > 0 {
        return Err(format!("{} of {} turns failed", totals.failed, totals.turns).into());
    }
    Ok(())
}
