//! `cargo xtask eval-conversations`: multi-turn conversations on the local
//! model, through the agent `agentry run` builds (same system prompt, tools,
//! loop settings and grounding), one turn after another with the history
//! carried as `run --session` carries it. "Today" is fixed so relative dates
//! are reproducible.
//!
//! Each turn is judged by rules on its calls and its answer ([`Expect`]),
//! and by a figure judge of its own, stricter than the runner's: every
//! number of an answer must appear in the user's words, the system prompt
//! or a tool result of the conversation so far. An ungrounded answer is
//! never right.
//!
//! Two splits: `dev` (tune on it) and `test` (held out: never tuned on).

mod dev;
mod held_out;
mod judge;

use std::sync::Arc;
use std::time::Instant;

use agent_app::assemble::{configure_agent, default_system_prompt};
use agent_app::config::{Overrides, Settings};
use agent_app::env::Env;
use agent_app::providers::{Progress, build_client};
use agent_app::tools::ToolBox;
use agent_core::{AgentRunResult, Message, ToolContext, ToolProvider};
use agent_runner::Agent;
use agent_tools_travel::{NaiveDate, TravelTools};

use judge::judge;

/// One expected tool call: the tool (`math` = `calculator` or
/// `arithmetic`) and texts its arguments must contain, each one of
/// `|`-separated alternatives, case-insensitive.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// The tool.
    pub tool: &'static str,
    /// Texts of the arguments.
    pub args: &'static [&'static str],
    /// The call is expected to fail (an unknown place, a bad input).
    pub fails: bool,
}

/// What a turn must do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    /// Calls that must be among the turn's calls.
    pub calls: &'static [Call],
    /// No tool may be called.
    pub no_call: bool,
    /// The answer must be a question back to the user, with no successful call.
    pub asks: bool,
    /// The answer must contain one of these (`|` alternatives are written
    /// as separate entries), case-insensitive; empty: any answer.
    pub answer_any: &'static [&'static str],
}

/// One user turn.
#[derive(Debug, Clone, Copy)]
pub struct Turn {
    /// What the user writes.
    pub user: &'static str,
    /// What must happen.
    pub expect: Expect,
}

/// A conversation: its name and its turns.
#[derive(Debug, Clone, Copy)]
pub struct Conversation {
    /// A short name.
    pub name: &'static str,
    /// What it covers (chit-chat, memory, missing argument...).
    pub kinds: &'static [&'static str],
    /// The turns, in order.
    pub turns: &'static [Turn],
}

/// The date the conversations take as today (a Monday).
pub fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 6, 1).unwrap_or_default()
}

/// The splits by name.
pub fn split(name: &str) -> Option<&'static [Conversation]> {
    match name {
        "dev" => Some(dev::CONVERSATIONS),
        "test" => Some(held_out::CONVERSATIONS),
        _ => None,
    }
}

/// The score of one split.
#[derive(Debug, Default)]
struct Score {
    right: usize,
    turns: usize,
    ungrounded: usize,
    seconds: f64,
}

/// Runs the splits on `model` with grounding `on` (or off) and prints a
/// line per turn on stderr and a table row per split on stdout.
pub fn run(model: &str, splits: &[&str], grounding: bool) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let workdir = std::env::temp_dir().join("agentry-eval-conversations");
    std::fs::create_dir_all(&workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;
    let overrides = Overrides {
        provider: Some("llama".to_owned()),
        model: Some(model.to_owned()),
        ..Overrides::default()
    };
    let env = Env::from_process();
    let mut settings = Settings::load(&overrides, &env, &workdir).map_err(|e| e.to_string())?;
    settings.config.agent.grounding = Some(grounding);
    let client = runtime
        .block_on(build_client(&settings, &env, Progress::Hide))
        .map_err(|e| e.to_string())?;
    let providers: Vec<Arc<dyn ToolProvider>> = vec![
        Arc::new(agent_tools_math::tool_set()),
        Arc::new(TravelTools::with_today(today()).tool_set()),
    ];
    let tools = ToolBox::from_providers(providers).map_err(|e| e.to_string())?;
    let system_prompt = default_system_prompt(today());
    let configure = configure_agent(&settings, client.as_ref());
    let agent: Agent = configure(Agent::builder(client))
        .name("agentry")
        .system_prompt(system_prompt.clone())
        .tools(tools.registry())
        .build();

    println!("| model | grounding | split | turns right | ungrounded answers | s/turn |");
    println!("|---|---|---|---|---|---|");
    for name in splits {
        let conversations = split(name).ok_or_else(|| format!("no split `{name}`: dev or test"))?;
        let mut score = Score::default();
        for conversation in conversations {
            let mut history: Vec<Message> = Vec::new();
            for (index, turn) in conversation.turns.iter().enumerate() {
                let started = Instant::now();
                let outcome = runtime.block_on(agent.run(history.clone(), turn.user, &ToolContext::new()));
                let result: AgentRunResult = match outcome {
                    Ok(result) => result,
                    Err(error) => *error.result,
                };
                let seconds = started.elapsed().as_secs_f64();
                let verdict = judge(&turn.expect, &result, &system_prompt);
                score.turns += 1;
                score.right += usize::from(verdict.right());
                score.ungrounded += usize::from(!verdict.invented.is_empty());
                score.seconds += seconds;
                let calls: Vec<String> = result
                    .tool_calls
                    .iter()
                    .map(|call| {
                        format!(
                            "{}({}){}",
                            call.name,
                            call.arguments,
                            if call.is_error { "!" } else { "" }
                        )
                    })
                    .collect();
                let answer: String = result.response.chars().take(110).collect();
                eprintln!(
                    "[{name}] {} {}#{} {:.0}s {:?} -> {} | {}{}",
                    if verdict.right() { "PASS" } else { "fail" },
                    conversation.name,
                    index + 1,
                    seconds,
                    turn.user,
                    calls.join(", "),
                    answer.replace('\n', " "),
                    verdict.describe()
                );
                history = result.messages;
            }
        }
        println!(
            "| {model} | {} | {name} | {}/{} ({:.0}%) | {} | {:.1} |",
            if grounding { "on" } else { "off" },
            score.right,
            score.turns,
            score.right as f64 * 100.0 / score.turns.max(1) as f64,
            score.ungrounded,
            score.seconds / score.turns.max(1) as f64
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [&str; 9] = [
        "chit-chat",
        "one call",
        "missing argument",
        "memory",
        "relative date",
        "several calls",
        "iteration limit",
        "failing tool",
        "no fitting tool",
    ];

    #[test]
    fn both_splits_are_well_formed_and_cover_every_kind() {
        let mut total_turns = 0;
        let mut total_conversations = 0;
        for name in ["dev", "test"] {
            let conversations = split(name).unwrap_or_default();
            let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
            total_turns += turns;
            total_conversations += conversations.len();
            for kind in KINDS {
                assert!(
                    conversations.iter().any(|c| c.kinds.contains(&kind)),
                    "{name} has no `{kind}` conversation"
                );
            }
            for conversation in conversations {
                for kind in conversation.kinds {
                    assert!(KINDS.contains(&kind), "unknown kind {kind}");
                }
                for turn in conversation.turns {
                    let expect = turn.expect;
                    assert!(!(expect.no_call && !expect.calls.is_empty()), "{}", turn.user);
                    assert!(!turn.user.trim().is_empty());
                }
            }
        }
        assert!(total_conversations >= 8, "{total_conversations} conversations");
        assert!(total_turns >= 40, "{total_turns} turns");
    }
}
