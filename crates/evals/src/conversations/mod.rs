//! `cargo xtask eval-conversations`: multi-turn conversations on a local
//! (llama.cpp) model, through the agent `agentry run` builds.
//!
//! The agent is built the way `agentry run` builds it, from the agent-app
//! library: [`Settings::load`] with the flags' overrides (`--provider
//! llama --model M --tools math,travel`, and `--max-iterations N` for the
//! turns that test the limit), [`ToolBox::from_settings`],
//! [`build_client`] and [`build_agent`]. Two things are fixed so a run
//! repeats: "today" ([`today`]), the way `agentry demo --today` fixes it
//! (the default system prompt written for that date, and the travel
//! tools' clock set to it), so relative dates ("tomorrow", "this
//! Saturday") and the simulated data are the same on every day; and the
//! configuration is read from an empty working directory.
//!
//! Each turn is `agent.run(user_text).history(history)`; the
//! next turn's history is the result's `messages`, as `agentry run
//! --session` stores it (a run that fails, `Err(e)`, is recorded from
//! `e.result` and, as the session store does, adds nothing to the history).
//!
//! Each turn is judged by rules written as data ([`Expect`]: calls that
//! must succeed, no call, a question back, figures in the answer, a failure
//! said) and by the eval's own figure judge ([`judge`]): an answer that
//! contains a figure found neither in the user's messages so far, nor in
//! the system prompt, nor in a tool result of the conversation so far is
//! ungrounded, and an ungrounded turn is never right.
//!
//! Two splits: `dev` (`dev.rs`, tune on it) and `test` (`test_split.rs`,
//! held out: never read it to tune). Output: a line per turn on stderr, a
//! markdown table per model and split on stdout (turns right, ungrounded
//! answers, seconds per turn), then the same by kind of turn. The exit
//! status is non-zero only when the eval cannot run (a model missing, a
//! bad configuration), never for a low score.

mod dev;
mod expect;
pub mod judge;
mod test_split;

use std::future::IntoFuture;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agent_app::assemble::{build_agent, default_system_prompt};
use agent_app::config::{Overrides, Settings};
use agent_app::env::{Env, HOME_VAR};
use agent_app::providers::{Progress, build_client};
use agent_app::tools::ToolBox;
use agent_core::{AgentRunResult, LlmClient, Message, RunEnd, ToolProvider};
use agent_provider_llama::models::{ModelStore, known_model};
use agent_runner::Agent;
use agent_tools_travel::{NaiveDate, TravelTools};

use judge::{Evidence, Verdict, judge};

/// The kinds of turn the splits must cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Small talk: no tool, and no figure the user did not write.
    ChitChat,
    /// One tool call answers it.
    OneCall,
    /// A needed argument is missing: ask, do not invent it.
    MissingArgument,
    /// Refers to an earlier turn ("there", "that amount").
    Memory,
    /// A date said relative to today ("tomorrow", "this Saturday").
    RelativeDate,
    /// Two different tools in one message.
    TwoTools,
    /// Three different tools in one message.
    ThreeTools,
    /// More chained steps than the turn's iteration limit allows.
    IterationLimit,
    /// A tool refuses (an unknown place, an invalid expression): say so.
    FailingTool,
    /// No offered tool fits: call none.
    NoFittingTool,
}

/// Every kind, in the order of the by-kind table.
pub const KINDS: [Kind; 10] = [
    Kind::ChitChat,
    Kind::OneCall,
    Kind::MissingArgument,
    Kind::Memory,
    Kind::RelativeDate,
    Kind::TwoTools,
    Kind::ThreeTools,
    Kind::IterationLimit,
    Kind::FailingTool,
    Kind::NoFittingTool,
];

impl Kind {
    /// The kind's name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::ChitChat => "chit-chat",
            Self::OneCall => "one call",
            Self::MissingArgument => "missing argument",
            Self::Memory => "memory",
            Self::RelativeDate => "relative date",
            Self::TwoTools => "two tools",
            Self::ThreeTools => "three tools",
            Self::IterationLimit => "iteration limit",
            Self::FailingTool => "failing tool",
            Self::NoFittingTool => "no fitting tool",
        }
    }
}

