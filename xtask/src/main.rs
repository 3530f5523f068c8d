//! Project automation: `cargo xtask <command>`.
//!
//! - `ci`: formatting check, clippy with warnings denied, every test of
//!   the workspace, and every program of `examples/`; the same command CI
//!   runs (`.ci/run`).
//! - `examples`: runs every program of `examples/` (the last step of `ci`).
//! - `eval-local [MODEL,MODEL] [off|on|both] [--only TEXT]`: the
//!   tool-calling evaluation of the local models, without and/or with the
//!   grammar (docs/local-models.md); `--only` runs the cases whose category
//!   is TEXT or whose prompt contains it (several texts separated by `|`).
//! - `eval-conversations [MODEL[,MODEL]] [dev|test|both] [--grounding
//!   on|off]`: multi-turn conversations (travel and math tools) on local
//!   models through the agent `agentry run` builds, "today" fixed, judged
//!   turn by turn by rules and a strict figure judge; `dev` is for tuning,
//!   `test` is held out (default: the default model, both splits, grounding
//!   as configured).
//! - `fetch-model [NAME]`: downloads, assembles and verifies a local model
//!   (default `qwen2.5-coder-0.5b`) into the model store.

mod conversations;
mod eval;
mod examples;

use std::io::Write as _;
use std::process::{Command, ExitCode};

use agent_provider_llama::models::{self, FetchProgress, ModelStore};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("eval-local") => {
            let models: Vec<String> = match args.get(1) {
                Some(list) => list.split(',').map(str::to_owned).collect(),
                None => vec!["qwen2.5-coder-0.5b".to_owned(), "qwen2.5-coder-1.5b".to_owned()],
            };
            let grammar: &[bool] = match args.get(2).map(String::as_str) {
                None | Some("both") => &[false, true],
                Some("off") => &[false],
                Some("on") => &[true],
                Some(other) => {
                    eprintln!("xtask eval-local: grammar must be off, on or both, not `{other}`");
                    return ExitCode::from(2);
                }
            };
            let only = match (args.get(3).map(String::as_str), args.get(4)) {
                (None, _) => None,
                (Some("--only"), Some(text)) => Some(text.as_str()),
                (Some("--only"), None) => {
                    eprintln!("xtask eval-local: --only needs a text (part of a prompt, or a category)");
                    return ExitCode::from(2);
                }
                (Some(other), _) => {
                    eprintln!(
                        "xtask eval-local: unexpected argument `{other}`; usage: eval-local M,M off|on|both [--only TEXT]"
                    );
                    return ExitCode::from(2);
                }
            };
            match eval::run(&models, grammar, only) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("xtask eval-local: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("eval-conversations") => eval_conversations(&args[1..]),
        Some("examples") => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            match examples::run(&cargo) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("xtask examples: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("fetch-model") => fetch_model(args.get(1).map_or(models::DEFAULT_MODEL, String::as_str)),
        Some("help" | "--help" | "-h") | None => {
            println!(
                "usage: cargo xtask <command>\n\ncommands:\n  ci                  fmt check, clippy -D warnings, all tests, examples\n  examples            run every program of examples/\n  fetch-model [NAME]  download a local model (default {})\n  eval-local [M,M] [off|on|both] [--only TEXT]\n                      tool-calling success rates of the local models\n  eval-conversations [M,M] [dev|test|both] [--grounding on|off]\n                      multi-turn conversations on local models, judged turn by turn",
                models::DEFAULT_MODEL
            );
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("xtask: unknown command `{other}`; run `cargo xtask help`");
            ExitCode::from(2)
        }
    }
}

/// Runs each step in order and stops at the first failure.
fn ci() -> ExitCode {
    let steps: [(&str, &[&str]); 3] = [
        ("format", &["fmt", "--all", "--", "--check"]),
        (
            "lint",
            &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
        ),
        ("test", &["test", "--workspace"]),
    ];
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for (name, args) in steps {
        eprintln!("==> xtask ci: {name}: cargo {}", args.join(" "));
        match Command::new(&cargo).args(args).status() {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("xtask ci: step `{name}` failed ({status})");
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("xtask ci: could not start cargo for step `{name}`: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Err(error) = examples::run(&cargo) {
        eprintln!("xtask ci: step `examples` failed: {error}");
        return ExitCode::FAILURE;
    }
    eprintln!("==> xtask ci: all steps passed");
    ExitCode::SUCCESS
}

/// Fetches a model into the default store, printing progress.
fn fetch_model(name: &str) -> ExitCode {
    let store = ModelStore::default_location();
    let mut last_percent = None;
    let result = store.fetch(name, &mut |progress| match progress {
        FetchProgress::Downloading { part, parts } => eprintln!("xtask fetch-model: downloading part {part}/{parts}"),
        FetchProgress::Assembling { done, total } => {
            let percent = done * 100 / total.max(1);
            if last_percent != Some(percent / 10) {
                last_percent = Some(percent / 10);
                eprint!("\rxtask fetch-model: assembling {percent:>3}%");
                let _ = std::io::stderr().flush();
            }
        }
    });
    match result {
        Ok(path) => {
            eprintln!();
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("\nxtask fetch-model: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `eval-conversations [MODEL[,MODEL]] [dev|test|both] [--grounding on|off]`.
fn eval_conversations(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: cargo xtask eval-conversations [MODEL[,MODEL]] [dev|test|both] [--grounding on|off]";
    let mut models = vec![models::DEFAULT_MODEL.to_owned()];
    let mut splits = vec![conversations::Split::Dev, conversations::Split::Test];
    let mut grounding = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "dev" => splits = vec![conversations::Split::Dev],
            "test" => splits = vec![conversations::Split::Test],
            "both" => splits = vec![conversations::Split::Dev, conversations::Split::Test],
            "--grounding" => match rest.next().map(String::as_str) {
                Some("on") => grounding = Some(true),
                Some("off") => grounding = Some(false),
                _ => {
                    eprintln!("xtask eval-conversations: --grounding needs on or off; {USAGE}");
                    return ExitCode::from(2);
                }
            },
            other if !other.starts_with('-') && !other.is_empty() => {
                models = other
                    .split(',')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            other => {
                eprintln!("xtask eval-conversations: unexpected argument `{other}`; {USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if models.is_empty() {
        eprintln!("xtask eval-conversations: no model named; {USAGE}");
        return ExitCode::from(2);
    }
    match conversations::run(&models, &splits, grounding) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask eval-conversations: {error}");
            ExitCode::FAILURE
        }
    }
}
