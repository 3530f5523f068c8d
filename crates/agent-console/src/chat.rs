//! The chat loop ([`run_chat`]): lines in, turns streamed out, slash
//! commands, approvals asked `[y/N]`, Ctrl-C handled.
//!
//! Ctrl-C during a run cancels it and keeps the conversation; a second
//! Ctrl-C, or Ctrl-C twice at the prompt, or Ctrl-D, exits. A call of a
//! tool that requires approval is shown and asked about before the reply's
//! tools run; anything but `y`/`yes` denies it, and the model reads that it
//! was refused.

use std::fmt::Write as _;
use std::io;
use std::sync::Arc;

use agent_core::{
    AgentEvent, AgentRunResult, ApprovalDecision, CancellationToken, Message, ToolApprover, ToolCall, ToolContext,
};
use agent_runner::ChatSession;
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use crate::{Console, Input, Interrupts, LineReader, TurnRunner, brief, count, stop_note};

/// The error a [`ChatSink`] gives: its own, boxed (the chat hands it back
/// as [`ChatError::Sink`]).
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Why a chat stopped before the user left.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// Reading the input or writing to the terminal failed.
    #[error("{context}: {source}")]
    Terminal {
        /// What was being done.
        context: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The [`ChatSink`] failed (storing a turn, say).
    #[error(transparent)]
    Sink(SinkError),
}

