//! Agentry's evaluations and measurements of the local models, run as
//! `cargo xtask <command>` (xtask runs this binary with cargo, so that its
//! own steps never wait for llama.cpp to build).
//!
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
//! - `measure-cache [ROUNDS]`: time to the first token of a follow-up
//!   `agentry run --session` turn, prompt cache on and off.
//! - `measure-tools [MODEL]`: the tokens each default tool costs in the
//!   local model's prompt.

mod conversations;
mod eval;
mod measure;
mod tool_tokens;

use std::process::ExitCode;

use agent_provider_llama::models;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
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
        Some("measure-tools") => match tool_tokens::run(args.get(1).map_or(models::DEFAULT_MODEL, String::as_str)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("xtask measure-tools: {error}");
                ExitCode::FAILURE
            }
        },
        Some("measure-cache") => match args.get(1).map_or(Ok(3), |rounds| rounds.parse::<usize>()) {
            Ok(rounds) if rounds > 0 => match measure::run(rounds) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("xtask measure-cache: {error}");
                    ExitCode::FAILURE
                }
            },
            _ => {
                eprintln!("xtask measure-cache: ROUNDS must be a whole number above 0");
                ExitCode::from(2)
            }
        },
        Some(other) => {
            eprintln!("agent-evals: unknown command `{other}`; run `cargo xtask help`");
            ExitCode::from(2)
        }
        None => {
            eprintln!("agent-evals: no command; run `cargo xtask help`");
            ExitCode::from(2)
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
