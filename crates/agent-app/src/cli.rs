//! The `agentry` command line: argument parsing (clap) and the commands.
//!
//! ```text
//! agentry run [--config F] [--provider P] [--model M] [--base-url URL]
//!             [--tools a,b] [--max-iterations N] [--session NAME]
//!             [--stream | --schema FILE] [--json] PROMPT
//! agentry resume [--config F] [--provider P] [--model M] [--base-url URL]
//!                [--tools a,b] [--stream] [--json]
//!                [--approve ID]... [--deny ID]... [--reason TEXT] SESSION
//! agentry chat [same options as run]
//! agentry demo [--config F] [--provider P] [--model M] [--base-url URL]
//! agentry tools [--config F] [--tools a,b] [--json]
//! agentry sessions list|show NAME|delete NAME
//! agentry mcp [--config F] [--tools a,b]
//! agentry [--verbose] [--quiet] COMMAND ...
//! ```
//!
//! On a terminal, stderr shows what a run is doing (loading the model,
//! waiting for the provider, reading the prompt, writing, running a tool)
//! on one line that is cleared when done; `--quiet` turns it off, and it
//! never shows when stderr is not a terminal. Stdout is the same either way.
//!
//! `agentry mcp` is an MCP server on stdio: `tools/list` gives the enabled
//! tools, `tools/call` runs one through the registry (validated, checked,
//! traced) and answers with its text, or `isError` and the error. Only MCP
//! messages go to stdout; logs (`--verbose`, `RUST_LOG`) go to stderr.
//! MCP servers configured as `[mcp.servers.NAME]` are tool domains NAME
//! for every command (see [`crate::mcp`]).
//!
//! Exit status: 0 success, 2 bad usage or configuration, 1 any other
//! failure (including a run that ends with `stop_reason` `error`,
//! `cancelled` or `budget_exceeded`; with `--json` its object is printed
//! first).

use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agent_core::AgentRunResult;
use agent_runner::ChatSession;
use chrono::NaiveDate;
use clap::{Args, Parser, Subcommand};

use crate::assemble::build_agent;
use crate::chat::{ChatSink, CtrlC, Unsaved, cost_report, run_chat};
use crate::config::{Overrides, Settings};
use crate::console::Console;
use crate::env::Env;
use crate::error::{AppError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use crate::providers::{Progress, build_client};
use crate::sessions::{SessionStore, not_found};
#[cfg(feature = "telemetry")]
use crate::telemetry::Telemetry;
use crate::tools::ToolBox;

/// Agentry: tool-using LLM agents from the command line.
#[derive(Debug, Clone, Parser)]
#[command(name = "agentry", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Log what happens to stderr (RUST_LOG selects what; default `info`, llama.cpp's own logs at `warn`).
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// Show no progress on stderr (loading the model, waiting for the
    /// provider, reading the prompt, writing, running a tool); it shows only
    /// when stderr is a terminal anyway.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Run one prompt and print the answer.
    Run(RunArgs),
    /// Continue the interrupted run of a session (a crash, or Ctrl-C during
    /// `run --session`) from its last step, or a run paused for approval
    /// (--approve / --deny the waiting calls).
    Resume(ResumeArgs),
    /// Talk with the agent: streaming, with history (/help inside).
    Chat(ChatArgs),
    /// The Travel Assistant demo: ten turns of one conversation.
    Demo(DemoArgs),
    /// List the enabled tools and their argument schemas.
    Tools(ToolsArgs),
    /// Stored conversations (see --session).
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Serve the enabled tools as an MCP server over stdio (for Claude
    /// Desktop, IDEs, other agents).
    Mcp(crate::mcp::McpArgs),
    /// Serve the agent over HTTP: OpenAI-compatible /v1/chat/completions,
    /// /v1/runs, /healthz, /readyz (API keys from [serve]).
    Serve(crate::serve::ServeArgs),
    /// Trust the agentry.toml of the working directory (or DIR): it may then
    /// start its MCP servers and send keys where it says (a change to the
    /// file withdraws the trust).
    Trust(crate::trust::TrustArgs),
}

/// Options that choose the provider and model (shared by `run`, `chat` and `demo`).
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderOptions {
    /// Configuration file (default: $AGENTRY_CONFIG, else ./agentry.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Provider (the ones this build has are listed in the help text).
    #[arg(long, value_name = "NAME", help = provider_help())]
    pub provider: Option<String>,
    /// Model name (or, for llama, a .gguf file).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Base URL of the chosen provider (e.g. http://localhost:8000/v1).
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,
}

/// The `--provider` help: only the providers compiled into this build.
fn provider_help() -> String {
    format!("Provider: {}", crate::providers::ProviderKind::compiled_names())
}

impl ProviderOptions {
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            config: self.config.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            ..Overrides::default()
        }
    }
}

