//! The chat loop ([`run_chat`]): lines in, turns streamed out, slash
//! commands, approvals asked `[y/N]`, Ctrl-C handled.
//!
//! Ctrl-C during a run cancels it and keeps the conversation; a second
//! Ctrl-C, or Ctrl-C twice at the prompt, or Ctrl-D, exits. A call of a
//! tool that requires approval is shown and asked about before the reply's
//! tools run; anything but `y`/`yes` denies it, and the model reads that it
//! was refused. `/attach FILE` sends a file (an image, a PDF, a text file,
//! audio) with the next message.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::sync::Arc;

use agent_core::{
    AgentEvent, AgentRunResult, ApprovalDecision, Attachment, CancellationToken, Message, ToolApprover, ToolCall,
    ToolContext,
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
    /// `/attach FILE`: the file goes with the next message; `/attach`
    /// alone lists what will.
    Attach(String),
    /// `/detach`: nothing goes with the next message after all.
    Detach,
    /// Anything else starting with `/`.
    Unknown(String),
}

/// The command on `line`, if it is one.
pub fn parse_command(line: &str) -> Option<Command> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?.trim_start();
    let word = rest.split_whitespace().next().unwrap_or_default();
    Some(match word.to_ascii_lowercase().as_str() {
        "attach" => {
            // A path with spaces may be quoted.
            let path = rest[word.len()..].trim();
            let path = path
                .strip_prefix('"')
                .and_then(|path| path.strip_suffix('"'))
                .unwrap_or(path);
            Command::Attach(path.to_owned())
        }
        "detach" => Command::Detach,
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
  /attach FILE  send an image, PDF, text or audio file with your next message
  /detach       send nothing after all
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
    let mut attached: Vec<Attachment> = Vec::new();
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
                Command::Attach(path) => console.line(&attach(&path, &mut attached)),
                Command::Detach => {
                    let dropped = std::mem::take(&mut attached).len();
                    console.line(&format!("({} dropped)", count(dropped as u64, "attachment")))
                }
                Command::Unknown(text) => console.line(&format!("unknown command {text}; /help lists the commands")),
            }
            .map_err(write)?;
            continue;
        }
        match turn(agent, line, attached.clone(), reader, console, interrupts, conversation).await? {
            TurnEnd::Finished { history, result, kept } => {
                // A turn the conversation did not keep keeps them for the
                // message sent again.
                if kept {
                    attached.clear();
                }
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
        /// Whether the conversation now holds the turn.
        kept: bool,
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

/// Reads the file `path` names (relative to the working directory) into
/// `attached`; what to tell the user. Its type is declared by its
/// extension and must be what its bytes are.
fn attach(path: &str, attached: &mut Vec<Attachment>) -> String {
    if path.is_empty() {
        if attached.is_empty() {
            return "nothing is attached; /attach FILE sends a file with your next message".to_owned();
        }
        let list: Vec<String> = attached.iter().map(describe).collect();
        return format!("with your next message: {}", list.join(", "));
    }
    let file = Path::new(path);
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(error) => return format!("cannot read {path}: {error}"),
    };
    let name = file.file_name().map(|name| name.to_string_lossy().into_owned());
    match Attachment::from_named_bytes(bytes, name) {
        Ok(attachment) => {
            let said = format!("(attached {}; it goes with your next message)", describe(&attachment));
            attached.push(attachment);
            said
        }
        Err(error) => format!("{path} cannot be attached: {error}"),
    }
}

/// `photo.png, an image (image/png), 12.5 KiB`.
fn describe(attachment: &Attachment) -> String {
    let name = attachment.name.as_deref().unwrap_or("(unnamed)");
    // Sizes are shown to a tenth of a KiB: f64 is exact far beyond that.
    #[allow(clippy::cast_precision_loss)]
    let kib = attachment.size as f64 / 1024.0;
    format!("{name}, {}, {kib:.1} KiB", attachment.describe())
}

/// One user turn, streamed; Ctrl-C cancels it, a second Ctrl-C quits.
async fn turn(
    agent: &dyn TurnRunner,
    line: &str,
    attachments: Vec<Attachment>,
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
    let mut events = Box::pin(agent.run_stream(history.clone(), line, attachments, context));
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
    let kept = conversation.record(&result);
    if !kept {
        // A failed turn leaves the conversation as it was: the message can
        // be sent again.
        console
            .note("  (the conversation is unchanged; try again, or /reset)")
            .map_err(write)?;
    }
    Ok(TurnEnd::Finished {
        history,
        result: Box::new(result),
        kept,
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
mod tests;
