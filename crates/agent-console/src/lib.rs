//! # agent-console
//!
//! Agentry on a terminal, for any program that runs an agent where a
//! person watches:
//!
//! - [`Console`] renders a run's [`AgentEvent`](agent_core::AgentEvent)s:
//!   text as it arrives, each tool call with its arguments, a spinner while
//!   it runs, its result in brief, the grounding checks, and on a terminal
//!   one line saying what the model is doing (loading, reading the prompt,
//!   writing, with tokens per second).
//! - [`run_chat`] is an interactive conversation over a [`LineReader`]
//!   (the `Rustyline` editor with the `line-editor` feature,
//!   [`PlainLines`], or a test's script) and [`Interrupts`] (Ctrl-C):
//!   slash commands, approvals asked `[y/N]`, a run cancelled by Ctrl-C
//!   with the conversation kept. A [`ChatSink`] is told of every turn, to
//!   store it.
//! - [`TurnRunner`] is what a chat runs each turn with: an
//!   [`Agent`](agent_runner::Agent) or a
//!   [`SceneRouter`](agent_runner::scenes::SceneRouter).
//!
//! ```
//! use std::sync::Arc;
//! use agent_console::{ChatSession, Console, NoInterrupts, PlainLines, SharedBuffer, Unsaved, run_chat};
//! use agent_runner::Agent;
//! use agent_testing::{ScriptedClient, response};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder(Arc::new(ScriptedClient::new().respond(response::text("Hello!")))).build();
//! let mut input = PlainLines::new(&b"Hi\n/exit\n"[..], std::io::sink());
//! let screen = SharedBuffer::default();
//! let mut console = Console::new(screen.clone());
//! let mut conversation = ChatSession::default();
//! run_chat(&agent, &mut input, &mut console, &NoInterrupts, &mut conversation, &mut Unsaved).await?;
//! assert!(screen.contents().contains("Hello!"));
//! assert_eq!(conversation.runs, 1);
//! # Ok(())
//! # }
//! ```

mod chat;
mod display;
mod lines;
mod turns;

pub use chat::{ChatEnd, ChatError, ChatSink, Command, HELP, SinkError, Unsaved, cost_report, parse_command, run_chat};
pub use display::{Console, SharedBuffer, brief, count, grounding_note, stop_note};
#[cfg(feature = "line-editor")]
pub use lines::Rustyline;
pub use lines::{CtrlC, Input, Interrupts, LineReader, NoInterrupts, PlainLines};
pub use turns::TurnRunner;

/// The runner's conversation across turns, which [`run_chat`] keeps.
pub use agent_runner::ChatSession;