/// Options that choose and shape the agent (shared by `run`, `chat` and `serve`).
#[derive(Debug, Clone, Default, Args)]
pub struct AgentShape {
    /// Provider and model.
    #[command(flatten)]
    pub provider: ProviderOptions,
    /// Tool domains to enable, comma-separated (replaces [tools] enabled; "" for none).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Model calls that may request tools before the answer is forced.
    #[arg(long = "max-iterations", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,
}

impl AgentShape {
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            tools: self.tools.as_deref().map(tool_list),
            max_iterations: self.max_iterations,
            ..self.provider.overrides()
        }
    }
}

/// The agent's options and the stored conversation it continues (`run`, `chat`).
#[derive(Debug, Clone, Default, Args)]
pub struct AgentOptions {
    /// Provider, model, tools and iterations.
    #[command(flatten)]
    pub shape: AgentShape,
    /// Continue the stored conversation NAME, and save it afterwards.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
}

impl AgentOptions {
    pub(crate) fn overrides(&self) -> Overrides {
        self.shape.overrides()
    }
}

/// `--tools a,b` as domain names: trimmed, empty entries dropped (so `--tools ""` means none).
fn tool_list(tools: &[String]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect()
}

/// `agentry run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Agent options.
    #[command(flatten)]
    pub agent: AgentOptions,
    /// Stream the reply and print text as it arrives.
    #[arg(long)]
    pub stream: bool,
    /// Print one JSON object with the answer, tool calls and usage (only that, even with --stream).
    #[arg(long)]
    pub json: bool,
    /// The answer must be JSON matching this JSON Schema file: it is asked
    /// for in that format, validated (retried once), and printed as JSON
    /// (with --json: as the object's `output` key).
    #[arg(long, value_name = "FILE", conflicts_with = "stream")]
    pub schema: Option<PathBuf>,
    /// The prompt ("-" reads it from standard input).
    #[arg(value_name = "PROMPT")]
    pub prompt: String,
}

/// `agentry resume`.
#[derive(Debug, Clone, Args)]
pub struct ResumeArgs {
    /// Provider and model: they must be those of the interrupted run.
    #[command(flatten)]
    pub provider: ProviderOptions,
    /// Tool domains to enable, comma-separated (replaces [tools] enabled).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Stream the reply and print text as it arrives.
    #[arg(long)]
    pub stream: bool,
    /// Print one JSON object with the answer, tool calls and usage, as `run --json` does.
    #[arg(long)]
    pub json: bool,
    /// Approve the waiting tool call ID (of a run paused with stop reason
    /// `awaiting_approval`); repeat for several.
    #[arg(long, value_name = "ID")]
    pub approve: Vec<String>,
    /// Deny the waiting tool call ID: it does not run, the model is told the
    /// user refused it; repeat for several.
    #[arg(long, value_name = "ID")]
    pub deny: Vec<String>,
    /// Why the calls given with --deny were refused (the model reads it).
    #[arg(long, value_name = "TEXT", requires = "deny")]
    pub reason: Option<String>,
    /// The session whose run to continue.
    #[arg(value_name = "SESSION")]
    pub session: String,
}

impl ResumeArgs {
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            tools: self.tools.as_deref().map(tool_list),
            ..self.provider.overrides()
        }
    }
}

/// `agentry chat`.
#[derive(Debug, Clone, Args)]
pub struct ChatArgs {
    /// Agent options.
    #[command(flatten)]
    pub agent: AgentOptions,
}

/// `agentry demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Provider and model (default: the configured ones, else the embedded local model).
    #[command(flatten)]
    pub provider: ProviderOptions,
    /// After the ten turns, check each against its expectations (tools
    /// called and not, their arguments, facts in the answer, questions back)
    /// and print a verdict per turn and the score, N/10.
    #[arg(long)]
    pub check: bool,
    /// With --check: exit 1 when fewer than N turns pass.
    #[arg(long, value_name = "N", requires = "check")]
    pub min_pass: Option<usize>,
    /// The date the demo takes as today (YYYY-MM-DD; default: the system
    /// date). The prompts and the tools' data depend on it, so a fixed date
    /// repeats a run.
    #[arg(long, value_name = "DATE")]
    pub today: Option<NaiveDate>,
}

