//! `agentry chat`: an interactive, streaming conversation, the loop of
//! [`agent_console::run_chat`] on the terminal (the line editor with the
//! `line-editor` feature, else plain lines; Ctrl-C), each turn stored in
//! the `--session` when one is named.

use std::io::{self, IsTerminal as _};
use std::path::Path;

use agent_console::{ChatSession, ChatSink, Console, CtrlC, SinkError, TurnRunner, Unsaved, cost_report, run_chat};
use agent_core::AgentRunResult;
use agentry::config::{Env, Settings};
use clap::Args;

use crate::args::AgentOptions;
use crate::assemble::build_agent;
use crate::error::{AppError, EXIT_OK};
use crate::providers::{Progress, build_client};

/// `agentry chat`.
#[derive(Debug, Clone, Args)]
pub struct ChatArgs {
    /// Agent options.
    #[command(flatten)]
    pub agent: AgentOptions,
}

/// A chat's session: every turn is stored as it ends.
struct StoredChat {
    session: crate::runs::OpenSession,
    provider: String,
}

#[async_trait::async_trait]
impl ChatSink for StoredChat {
    async fn turn_finished(
        &mut self,
        history: &[agent_core::Message],
        result: &AgentRunResult,
    ) -> Result<(), SinkError> {
        let session = &self.session;
        session
            .store
            .record_turn(&session.name, &self.provider, history, result)
            .await
            .map_err(SinkError::from)
    }

    async fn reset(&mut self) -> Result<(), SinkError> {
        self.session
            .store
            .reset(&self.session.name)
            .await
            .map_err(SinkError::from)
    }
}

/// `agentry chat`; `quiet` (`--quiet`) shows no progress.
pub(crate) async fn chat(args: ChatArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    let settings = Settings::load(&args.agent.overrides(), env, cwd)?;
    let tools = crate::tools::ToolBox::from_settings(&settings, env).await?;
    let session = crate::runs::open_session(&settings, args.agent.session.as_deref(), false).await?;
    let client = build_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let router = crate::scenes::router_for(&settings, &client, &tools)?;
    let agent = build_agent(&settings, client, &tools);
    let runner: &dyn TurnRunner = match &router {
        Some(router) => router,
        None => &agent,
    };
    let history_file = io::stdin()
        .is_terminal()
        .then(|| settings.home.join("chat_history.txt"));
    #[cfg(feature = "line-editor")]
    let mut reader =
        agent_console::Rustyline::new(history_file).map_err(|error| AppError::io("starting the line editor", error))?;
    #[cfg(not(feature = "line-editor"))]
    let mut reader = {
        let _ = history_file;
        agent_console::PlainLines::stdio()
    };
    let mut console = if quiet {
        Console::new(io::stdout())
    } else {
        Console::stdout()
    };
    let model = agent.client().model().to_owned();
    let provider = settings.provider()?.name().to_owned();
    let (mut conversation, mut sink): (ChatSession, Box<dyn ChatSink>) = match session {
        Some(session) => (
            ChatSession::with_history(session.messages.clone()),
            Box::new(StoredChat { session, provider }),
        ),
        None => (ChatSession::default(), Box::new(Unsaved)),
    };
    // Leaving with Ctrl-C is as deliberate as /exit: both end with status 0.
    run_chat(
        runner,
        &mut reader,
        &mut console,
        &CtrlC,
        &mut conversation,
        sink.as_mut(),
    )
    .await?;
    if conversation.runs > 0 {
        console
            .line(&cost_report(&conversation, &model))
            .map_err(|error| AppError::io("writing to stdout", error))?;
    }
    Ok(EXIT_OK)
}