/// One expected successful call.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// The tool's name, or names separated by `|` (`calculator|arithmetic`).
    pub tool: &'static str,
    /// Texts the call must contain, case-insensitive, each one of its
    /// `|`-separated alternatives, in its arguments or in its result (where
    /// the tool resolves them: `LIS` gives Lisbon, `tomorrow` a date, an
    /// expression its value).
    pub args_contain: &'static [&'static str],
}

/// What a turn must do. Every turn must also give a non-empty answer with
/// no ungrounded figure.
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    /// Calls that must be among the turn's successful calls.
    pub calls: &'static [Call],
    /// No successful call other than those matching `calls`.
    pub only_these: bool,
    /// No tool call at all, not even a failed one.
    pub no_call: bool,
    /// The answer asks the user (a question, or a request for the missing
    /// detail), and no call succeeded (a refused call with an invented
    /// value is allowed: the tool turned it down).
    pub asks: bool,
    /// Texts the answer must contain, each one of its `|`-separated
    /// alternatives. A number matches a number of the answer with the same
    /// value, whatever its formatting (`1,000.00` for `1000`), or that
    /// value rounded to the answer's decimals; other text matches
    /// case-insensitively.
    pub answer_contains: &'static [&'static str],
    /// The answer says it could not (failed, unknown, cannot, sorry...).
    pub mentions_failure: bool,
}

impl Expect {
    /// Nothing beyond a grounded, non-empty answer.
    pub const ANY: Self = Self {
        calls: &[],
        only_these: false,
        no_call: false,
        asks: false,
        answer_contains: &[],
        mentions_failure: false,
    };
}

/// One user turn.
#[derive(Debug, Clone, Copy)]
pub struct Turn {
    /// What the user writes.
    pub user: &'static str,
    /// What it tests.
    pub kinds: &'static [Kind],
    /// What must happen.
    pub expect: Expect,
    /// The turn's iteration limit (`agentry run --max-iterations N`);
    /// `None`: the configured one.
    pub max_iterations: Option<u32>,
}

/// A conversation: a short name and its turns, in order.
#[derive(Debug, Clone, Copy)]
pub struct Conversation {
    /// A short name for the turn lines.
    pub name: &'static str,
    /// The turns.
    pub turns: &'static [Turn],
}

/// A turn with the configured iteration limit.
pub const fn turn(user: &'static str, kinds: &'static [Kind], expect: Expect) -> Turn {
    Turn {
        user,
        kinds,
        expect,
        max_iterations: None,
    }
}

/// A turn run with `max_iterations` iterations at most.
pub const fn limited(user: &'static str, kinds: &'static [Kind], expect: Expect, max_iterations: u32) -> Turn {
    Turn {
        user,
        kinds,
        expect,
        max_iterations: Some(max_iterations),
    }
}

/// The date the conversations take as today: Wednesday, July 15, 2026.
pub fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 7, 15).unwrap_or_default()
}

/// A split of the conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Tune on these.
    Dev,
    /// Held out: never tuned on.
    Test,
}

impl Split {
    /// The split's name on the command line and in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dev => "dev",
            Self::Test => "test",
        }
    }

    /// The split's conversations.
    pub fn conversations(self) -> &'static [Conversation] {
        match self {
            Self::Dev => dev::CONVERSATIONS,
            Self::Test => test_split::CONVERSATIONS,
        }
    }
}

/// The score of one split, or of one kind of turn.
#[derive(Debug, Clone, Copy, Default)]
struct Score {
    right: usize,
    turns: usize,
    ungrounded: usize,
    seconds: f64,
}

impl Score {
    fn add(&mut self, verdict: &Verdict, seconds: f64) {
        self.turns += 1;
        self.right += usize::from(verdict.right());
        self.ungrounded += usize::from(!verdict.ungrounded.is_empty());
        self.seconds += seconds;
    }

    fn percent(&self) -> f64 {
        self.right as f64 * 100.0 / self.turns.max(1) as f64
    }
}

