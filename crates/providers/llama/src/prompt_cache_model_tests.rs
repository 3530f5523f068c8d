//! The prompt cache on disk with the real model: a new engine (as in a new
//! process) reads a prompt it shares with a saved state from disk, replies
//! as an engine that evaluated it, and reads it again when the entry is
//! damaged or the prompt differs.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use agent_core::{CancellationToken, ModelProgress};
use tokio::sync::mpsc;

use crate::engine::{DiskCacheSettings, Engine, EngineSettings, Generated, GrammarUse, Job, Summary};
use crate::models::{DEFAULT_MODEL, ModelStore, known_model};
use crate::sampling::tests::model_is_fetched;

/// A context size no other test uses, so these engines share nothing
/// with the rest of the suite.
const CONTEXT_SIZE: u32 = 1792;

fn settings(cache: Option<&Path>, identity: &str) -> Option<EngineSettings> {
    if !model_is_fetched() {
        return None;
    }
    let known = known_model(DEFAULT_MODEL)?;
    Some(EngineSettings {
        path: ModelStore::default_location().path_of(known),
        threads: 2,
        context_size: CONTEXT_SIZE,
        batch_size: 512,
        prompt_cache: cache.map(|dir| DiskCacheSettings {
            dir: dir.to_path_buf(),
            max_bytes: 1 << 30,
            model_identity: identity.to_owned(),
        }),
    })
}

/// A prompt of a long system message (a few hundred tokens) and `question`.
fn prompt(question: &str) -> String {
    let mut rules = String::new();
    for n in 1..=40 {
        let _ = writeln!(rules, "Rule {n}: answer politely and keep rule {n} in mind.");
    }
    format!(
        "<|im_start|>system\nYou are a helpful assistant.\n{rules}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    )
}

/// The reply's text and figures.
async fn run(engine: &Arc<Engine>, prompt: String) -> (String, Summary) {
    let (text, summary, _) = run_with_progress(engine, prompt).await;
    (text, summary)
}

/// The reply's text, figures, and the progress reported on the way.
async fn run_with_progress(engine: &Arc<Engine>, prompt: String) -> (String, Summary, Vec<ModelProgress>) {
    let (out, mut generated) = mpsc::unbounded_channel();
    engine
        .submit(Job {
            prompt,
            max_tokens: 12,
            temperature: 0.0,
            seed: 0,
            stop: Vec::new(),
            suppress_tool_calls: false,
            grammar: None,
            grammar_use: GrammarUse::Lazy,
            call_limits: crate::echo::CallLimits::default(),
            cancel: CancellationToken::new(),
            out,
        })
        .expect("queued");
    let mut text = String::new();
    let mut progress = Vec::new();
    while let Some(item) = generated.recv().await {
        match item {
            Generated::Text(piece) => text.push_str(&piece),
            Generated::Progress(step) => progress.push(step),
            Generated::Done(summary) => return (text, summary, progress),
            Generated::Failed(error) => panic!("the job failed: {error}"),
        }
    }
    panic!("the engine stopped")
}

fn state_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .expect("the cache folder")
        .flatten()
        .map(|item| item.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "state"))
        .collect()
}

#[tokio::test]
async fn a_new_engine_reads_a_saved_prompt_from_disk_and_replies_the_same() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let Some(cached) = settings(Some(dir.path()), "the-default-model") else {
        return;
    };
    let first = Engine::start(cached.clone()).expect("the model loads");
    let (_, summary) = run(&first, prompt("Name a colour.")).await;
    assert_eq!(summary.loaded_tokens, 0, "nothing on disk yet");
    assert_eq!(state_files(dir.path()).len(), 1, "the state is saved");
    drop(first);

    let question = prompt("Name a fruit.");
    let second = Engine::start(cached.clone()).expect("the model loads");
    let (from_disk, summary, progress) = run_with_progress(&second, question.clone()).await;
    assert!(
        summary.loaded_tokens > 300 && summary.loaded_tokens == summary.reused_tokens,
        "the system prompt comes from disk: {summary:?}"
    );
    // The progress starts at what the disk gave, ends at the whole
    // prompt, then counts every token written.
    let total = summary.prompt_tokens;
    let reading: Vec<(u64, u64)> = progress
        .iter()
        .filter_map(|step| match step {
            ModelProgress::ReadingPrompt { done, total } => Some((*done, *total)),
            _ => None,
        })
        .collect();
    assert_eq!(reading.first(), Some(&(summary.loaded_tokens, total)), "{progress:?}");
    assert_eq!(reading.last(), Some(&(total, total)), "{progress:?}");
    let written = progress
        .iter()
        .filter(|step| matches!(step, ModelProgress::Writing { .. }))
        .count();
    assert_eq!(written as u64, summary.generated_tokens, "{progress:?}");
    drop(second);

    let uncached = settings(None, "").expect("settings");
    let plain = Engine::start(uncached).expect("the model loads");
    let (evaluated, summary) = run(&plain, question).await;
    assert_eq!(summary.loaded_tokens, 0);
    assert_eq!(from_disk, evaluated, "the same reply as when the prompt is evaluated");
}

#[tokio::test]
async fn a_damaged_state_or_another_prompt_is_read_from_the_model_instead() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let Some(cached) = settings(Some(dir.path()), "the-default-model") else {
        return;
    };
    let first = Engine::start(cached.clone()).expect("the model loads");
    run(&first, prompt("Name a colour.")).await;
    drop(first);

    // Another prompt from its first token on shares nothing.
    let other = Engine::start(cached.clone()).expect("the model loads");
    let (_, summary) = run(
        &other,
        "<|im_start|>user\nName a tree.<|im_end|>\n<|im_start|>assistant\n".into(),
    )
    .await;
    assert_eq!(summary.loaded_tokens, 0, "{summary:?}");
    drop(other);

    // The same weights under another identity (as another model's file
    // would be) are not used.
    let foreign = settings(Some(dir.path()), "another-model").expect("settings");
    let engine = Engine::start(foreign).expect("the model loads");
    let (_, summary) = run(&engine, prompt("Name a fruit.")).await;
    assert_eq!(summary.loaded_tokens, 0, "{summary:?}");
    drop(engine);

    // A state cut short is never loaded; the reply is still right.
    for state in state_files(dir.path()) {
        let file = std::fs::OpenOptions::new().write(true).open(&state).expect("the state");
        let length = file.metadata().expect("metadata").len();
        file.set_len(length / 2).expect("cut");
    }
    let engine = Engine::start(cached).expect("the model loads");
    let (reply, summary) = run(&engine, prompt("Name a fruit.")).await;
    assert_eq!(summary.loaded_tokens, 0, "{summary:?}");
    assert!(!reply.trim().is_empty(), "a reply: {reply:?}");
}
