//! A long chat on the real embedded model with a small context (4,096
//! tokens): the agent is built from configuration as `agentry` builds it,
//! so the window comes from `[providers.llama] context_size`; the history
//! outgrows it, is compacted, and every one of the 30 turns completes
//! without a context-length error. Skipped without the model unless
//! `AGENTRY_REQUIRE_MODEL` is set.
#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_app::config::{Overrides, Settings};
use agent_app::env::Env;
use agent_app::providers::{Progress, build_client};
use agent_app::{assemble, tools::ToolBox};
use agent_core::{Message, RunEnd};

const TURNS: u32 = 30;
const PLACES: [&str; 5] = [
    "the old harbour of Porto",
    "the markets of Lisbon",
    "the hills above Sintra",
    "the university quarter of Coimbra",
    "the beaches of the Algarve",
];
const CONTEXT: u64 = 4096;

#[test]
fn thirty_turns_fit_a_4096_token_context_by_compaction() {
    if !common::model_is_fetched() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agentry.toml");
    std::fs::write(
        &config,
        format!(
            "[agent]\nprovider = \"llama\"\nmax_tokens = 96\ntemperature = 0.0\nmax_iterations = 3\n\n\
             [tools]\nenabled = [\"math\"]\n\n[providers.llama]\ncontext_size = {CONTEXT}\n"
        ),
    )
    .unwrap();
    let env = Env::from_process();
    let overrides = Overrides {
        config: Some(config),
        ..Overrides::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let settings = Settings::load(&overrides, &env, dir.path()).unwrap();
        let tools = ToolBox::from_settings(&settings, &env).await.unwrap();
        let client = build_client(&settings, &env, Progress::Hide).await.unwrap();
        let agent = assemble::build_agent(&settings, client, &tools);
        assert_eq!(
            agent.config().context.window_tokens,
            Some(CONTEXT),
            "the window is the model's n_ctx"
        );

        let mut history = Vec::new();
        let mut compactions = 0;
        let mut largest_input = 0;
        for turn in 1..=TURNS {
            // About 120 tokens a turn with the answer: the history passes
            // the window's 80% after about 20 turns.
            let place = PLACES[turn as usize % PLACES.len()];
            let prompt = format!(
                "Day {turn} of my trip: this morning we walked through {place}, had a long lunch by the water, \
                 got lost twice on the way back and ended the evening with friends at a small restaurant where \
                 the owner told us stories about the town. My locker code for day {turn} is {}. \
                 What is {} times {}?",
                1000 + turn * 7,
                turn + 11,
                turn + 3
            );
            let result = agent.run(prompt.as_str()).history(history).await;
            let result = match result {
                Ok(result) => result,
                Err(error) => panic!("turn {turn} failed: {error}"),
            };
            assert_ne!(
                result.stop_reason,
                RunEnd::Error,
                "turn {turn}: {:?}",
                result.stop_detail
            );
            compactions += result.compactions.len();
            largest_input = result
                .model_calls
                .iter()
                .map(|call| call.usage.input_tokens)
                .fold(largest_input, u64::max);
            eprintln!(
                "turn {turn}: {} messages, {} compactions so far, largest prompt {largest_input} tokens",
                result.messages.len(),
                compactions
            );
            history = result.messages;
        }
        assert!(
            compactions > 0,
            "30 turns never filled the window: nothing was compacted"
        );
        assert!(largest_input < CONTEXT, "a prompt of {largest_input} tokens");
        let summary_first = matches!(
            &history[0],
            Message::System { content } if content.starts_with(agent_runner::context::SUMMARY_PREFIX)
        );
        assert!(
            summary_first,
            "the conversation goes on from a summary: {:?}",
            history[0]
        );
    });
}