/// Checks that `model` is a local model ready to load, without fetching
/// it (the eval never downloads).
fn check_model(model: &str, env: &Env) -> Result<(), String> {
    if Path::new(model)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"))
    {
        return if Path::new(model).is_file() {
            Ok(())
        } else {
            Err(format!("the model file {model} does not exist"))
        };
    }
    let known = known_model(model).ok_or_else(|| format!("unknown local model `{model}`"))?;
    let store = env.get(HOME_VAR).map_or_else(ModelStore::default_location, |home| {
        ModelStore::new(Path::new(&home).join("models"))
    });
    if store.is_ready(known) {
        Ok(())
    } else {
        Err(format!(
            "the model {model} is not in {}; fetch it first with `cargo xtask fetch-model {model}`",
            store.dir().display()
        ))
    }
}

/// How the agents are configured: the flags of `agentry run`, plus the
/// fixed date and the grounding override.
struct Setup {
    env: Env,
    workdir: std::path::PathBuf,
    model: String,
    grounding: Option<bool>,
}

impl Setup {
    /// The settings `agentry run --provider llama --model M --tools
    /// math,travel [--max-iterations N]` reads, with the system prompt of
    /// [`today`].
    fn settings(&self, max_iterations: Option<u32>) -> Result<Settings, String> {
        let overrides = Overrides {
            provider: Some("llama".to_owned()),
            model: Some(self.model.clone()),
            tools: Some(vec!["math".to_owned(), "travel".to_owned()]),
            max_iterations,
            ..Overrides::default()
        };
        let mut settings = Settings::load(&overrides, &self.env, &self.workdir).map_err(|e| e.to_string())?;
        if settings.config.agent.system_prompt.is_none() {
            settings.config.agent.system_prompt = Some(default_system_prompt(today()));
        }
        if let Some(on) = self.grounding {
            settings.config.agent.grounding = Some(on);
        }
        Ok(settings)
    }
}

/// The tool box of `settings` with the travel tools' clock fixed to
/// [`today`] (as `agentry demo --today` fixes it).
async fn tool_box(settings: &Settings, env: &Env) -> Result<ToolBox, String> {
    let configured = ToolBox::from_settings(settings, env).await.map_err(|e| e.to_string())?;
    let providers: Vec<Arc<dyn ToolProvider>> = configured
        .providers()
        .iter()
        .map(|provider| {
            if provider.name() == agent_tools_travel::PROVIDER_NAME {
                Arc::new(TravelTools::with_today(today()).tool_set()) as Arc<dyn ToolProvider>
            } else {
                Arc::clone(provider)
            }
        })
        .collect();
    ToolBox::from_providers(providers).map_err(|e| e.to_string())
}