/// `agentry tools`.
#[derive(Debug, Clone, Args)]
pub struct ToolsArgs {
    /// Configuration file (default: $AGENTRY_CONFIG, else ./agentry.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Tool domains to list, comma-separated (replaces [tools] enabled).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Print JSON: {"domains": [...], "tools": [{domain, name, description, input_schema}]}.
    #[arg(long)]
    pub json: bool,
}

/// `agentry sessions`.
#[derive(Debug, Clone, Subcommand)]
pub enum SessionsCommand {
    /// List the stored sessions, most recent first.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a stored session.
    Show {
        /// The session.
        name: String,
        /// Print the stored JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a stored session.
    Delete {
        /// The session.
        name: String,
    },
}

/// The binary's entry point: parses the process arguments, runs the
/// command, and returns its exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE));
        }
    };
    let env = Env::from_process();
    let telemetry = init_tracing(&cli, &env);
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => {
            eprintln!("error: cannot read the working directory: {error}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let code = match runtime.block_on(execute(cli, &env, &cwd)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    };
    // Do not wait for a model download or a tool still running on a
    // blocking thread after a cancelled run.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    #[cfg(feature = "telemetry")]
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    // Without the `telemetry` feature there is no export to shut down.
    #[cfg(not(feature = "telemetry"))]
    let _ = telemetry;
    ExitCode::from(code)
}

/// What is shut down before exit: the OTLP export, when there is one (a
/// build without the `telemetry` feature has none).
#[cfg(feature = "telemetry")]
type Export = Telemetry;
#[cfg(not(feature = "telemetry"))]
type Export = ();

/// Installs the tracing subscriber: the stderr log when `RUST_LOG` is set
/// or `--verbose` is given, and, when the configuration has
/// `[telemetry] otlp_endpoint`, the OTLP export of spans and a `metrics`
/// recorder (returned, to be shut down before exit). A configuration that
/// does not load is left to the command to report.
fn init_tracing(cli: &Cli, env: &Env) -> Option<Export> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let filter = match (env.get("RUST_LOG"), cli.verbose) {
        (Some(filter), _) => Some(filter),
        // llama.cpp logs every load step at info level: only its warnings by default.
        (None, true) => Some("info,llama-cpp-2=warn".to_owned()),
        (None, false) => None,
    };
    let fmt = filter.map(|filter| {
        tracing_subscriber::fmt::layer()
            .with_writer(io::stderr)
            .with_filter(tracing_subscriber::EnvFilter::new(filter))
    });
    let config = match &cli.command {
        Command::Run(args) => args.agent.shape.provider.config.clone(),
        Command::Chat(args) => args.agent.shape.provider.config.clone(),
        Command::Resume(args) => args.provider.config.clone(),
        Command::Demo(args) => args.provider.config.clone(),
        Command::Mcp(args) => args.config.clone(),
        Command::Serve(args) => args.agent.provider.config.clone(),
        Command::Tools(_) | Command::Sessions(_) | Command::Trust(_) => None,
    };
    let settings = match &cli.command {
        Command::Tools(_) | Command::Sessions(_) | Command::Trust(_) => None,
        _ => std::env::current_dir().ok().and_then(|cwd| {
            let overrides = Overrides {
                config,
                ..Overrides::default()
            };
            Settings::load(&overrides, env, &cwd).ok()
        }),
    };
    #[cfg(feature = "telemetry")]
    if let Some((telemetry, tracer)) = settings.and_then(|settings| start_export(&settings)) {
        return Some(install_with_export(fmt, telemetry, tracer));
    }
    #[cfg(not(feature = "telemetry"))]
    if settings.is_some_and(|settings| settings.config.telemetry.otlp_endpoint.is_some()) {
        eprintln!(
            "warning: {}; nothing is exported",
            crate::error::ConfigError::not_compiled("the OTLP export of `[telemetry]`", "telemetry")
        );
    }
    if let Some(fmt) = fmt {
        let _ = tracing_subscriber::registry().with(fmt).try_init();
    }
    None
}

/// The OTLP export `[telemetry]` asks for, started; a failure is a warning.
#[cfg(feature = "telemetry")]
fn start_export(settings: &Settings) -> Option<(Telemetry, opentelemetry_sdk::trace::Tracer)> {
    match Telemetry::start(&settings.config.telemetry) {
        Ok(started) => started,
        Err(error) => {
            eprintln!("warning: {error}; nothing is exported");
            None
        }
    }
}

