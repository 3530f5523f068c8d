//! The Travel Assistant demo, start to finish, on the real embedded model
//! (Qwen2.5-Coder-0.5B through llama.cpp).
//!
//! It needs the model in the store (`cargo xtask fetch-model`). Without it
//! the test is skipped with a message, unless `AGENTRY_REQUIRE_MODEL` is set
//! (as CI does), in which case it fails. The model's words are not asserted,
//! only what the framework guarantees: every turn completes without an
//! error, no reply shows tool-call markup or a call cut short, and the
//! iteration-limit turn, if it calls a tool, ends at the limit. The checker's verdicts
//! (`agentry demo --check`) are printed; their figures live in
//! docs/local-models.md, not in a test.
#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Instant;

use agent_app::assemble::catalog_for;
use agent_app::config::{Overrides, Settings};
use agent_app::demo::run_demo;
use agent_app::env::Env;
use agent_app::providers::{Progress, build_client};
use agent_console::{Console, SharedBuffer};
use agent_core::RunEnd;
use agent_travel_assistant::{LIMIT_TURN, TURNS};

#[test]
fn the_travel_demo_runs_start_to_finish_on_the_embedded_model() {
    if !common::model_is_fetched() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        // The defaults: provider llama, the embedded model; of the developer's
        // environment only `AGENTRY_PROVIDERS__LLAMA__*` overrides pass, e.g.
        // `AGENTRY_PROVIDERS__LLAMA__THREADS=1` on a busy machine.
        let env = Env::from_pairs(std::env::vars().filter(|(name, _)| name.starts_with("AGENTRY_PROVIDERS__LLAMA__")));
        let settings = Settings::load(&Overrides::default(), &env, dir.path()).unwrap();
        let client = build_client(&settings, &env, Progress::Hide).await.unwrap();
        let catalog = catalog_for(&settings, client.as_ref());
        let buffer = SharedBuffer::new();
        let mut console = Console::new(buffer.clone()).with_text_prefix("assistant> ");
        let started = Instant::now();
        // A fixed date: the prompt and the tools' data depend on it, and the
        // model decodes greedily, so the same date gives the same run. (On
        // some dates the 0.5B model answers the limit turn without a tool
        // call, which would make the test depend on the day it runs.)
        let options = agent_app::demo::options(&settings, chrono::NaiveDate::from_ymd_opt(2026, 11, 22));
        let reports = run_demo(client, catalog, &options, &mut console).await.unwrap();
        let transcript = buffer.contents();
        eprintln!("{transcript}");
        eprintln!("demo time: {:.1} s", started.elapsed().as_secs_f64());

        assert_eq!(reports.len(), TURNS.len());
        for (index, report) in reports.iter().enumerate() {
            // A turn may end by the loop's own failure rule (ARCHITECTURE,
            // tool errors: N consecutive iterations whose calls all failed
            // end the run with an error), as when the model retries the
            // tool that can never succeed; any other error is the
            // pipeline failing. Whether the model handled the error well
            // is the checker's verdict below.
            let failure_rule = report
                .result
                .stop_detail
                .as_deref()
                .is_some_and(|detail| detail.starts_with("every tool call failed in"));
            assert!(
                report.result.stop_reason != RunEnd::Error || failure_rule,
                "turn {} ({:?}) failed: {:?}",
                index + 1,
                report.prompt,
                report.result.stop_detail
            );
            assert!(
                !report.result.response.trim().is_empty() || !report.result.tool_calls.is_empty(),
                "turn {} produced nothing",
                index + 1
            );
        }
        for (index, report) in reports.iter().enumerate() {
            let response = &report.result.response;
            assert!(
                !["{\"name\"", "<tool_call>", "<tools>", "<|im_start|>"]
                    .iter()
                    .any(|markup| response.contains(markup)),
                "turn {} shows call markup: {response}",
                index + 1
            );
        }
        eprintln!("{}", agent_travel_assistant::check_demo(&reports, options.today));
        // With one iteration allowed, a turn that calls a tool must end at
        // the limit with a forced answer. (Whether the model calls one is
        // the model's doing: the checker's verdicts above say.)
        let limited = &reports[LIMIT_TURN].result;
        if !limited.tool_calls.is_empty() {
            assert!(
                matches!(limited.stop_reason, RunEnd::MaxIterations | RunEnd::LoopDetected),
                "the iteration-limit turn called tools and ended with {:?}",
                limited.stop_reason
            );
            assert!(transcript.contains("[stop: max_iterations"), "{transcript}");
        }
    });
}