impl ChatError {
    fn terminal(context: &'static str, source: io::Error) -> Self {
        Self::Terminal { context, source }
    }
}

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/help`.
    Help,
    /// `/tools`.
    Tools,
    /// `/reset`.
    Reset,
    /// `/cost`.
    Cost,
    /// `/exit` or `/quit`.
    Exit,
    /// Anything else starting with `/`.
    Unknown(String),
}

/// The command on `line`, if it is one.
pub fn parse_command(line: &str) -> Option<Command> {
    let line = line.trim();
    let word = line.strip_prefix('/')?.split_whitespace().next().unwrap_or_default();
    Some(match word.to_ascii_lowercase().as_str() {
        "help" | "h" | "?" => Command::Help,
        "tools" => Command::Tools,
        "reset" | "clear" => Command::Reset,
        "cost" | "usage" => Command::Cost,
        "exit" | "quit" | "q" => Command::Exit,
        _ => Command::Unknown(line.to_owned()),
    })
}

/// The help text of the slash commands.
pub const HELP: &str = "commands:
  /help   this help
  /tools  the tools the assistant can use
  /reset  forget the conversation (and its cost)
  /cost   tokens used and estimated cost so far
  /exit   leave (also Ctrl-D, or Ctrl-C twice)
Ctrl-C while the assistant works cancels that turn and keeps the conversation.";

/// The `/cost` report of `session` on `model`.
pub fn cost_report(session: &ChatSession, model: &str) -> String {
    let usage = &session.usage;
    let mut report = format!(
        "{} · {} tokens in ({} from cache) · {} out · {} total\nestimated cost: ${:.6}",
        count(u64::from(session.runs), "run"),
        usage.input_tokens,
        usage.cache_read_tokens,
        usage.output_tokens,
        usage.total_tokens(),
        session.cost_usd
    );
    if session.unpriced_runs > 0 {
        let _ = write!(
            report,
            " (plus {} of `{model}`, whose price is not in the catalog: add [catalog.\"{model}\"] to agentry.toml)",
            count(u64::from(session.unpriced_runs), "run")
        );
    }
    report
}

/// How a chat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatEnd {
    /// `/exit` or Ctrl-D.
    Exit,
    /// Ctrl-C twice.
    Interrupted,
}

/// Told of every change to the conversation, e.g. to store it.
#[async_trait::async_trait]
pub trait ChatSink: Send {
    /// A turn that continued `history` ended with `result` (also a failed
    /// or cancelled one: its usage counts).
    async fn turn_finished(&mut self, history: &[Message], result: &AgentRunResult) -> Result<(), SinkError>;

    /// The user cleared the conversation (`/reset`).
    async fn reset(&mut self) -> Result<(), SinkError>;
}

/// A chat whose conversation is kept nowhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unsaved;

#[async_trait::async_trait]
impl ChatSink for Unsaved {
    async fn turn_finished(&mut self, _history: &[Message], _result: &AgentRunResult) -> Result<(), SinkError> {
        Ok(())
    }

    async fn reset(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Runs the chat until the user leaves.
pub async fn run_chat(
    agent: &dyn TurnRunner,
    reader: &mut dyn LineReader,
    console: &mut Console,
    interrupts: &dyn Interrupts,
    conversation: &mut ChatSession,
    sink: &mut dyn ChatSink,
) -> Result<ChatEnd, ChatError> {
    let write = |error: io::Error| ChatError::terminal("writing to the terminal", error);
    let tools: Vec<String> = agent
        .registry()
        .definitions()
        .into_iter()
        .map(|tool| tool.name)
        .collect();
    console
        .line(&format!(
            "agentry chat · {}/{} · {} tools · /help for commands, Ctrl-D to leave",
            agent.client().provider(),
            agent.client().model(),
            tools.len()
        ))
        .map_err(write)?;
    if !conversation.messages.is_empty() {
        let turns = conversation.turns();
        console
            .line(&format!(
                "(continuing a conversation of {})",
                count(turns as u64, "turn")
            ))
            .map_err(write)?;
    }
    let mut interrupted_at_prompt = false;
    loop {
        let input = reader
            .read_line("you> ")
            .map_err(|error| ChatError::terminal("reading input", error))?;
        let line = match input {
            Input::Eof => return Ok(ChatEnd::Exit),
            Input::Interrupted if interrupted_at_prompt => return Ok(ChatEnd::Interrupted),
            Input::Interrupted => {
                interrupted_at_prompt = true;
                console
                    .line("(Ctrl-C again or Ctrl-D to leave; /help for commands)")
                    .map_err(write)?;
                continue;
            }
            Input::Line(line) => line,
        };
        interrupted_at_prompt = false;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        reader.remember(line);
        if let Some(command) = parse_command(line) {
            match command {
                Command::Help => console.line(HELP),
                Command::Tools => console.line(&tool_list(agent)),
                Command::Reset => {
                    conversation.reset();
                    sink.reset().await.map_err(ChatError::Sink)?;
                    console.line("(conversation cleared)")
                }
                Command::Cost => console.line(&cost_report(conversation, agent.client().model())),
                Command::Exit => return Ok(ChatEnd::Exit),
                Command::Unknown(text) => console.line(&format!("unknown command {text}; /help lists the commands")),
            }
            .map_err(write)?;
            continue;
        }
        match turn(agent, line, reader, console, interrupts, conversation).await? {
            TurnEnd::Finished { history, result } => {
                sink.turn_finished(&history, &result).await.map_err(ChatError::Sink)?;
            }
            TurnEnd::NoResult => {}
            TurnEnd::Quit => return Ok(ChatEnd::Interrupted),
        }
    }
}

enum TurnEnd {
    Finished {
        history: Vec<Message>,
        result: Box<AgentRunResult>,
    },
    NoResult,
    Quit,
}

/// A question to the user about a call that needs approval, and where the
/// answer goes.
type ApprovalQuestion = (ToolCall, oneshot::Sender<ApprovalDecision>);

/// Asks the chat loop (which owns the terminal) to ask the user.
struct AskTheUser(mpsc::UnboundedSender<ApprovalQuestion>);

#[async_trait::async_trait]
impl ToolApprover for AskTheUser {
    async fn decide(&self, call: &ToolCall) -> ApprovalDecision {
        let (reply, answer) = oneshot::channel();
        if self.0.send((call.clone(), reply)).is_err() {
            return ApprovalDecision::deny();
        }
        answer.await.unwrap_or_else(|_| ApprovalDecision::deny())
    }
}

/// Shows `call` and reads y/N: only `y` or `yes` approves.
fn ask_approval(call: &ToolCall, reader: &mut dyn LineReader, console: &mut Console) -> io::Result<ApprovalDecision> {
    console.clear_spinners();
    console.end_line()?;
    console.note(&format!(
        "  ? {} {} needs your approval",
        call.name,
        brief(&call.arguments.to_string(), 200)
    ))?;
    let approved = match reader.read_line("  allow it? [y/N] ")? {
        Input::Line(answer) => matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"),
        Input::Interrupted | Input::Eof => false,
    };
    console.note(if approved { "  (approved)" } else { "  (denied)" })?;
    Ok(if approved {
        ApprovalDecision::Approve
    } else {
        ApprovalDecision::Deny {
            reason: Some("the user said no".to_owned()),
        }
    })
}

/// One user turn, streamed; Ctrl-C cancels it, a second Ctrl-C quits.
async fn turn(
    agent: &dyn TurnRunner,
    line: &str,
    reader: &mut dyn LineReader,
    console: &mut Console,
    interrupts: &dyn Interrupts,
    conversation: &mut ChatSession,
) -> Result<TurnEnd, ChatError> {
    let write = |error: io::Error| ChatError::terminal("writing to the terminal", error);
    let cancel = CancellationToken::new();
    let (questions, mut asked) = mpsc::unbounded_channel();
    let context = ToolContext::new()
        .with_cancel(cancel.clone())
        .with_approver(Arc::new(AskTheUser(questions)));
    let history = conversation.messages.clone();
    let mut events = Box::pin(agent.run_stream(history.clone(), line, context));
    let mut interrupt = interrupts.next();
    let mut cancelling = false;
    console.begin();
    let result = loop {
        tokio::select! {
            event = events.next() => match event {
                Some(AgentEvent::RunFinished { result }) => {
                    console.clear_spinners();
                    console.end_line().map_err(write)?;
                    break Some(*result);
                }
                Some(event) => console.event(&event).map_err(write)?,
                None => break None,
            },
            Some((call, reply)) = asked.recv() => {
                let decision = ask_approval(&call, reader, console).map_err(write)?;
                let _ = reply.send(decision);
            }
            () = &mut interrupt => {
                if cancelling {
                    console.clear_spinners();
                    return Ok(TurnEnd::Quit);
                }
                cancelling = true;
                cancel.cancel();
                console.note("  (cancelling; Ctrl-C again to leave)").map_err(write)?;
                interrupt = interrupts.next();
            }
        }
    };
    let Some(result) = result else {
        console.note("  ! the run ended without a result").map_err(write)?;
        return Ok(TurnEnd::NoResult);
    };
    if !console.text_seen() && !result.response.trim().is_empty() {
        console.line(result.response.trim()).map_err(write)?;
    }
    if let Some(note) = stop_note(result.stop_reason, result.stop_detail.as_deref()) {
        console.note(&format!("  {note}")).map_err(write)?;
    }
    if !conversation.record(&result) {
        // A failed turn leaves the conversation as it was: the message can
        // be sent again.
        console
            .note("  (the conversation is unchanged; try again, or /reset)")
            .map_err(write)?;
    }
    Ok(TurnEnd::Finished {
        history,
        result: Box::new(result),
    })
}

fn tool_list(agent: &dyn TurnRunner) -> String {
    let tools = agent.registry().definitions();
    if tools.is_empty() {
        return "no tools are enabled (see [tools] enabled in agentry.toml, or --tools)".to_owned();
    }
    tools
        .iter()
        .map(|tool| format!("  {} — {}", tool.name, brief(&tool.description, 100)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use agent_core::{ModelCatalog, ModelInfo, Pricing, Usage};
    use agent_runner::Agent;
    use agent_testing::{ScriptedClient, response};
    use agent_tools::ToolBox;
    use serde_json::json;

    use super::*;
    use crate::{NoInterrupts, PlainLines, SharedBuffer};
    use futures::future::BoxFuture;

    struct Script(VecDeque<Input>);

    impl Script {
        fn lines(lines: &[&str]) -> Self {
            Self(lines.iter().map(|line| Input::Line((*line).to_owned())).collect())
        }
    }

    impl LineReader for Script {
        fn read_line(&mut self, _prompt: &str) -> io::Result<Input> {
            Ok(self.0.pop_front().unwrap_or(Input::Eof))
        }
    }

    /// Fires once, `after` the first wait starts; never again.
    struct InterruptOnce {
        after: Duration,
        calls: AtomicUsize,
    }

    impl Interrupts for InterruptOnce {
        fn next(&self) -> BoxFuture<'static, ()> {
            let after = self.after;
            if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
                Box::pin(tokio::time::sleep(after))
            } else {
                Box::pin(std::future::pending())
            }
        }
    }

    fn agent(client: ScriptedClient) -> Agent {
        Agent::builder(Arc::new(client.with_model("gpt-4o-mini")))
            .tools_from(Arc::new(agent_tools_math::tool_set()))
            .catalog(Arc::new(catalog()))
            .build()
    }

    /// `gpt-4o-mini` at its price of 2026 (US dollars per million tokens).
    fn catalog() -> ModelCatalog {
        let mut catalog = ModelCatalog::new();
        let pricing = Pricing {
            input_per_million: 0.15,
            output_per_million: 0.6,
            cached_input_per_million: Some(0.075),
            cache_write_per_million: None,
        };
        catalog.insert(
            "gpt-4o-mini",
            ModelInfo {
                provider: "openai".to_owned(),
                context_window: Some(128_000),
                pricing,
                inputs: None,
            },
        );
        catalog
    }

    struct CountSaves(usize);

    #[test]
    fn plain_lines_prompt_then_read_each_line_until_the_end() {
        let mut out = Vec::new();
        let mut reader = PlainLines::new(&b"hello\r\n/exit\n"[..], &mut out);
        assert_eq!(reader.read_line("you> ").ok(), Some(Input::Line("hello".to_owned())));
        assert_eq!(reader.read_line("you> ").ok(), Some(Input::Line("/exit".to_owned())));
        assert_eq!(reader.read_line("you> ").ok(), Some(Input::Eof));
        assert_eq!(out, b"you> you> you> ");
    }

    #[async_trait::async_trait]
    impl ChatSink for CountSaves {
        async fn turn_finished(&mut self, _: &[Message], _: &AgentRunResult) -> Result<(), SinkError> {
            self.0 += 1;
            Ok(())
        }

        async fn reset(&mut self) -> Result<(), SinkError> {
            self.0 += 1;
            Ok(())
        }
    }

    async fn chat(
        agent: &Agent,
        reader: &mut dyn LineReader,
        interrupts: &dyn Interrupts,
    ) -> (String, ChatSession, ChatEnd, usize) {
        let buffer = SharedBuffer::new();
        let mut console = Console::new(buffer.clone());
        let mut conversation = ChatSession::default();
        let mut saves = CountSaves(0);
        let end = run_chat(agent, reader, &mut console, interrupts, &mut conversation, &mut saves)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (buffer.contents(), conversation, end, saves.0)
    }

    #[test]
    fn slash_commands_parse_forgivingly() {
        assert_eq!(parse_command("/help"), Some(Command::Help));
        assert_eq!(parse_command("  /EXIT "), Some(Command::Exit));
        assert_eq!(parse_command("/quit now"), Some(Command::Exit));
        assert_eq!(parse_command("/cost"), Some(Command::Cost));
        assert_eq!(parse_command("/reset"), Some(Command::Reset));
        assert_eq!(parse_command("/tools"), Some(Command::Tools));
        assert_eq!(
            parse_command("/frobnicate"),
            Some(Command::Unknown("/frobnicate".into()))
        );
        assert_eq!(parse_command("what is 2/3?"), None);
    }

    #[tokio::test]
    async fn turns_keep_history_and_commands_report_tools_cost_and_reset() {
        let client = ScriptedClient::new()
            .respond(response::with_usage(
                response::tool_calls([("calculator", json!({"expression": "6*7"}))]),
                Usage::new(1_000, 10),
            ))
            .respond(response::with_usage(response::text("42."), Usage::new(1_100, 5)))
            .respond(response::with_usage(
                response::text("You asked 6*7."),
                Usage::new(1_200, 6),
            ));
        let agent = agent(client);
        let mut reader = Script::lines(&[
            "What is 6*7?",
            "/tools",
            "/cost",
            "What did I ask?",
            "/help",
            "/nope",
            "/reset",
            "/cost",
            "/exit",
        ]);
        let (out, conversation, end, saves) = chat(&agent, &mut reader, &NoInterrupts).await;
        assert_eq!(end, ChatEnd::Exit);
        assert!(out.contains("  → calculator {\"expression\":\"6*7\"}"), "{out}");
        assert!(out.contains("  ✓ calculator →"), "{out}");
        assert!(out.contains("42."), "{out}");
        assert!(out.contains("  calculator — "), "{out}");
        assert!(
            out.contains("1 run · 2100 tokens in (0 from cache) · 15 out · 2115 total"),
            "{out}"
        );
        assert!(out.contains("You asked 6*7."), "{out}");
        assert!(out.contains("/tools  the tools the assistant can use"), "{out}");
        assert!(out.contains("unknown command /nope"), "{out}");
        assert!(out.contains("(conversation cleared)"), "{out}");
        assert!(out.contains("0 runs · 0 tokens in"), "{out}");
        assert_eq!(conversation, ChatSession::default());
        // Two turns and one reset were saved.
        assert_eq!(saves, 3);
    }

    #[tokio::test]
    async fn a_call_that_needs_approval_is_asked_about_and_runs_only_on_yes() {
        for (answer, ran) in [("y", true), ("n", false)] {
            let client = ScriptedClient::new()
                .respond(response::tool_calls([("calculator", json!({"expression": "6*7"}))]))
                .respond(response::text("Done."));
            let client = Arc::new(client.with_model("m"));
            let registry = ToolBox::builder()
                .provider(Arc::new(agent_tools_math::tool_set()))
                .require_approval(["calculator"])
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            let agent = Agent::builder(client.clone()).tools(Arc::new(registry)).build();
            let mut reader = Script::lines(&["What is 6*7?", answer]);
            let (out, conversation, end, _) = chat(&agent, &mut reader, &NoInterrupts).await;
            assert_eq!(end, ChatEnd::Exit);
            assert!(
                out.contains("? calculator {\"expression\":\"6*7\"} needs your approval"),
                "{out}"
            );
            assert!(out.contains("Done."), "{out}");
            let result = conversation
                .messages
                .iter()
                .find_map(|message| match message {
                    Message::Tool(result) => Some(result.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no tool result in {:?}", conversation.messages));
            if ran {
                assert!(out.contains("(approved)"), "{out}");
                assert!(!result.is_error && result.content.contains("42"), "{result:?}");
            } else {
                assert!(out.contains("(denied)"), "{out}");
                assert!(
                    result.is_error && result.content.contains("did not approve"),
                    "{result:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn the_second_turn_sees_the_first() {
        let client = ScriptedClient::new()
            .respond(response::text("Hello Ada."))
            .respond(response::text("Your name is Ada."));
        let client = Arc::new(client.with_model("m"));
        let agent = Agent::builder(client.clone()).build();
        let mut reader = Script::lines(&["I am Ada", "Who am I?"]);
        let (_, conversation, _, _) = chat(&agent, &mut reader, &NoInterrupts).await;
        let requests = client.requests();
        assert_eq!(requests[1].messages.len(), 3, "{:?}", requests[1].messages);
        assert_eq!(conversation.messages.len(), 4);
    }

    #[tokio::test]
    async fn ctrl_c_cancels_the_turn_and_keeps_the_session() {
        let client = ScriptedClient::new()
            .respond_after(Duration::from_secs(30), response::text("too late"))
            .respond(response::text("Still here."));
        let agent = agent(client);
        let mut reader = Script::lines(&["slow question", "are you there?"]);
        let interrupts = InterruptOnce {
            after: Duration::from_millis(50),
            calls: AtomicUsize::new(0),
        };
        let started = std::time::Instant::now();
        let (out, conversation, end, _) = chat(&agent, &mut reader, &interrupts).await;
        assert!(started.elapsed() < Duration::from_secs(10), "the cancel was not prompt");
        assert_eq!(end, ChatEnd::Exit);
        assert!(out.contains("(cancelling; Ctrl-C again to leave)"), "{out}");
        assert!(out.contains("[stop: cancelled"), "{out}");
        assert!(out.contains("Still here."), "{out}");
        assert_eq!(conversation.runs, 2);
        assert!(
            conversation
                .messages
                .iter()
                .any(|m| m == &Message::user("slow question")),
            "the cancelled turn is kept"
        );
    }

    #[tokio::test]
    async fn ctrl_c_twice_at_the_prompt_leaves() {
        let agent = agent(ScriptedClient::new());
        let mut reader = Script(VecDeque::from([Input::Interrupted, Input::Interrupted]));
        let (out, _, end, _) = chat(&agent, &mut reader, &NoInterrupts).await;
        assert_eq!(end, ChatEnd::Interrupted);
        assert!(out.contains("Ctrl-C again or Ctrl-D to leave"), "{out}");
    }

    #[tokio::test]
    async fn a_failed_turn_leaves_the_conversation_unchanged() {
        let client = ScriptedClient::new()
            .fail(agent_core::LlmError::auth("set OPENAI_API_KEY"))
            .respond(response::text("ok"));
        let agent = agent(client);
        let mut reader = Script::lines(&["first", "second"]);
        let (out, conversation, _, _) = chat(&agent, &mut reader, &NoInterrupts).await;
        assert!(out.contains("[stop: error"), "{out}");
        assert!(out.contains("OPENAI_API_KEY"), "{out}");
        assert_eq!(conversation.messages.first(), Some(&Message::user("second")));
    }
}