/// The stderr log `fmt` (if any) and the OTLP export, installed together.
#[cfg(feature = "telemetry")]
fn install_with_export<F>(fmt: Option<F>, telemetry: Telemetry, tracer: opentelemetry_sdk::trace::Tracer) -> Telemetry
where
    F: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    // The exporter's own HTTP client logs through tracing too: never export those.
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::EnvFilter::new(
            "info,llama-cpp-2=warn,opentelemetry=off,opentelemetry_sdk=off,opentelemetry_otlp=off,opentelemetry_http=off,reqwest=off,hyper=off,hyper_util=off,h2=off",
        ));
    if tracing_subscriber::registry().with(fmt).with(otel).try_init().is_ok()
        && metrics::set_global_recorder(telemetry.recorder()).is_ok()
    {
        agent_tools::telemetry::describe_metrics();
    }
    telemetry
}

/// Runs a parsed command; returns the exit status of a command that
/// reported its own failure, or the error to report.
pub async fn execute(cli: Cli, env: &Env, cwd: &Path) -> Result<u8, AppError> {
    let quiet = cli.quiet;
    match cli.command {
        Command::Run(args) => crate::runs::run(args, env, cwd, quiet).await,
        Command::Resume(args) => crate::runs::resume(args, env, cwd, quiet).await,
        Command::Chat(args) => chat(args, env, cwd, quiet).await,
        Command::Demo(args) => demo(args, env, cwd, quiet).await,
        Command::Tools(args) => tools(&args, env, cwd).await,
        Command::Sessions(command) => sessions(command, env).await,
        Command::Mcp(args) => crate::mcp::serve(&args, env, cwd).await,
        Command::Serve(args) => crate::serve::serve(args, env, cwd, quiet).await,
        Command::Trust(args) => crate::trust::run(&args, env, cwd),
    }
}

pub(crate) fn stdout_line(text: &str) -> Result<(), AppError> {
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|error| AppError::io("writing to stdout", error))
}

pub(crate) fn read_prompt(prompt: &str) -> Result<String, AppError> {
    let prompt = if prompt == "-" {
        let mut text = String::new();
        io::stdin()
            .read_to_string(&mut text)
            .map_err(|error| AppError::io("reading the prompt from stdin", error))?;
        text
    } else {
        prompt.to_owned()
    };
    if prompt.trim().is_empty() {
        return Err(AppError::Usage(
            "the prompt is empty: pass it as the last argument, or \"-\" to read it from stdin".to_owned(),
        ));
    }
    Ok(prompt)
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
    ) -> Result<(), AppError> {
        let session = &self.session;
        session
            .store
            .record_turn(&session.name, &self.provider, history, result)
            .await
    }

    async fn reset(&mut self) -> Result<(), AppError> {
        self.session.store.reset(&self.session.name).await
    }
}