/// Runs `splits` on each of `models` (grounding as configured, or forced
/// on or off) and prints a line per turn on stderr and the tables on
/// stdout.
pub fn run(models: &[String], splits: &[Split], grounding: Option<bool>) -> Result<(), String> {
    let env = Env::from_process();
    for model in models {
        check_model(model, &env)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let workdir = std::env::temp_dir().join("agentry-eval-conversations");
    std::fs::create_dir_all(&workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;

    let mut rows = Vec::new();
    let mut kind_rows = Vec::new();
    for model in models {
        let setup = Setup {
            env: env.clone(),
            workdir: workdir.clone(),
            model: model.clone(),
            grounding,
        };
        let settings = setup.settings(None)?;
        let grounding_label = if settings.grounding() == agent_runner::Grounding::On {
            "on"
        } else {
            "off"
        };
        let tools = runtime.block_on(tool_box(&settings, &env))?;
        let client = runtime
            .block_on(build_client(&settings, &env, Progress::Hide))
            .map_err(|e| e.to_string())?;
        let system_prompt = settings.config.agent.system_prompt.clone().unwrap_or_default();
        let mut agents: Vec<(Option<u32>, Agent)> = vec![(None, build_agent(&settings, Arc::clone(&client), &tools))];
        for split in splits {
            let mut score = Score::default();
            let mut by_kind = [Score::default(); KINDS.len()];
            for conversation in split.conversations() {
                let mut history: Vec<Message> = Vec::new();
                let mut user_texts: Vec<&str> = Vec::new();
                let mut tool_texts: Vec<String> = Vec::new();
                for (index, turn) in conversation.turns.iter().enumerate() {
                    let agent = agent_for(&mut agents, turn.max_iterations, &setup, &client, &tools)?;
                    let started = Instant::now();
                    let outcome = runtime.block_on(agent.run(turn.user).history(history.clone()).into_future());
                    let seconds = started.elapsed().as_secs_f64();
                    let (result, failed) = match outcome {
                        Ok(result) => (result, false),
                        Err(error) => (*error.result, true),
                    };
                    user_texts.push(turn.user);
                    tool_texts.extend(result.tool_calls.iter().map(|call| call.result.clone()));
                    tool_texts.extend(result.messages.iter().filter_map(|message| match message {
                        Message::Tool(tool) => Some(tool.content.clone()),
                        _ => None,
                    }));
                    let evidence = Evidence::new(
                        std::iter::once(system_prompt.as_str())
                            .chain(user_texts.iter().copied())
                            .chain(tool_texts.iter().map(String::as_str)),
                    );
                    let mut verdict = judge(&turn.expect, &result, &evidence);
                    if failed {
                        verdict.broken.push(format!(
                            "run error: {}",
                            result.stop_detail.as_deref().unwrap_or("unknown")
                        ));
                    }
                    score.add(&verdict, seconds);
                    for kind in turn.kinds {
                        if let Some(slot) = KINDS.iter().position(|k| k == kind) {
                            by_kind[slot].add(&verdict, seconds);
                        }
                    }
                    eprintln!(
                        "{}",
                        turn_line(model, *split, conversation.name, index + 1, &result, &verdict, seconds)
                    );
                    // As `run --session` stores a turn: a failed run adds nothing.
                    if !failed {
                        history = result.messages;
                    }
                }
            }
            rows.push(format!(
                "| {model} | {grounding_label} | {} | {}/{} ({:.0}%) | {} | {:.1} |",
                split.name(),
                score.right,
                score.turns,
                score.percent(),
                score.ungrounded,
                score.seconds / score.turns.max(1) as f64
            ));
            eprintln!(
                "[{model} {}] score {}",
                split.name(),
                rows.last().map_or("", String::as_str)
            );
            for (kind, kind_score) in KINDS.iter().zip(by_kind) {
                kind_rows.push(format!(
                    "| {model} | {} | {} | {}/{} | {} |",
                    split.name(),
                    kind.name(),
                    kind_score.right,
                    kind_score.turns,
                    kind_score.ungrounded
                ));
            }
        }
    }
    println!("| model | grounding | split | turns right | ungrounded answers | s/turn |");
    println!("|---|---|---|---|---|---|");
    for row in &rows {
        println!("{row}");
    }
    println!();
    println!("| model | split | kind | right | ungrounded |");
    println!("|---|---|---|---|---|");
    for row in &kind_rows {
        println!("{row}");
    }
    Ok(())
}

/// The agent for a turn's iteration limit, built on first use.
fn agent_for<'a>(
    agents: &'a mut Vec<(Option<u32>, Agent)>,
    max_iterations: Option<u32>,
    setup: &Setup,
    client: &Arc<dyn LlmClient>,
    tools: &ToolBox,
) -> Result<&'a Agent, String> {
    let index = if let Some(index) = agents.iter().position(|(limit, _)| *limit == max_iterations) {
        index
    } else {
        let settings = setup.settings(max_iterations)?;
        agents.push((max_iterations, build_agent(&settings, Arc::clone(client), tools)));
        agents.len() - 1
    };
    agents
        .get(index)
        .map(|(_, agent)| agent)
        .ok_or_else(|| "no agent".to_owned())
}

