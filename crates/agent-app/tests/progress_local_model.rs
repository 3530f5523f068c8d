//! The progress display on the real embedded model (Qwen2.5-Coder-0.5B
//! through llama.cpp): `agentry run` on a pseudo-terminal shows the model
//! loading, reading the prompt and writing, and leaves only the answer.
//!
//! It needs the model in the store (`cargo xtask fetch-model`). Without it
//! the test is skipped with a message, unless `AGENTRY_REQUIRE_MODEL` is set
//! (as CI does), in which case it fails.
#![cfg(all(feature = "llama", unix))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod pty_support;

use std::time::Duration;

use pty_support::TerminalRun;

#[test]
fn a_local_run_on_a_terminal_shows_loading_reading_and_writing() {
    if !common::model_is_fetched() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The model store is the user's: HOME and AGENTRY_HOME pass (and
    // `AGENTRY_PROVIDERS__LLAMA__*`, e.g. THREADS=1 on a busy machine);
    // nothing else of the developer's environment does.
    let mut run = TerminalRun::new(dir.path(), &["run", "--provider", "llama", "What is 17 times 23?"])
        .timeout(Duration::from_secs(300));
    for (name, value) in std::env::vars() {
        if matches!(name.as_str(), "HOME" | "AGENTRY_HOME" | "XDG_CACHE_HOME")
            || name.starts_with("AGENTRY_PROVIDERS__LLAMA__")
        {
            run = run.env(&name, value);
        }
    }
    let shown = run.run();
    let drawn = shown.everything();
    assert_eq!(shown.code, 0, "{drawn}");
    for phase in ["loading qwen2.5-coder-0.5b", "reading the prompt ", "writing "] {
        assert!(drawn.contains(phase), "`{phase}` is shown:\n{drawn}");
    }
    let screen = shown.final_screen();
    eprintln!("{screen}");
    for phase in ["loading", "reading the prompt", "writing"] {
        assert!(!screen.contains(phase), "`{phase}` is left on the screen:\n{screen}");
    }
    assert!(!screen.trim().is_empty(), "the answer is on the screen");
}