async fn chat(args: ChatArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    let settings = Settings::load(&args.agent.overrides(), env, cwd)?;
    let tools = ToolBox::from_settings(&settings, env).await?;
    let session = crate::runs::open_session(&settings, args.agent.session.as_deref(), false).await?;
    let client = build_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let router = crate::scenes::router_for(&settings, &client, &tools)?;
    let agent = build_agent(&settings, client, &tools);
    let runner: &dyn crate::scenes::TurnRunner = match &router {
        Some(router) => router,
        None => &agent,
    };
    let history_file = io::stdin()
        .is_terminal()
        .then(|| settings.home.join("chat_history.txt"));
    #[cfg(feature = "line-editor")]
    let mut reader = crate::chat::Rustyline::new(history_file)?;
    #[cfg(not(feature = "line-editor"))]
    let mut reader = {
        let _ = history_file;
        crate::chat::PlainLines::stdio()
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

/// `agentry demo` in a build without the `demo` feature.
#[cfg(not(feature = "demo"))]
#[expect(clippy::unused_async, reason = "the same signature as the build with the demo")]
async fn demo(_: DemoArgs, _: &Env, _: &Path, _: bool) -> Result<u8, AppError> {
    Err(crate::error::ConfigError::not_compiled("`agentry demo`", "demo").into())
}

#[cfg(feature = "demo")]
async fn demo(args: DemoArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    use agent_core::StopCause;
    use agent_travel_assistant::check_demo;

    use crate::assemble::catalog_for;
    use crate::demo::run_demo;

    let settings = Settings::load(&args.provider.overrides(), env, cwd)?;
    let client = build_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let catalog = catalog_for(&settings, client.as_ref());
    let mut options = crate::demo::options(&settings, args.today);
    if let Some(specs) = crate::scenes::specs(&settings)? {
        options.scenes = Some(crate::demo::scenes(&specs, &options)?);
    }
    let console = if quiet {
        Console::new(io::stdout())
    } else {
        Console::stdout()
    };
    let mut console = console.with_text_prefix("assistant> ");
    let reports = run_demo(client, catalog, &options, &mut console).await?;
    let failed = reports
        .iter()
        .filter(|report| report.result.stop_reason == StopCause::Error)
        .count();
    if args.check {
        let checked = check_demo(&reports, options.today);
        stdout_line("")?;
        stdout_line(&checked.to_string())?;
        if let Some(min) = args.min_pass
            && checked.passed() < min
        {
            eprintln!(
                "error: {} of {} turns passed, fewer than --min-pass {min}",
                checked.passed(),
                reports.len()
            );
            return Ok(EXIT_FAILURE);
        }
    }
    if failed > 0 {
        eprintln!("error: {failed} of {} turns failed", reports.len());
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

async fn tools(args: &ToolsArgs, env: &Env, cwd: &Path) -> Result<u8, AppError> {
    let overrides = Overrides {
        config: args.config.clone(),
        tools: args.tools.as_deref().map(tool_list),
        ..Overrides::default()
    };
    let settings = Settings::load(&overrides, env, cwd)?;
    let tools = ToolBox::from_settings(&settings, env).await?;
    if args.json {
        let value = serde_json::json!({"domains": tools.domains(), "tools": tools.listing()});
        stdout_line(&serde_json::to_string_pretty(&value).unwrap_or_default())?;
    } else {
        stdout_line(tools.describe().trim_end())?;
    }
    Ok(EXIT_OK)
}

async fn sessions(command: SessionsCommand, env: &Env) -> Result<u8, AppError> {
    let store = SessionStore::open(env.agentry_home().join("sessions")).await?;
    match command {
        SessionsCommand::List { json } => {
            let sessions = store.list().await?;
            if json {
                stdout_line(&serde_json::to_string_pretty(&sessions).unwrap_or_default())?;
            } else if sessions.is_empty() {
                stdout_line(&format!(
                    "no stored sessions in {} (start one with `agentry chat --session NAME`)",
                    store.dir().display()
                ))?;
            } else {
                for session in sessions {
                    let interrupted = if session.interrupted {
                        format!("  (interrupted run: `agentry resume {}` continues it)", session.name)
                    } else {
                        String::new()
                    };
                    stdout_line(&format!(
                        "{:<24} {:>3} turns  {}{interrupted}",
                        session.name, session.turns, session.updated_at
                    ))?;
                }
            }
        }
        SessionsCommand::Show { name, json } => {
            let session = store.show(&name).await?.ok_or_else(|| not_found(&name))?;
            if json {
                stdout_line(&serde_json::to_string_pretty(&session).unwrap_or_default())?;
            } else {
                stdout_line(session.transcript().trim_end())?;
            }
        }
        SessionsCommand::Delete { name } => {
            store.delete(&name).await?;
            stdout_line(&format!("deleted session {name}"))?;
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_contract_flags_parse() {
        let cli = Cli::try_parse_from([
            "agentry",
            "run",
            "--config",
            "a.toml",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--tools",
            "math,travel",
            "--max-iterations",
            "3",
            "--session",
            "s1",
            "--stream",
            "--json",
            "What is 2+2?",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert!(args.stream && args.json);
        assert_eq!(args.prompt, "What is 2+2?");
        let overrides = args.agent.overrides();
        assert_eq!(overrides.tools, Some(vec!["math".to_owned(), "travel".to_owned()]));
        assert_eq!(overrides.max_iterations, Some(3));
        assert_eq!(args.agent.session.as_deref(), Some("s1"));

        for argv in [
            vec!["agentry", "chat", "--provider", "llama", "--session", "x"],
            vec!["agentry", "demo"],
            vec!["agentry", "tools", "--json"],
            vec!["agentry", "sessions", "list"],
            vec!["agentry", "sessions", "show", "x"],
            vec!["agentry", "sessions", "delete", "x"],
            vec!["agentry", "--verbose", "tools"],
            vec!["agentry", "run", "--quiet", "--json", "x"],
            vec!["agentry", "-q", "chat"],
            vec!["agentry", "mcp", "--config", "a.toml", "--tools", "math,time"],
        ] {
            Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        }
    }

    #[test]
    fn bad_usage_is_exit_status_2() {
        for argv in [
            vec!["agentry", "run"],
            vec!["agentry", "run", "--max-iterations", "0", "x"],
            vec!["agentry", "run", "--max-iterations", "many", "x"],
            vec!["agentry", "fly"],
        ] {
            let error = Cli::try_parse_from(&argv).err();
            assert_eq!(error.map(|e| e.exit_code()), Some(2), "{argv:?}");
        }
    }
}