/// The stderr line of one turn: verdict, where, seconds, calls (`!` a
/// failed call), how the run stopped when not completed, the runner's
/// grounding actions, the answer's first 100 characters and the problems.
fn turn_line(
    model: &str,
    split: Split,
    conversation: &str,
    number: usize,
    result: &AgentRunResult,
    verdict: &Verdict,
    seconds: f64,
) -> String {
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
    let answer: String = result.response.chars().take(100).collect::<String>().replace('\n', " ");
    let stop = if result.stop_reason == RunEnd::Completed {
        String::new()
    } else {
        format!(" stop={}", result.stop_reason.as_str())
    };
    let grounding = result
        .grounding
        .as_ref()
        .filter(|record| !record.actions.is_empty())
        .map(|record| format!(" runner-grounding={:?}", record.actions))
        .unwrap_or_default();
    format!(
        "[{model} {}] {} {}#{number} {seconds:.1}s{}{stop}{grounding} calls: [{}] answer: {answer:?}{}",
        split.name(),
        if verdict.right() { "PASS" } else { "fail" },
        conversation,
        if verdict.ungrounded.is_empty() {
            ""
        } else {
            " UNGROUNDED"
        },
        calls.join(", "),
        verdict.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(split: Split) -> impl Iterator<Item = (&'static Conversation, usize, &'static Turn)> {
        split.conversations().iter().flat_map(|conversation| {
            conversation
                .turns
                .iter()
                .enumerate()
                .map(move |(index, turn)| (conversation, index, turn))
        })
    }

    fn distinct_tools(calls: &[Call]) -> usize {
        let mut tools: Vec<&str> = calls.iter().map(|call| call.tool).collect();
        tools.sort_unstable();
        tools.dedup();
        tools.len()
    }

    #[test]
    fn both_splits_are_well_formed_and_cover_every_kind() {
        let mut total = 0usize;
        let mut conversations = 0usize;
        let mut per_split = Vec::new();
        for split in [Split::Dev, Split::Test] {
            let mut count = 0usize;
            for (conversation, index, turn) in turns(split) {
                let at = format!("{} {}#{}", split.name(), conversation.name, index + 1);
                count += 1;
                assert!(!turn.user.trim().is_empty(), "{at}: no text");
                assert!(!turn.kinds.is_empty(), "{at}: no kind");
                let expect = turn.expect;
                let specific = !expect.calls.is_empty()
                    || expect.no_call
                    || expect.asks
                    || !expect.answer_contains.is_empty()
                    || expect.mentions_failure;
                assert!(specific, "{at}: no expectation beyond a grounded answer");
                assert!(!expect.no_call || expect.calls.is_empty(), "{at}: no call and calls");
                assert!(!expect.asks || expect.calls.is_empty(), "{at}: asks and calls");
                for call in expect.calls {
                    assert!(!call.tool.is_empty(), "{at}: a call with no tool");
                }
                for kind in turn.kinds {
                    match kind {
                        Kind::ChitChat | Kind::NoFittingTool => assert!(expect.no_call, "{at}: must expect no call"),
                        Kind::MissingArgument => assert!(expect.asks, "{at}: must expect a question"),
                        Kind::OneCall => assert!(!expect.calls.is_empty(), "{at}: must expect a call"),
                        Kind::TwoTools => assert!(distinct_tools(expect.calls) >= 2, "{at}: two tools"),
                        Kind::ThreeTools => assert!(distinct_tools(expect.calls) >= 3, "{at}: three tools"),
                        Kind::IterationLimit => assert!(turn.max_iterations.is_some(), "{at}: no limit"),
                        Kind::FailingTool => assert!(expect.mentions_failure, "{at}: must expect the failure said"),
                        Kind::Memory => assert!(index > 0, "{at}: memory in a first turn"),
                        Kind::RelativeDate => assert!(
                            expect
                                .calls
                                .iter()
                                .any(|call| call.args_contain.iter().any(|a| a.contains("2026-"))),
                            "{at}: the resolved date must be expected"
                        ),
                    }
                }
            }
            for kind in KINDS {
                assert!(
                    turns(split).any(|(_, _, turn)| turn.kinds.contains(&kind)),
                    "{} has no `{}` turn",
                    split.name(),
                    kind.name()
                );
            }
            total += count;
            conversations += split.conversations().len();
            per_split.push(count);
        }
        assert!(conversations >= 10, "{conversations} conversations");
        assert!(total >= 50, "{total} turns");
        let dev_share = per_split[0] as f64 / total as f64;
        assert!(
            (0.55..=0.65).contains(&dev_share),
            "dev has {:.0}% of the turns",
            dev_share * 100.0
        );
    }

    #[test]
    fn the_two_splits_share_no_user_text() {
        for (_, _, dev_turn) in turns(Split::Dev) {
            assert!(turns(Split::Test).all(|(_, _, test_turn)| test_turn.user != dev_turn.user));
        }
    }

    #[test]
    fn the_date_is_fixed() {
        assert_eq!(today().to_string(), "2026-07-15");
        assert!(default_system_prompt(today()).contains("Wednesday, July 15, 2026"));
    }
}
