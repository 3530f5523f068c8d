//! The `agentry` command line: argument parsing (clap) and the commands.
//!
//! ```text
//! agentry run [--config F] [--provider P] [--model M] [--base-url URL]
//!             [--tools a,b] [--max-iterations N] [--session NAME]
//!             [--stream | --schema FILE] [--attach FILE]... [--json] PROMPT
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
//! Exit status: 0 success, 2 bad usage or configuration, 130 a run of
//! `run` or `resume` cancelled by Ctrl-C / SIGINT (`stop_reason`
//! `cancelled`; the shell's 128 + 2), 1 any other failure (including a run
//! that ends with `stop_reason` `error` or `budget_exceeded`). With
//! `--json` the run's object is printed first.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::args::{DemoArgs, tool_list};
use crate::chat::ChatArgs;
use crate::error::{AppError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use crate::output::stdout_line;
use crate::runs::{ResumeArgs, RunArgs};
use crate::sessions::{SessionStore, not_found};
use agentry::config::{Env, Overrides, Settings};
#[cfg(feature = "telemetry")]
use agentry::telemetry::{Telemetry, Tracer};

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
fn start_export(settings: &Settings) -> Option<(Telemetry, Tracer)> {
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
fn install_with_export<F>(fmt: Option<F>, telemetry: Telemetry, tracer: Tracer) -> Telemetry
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
        Command::Chat(args) => crate::chat::chat(args, env, cwd, quiet).await,
        #[cfg(feature = "demo")]
        Command::Demo(args) => crate::demo::run(args, env, cwd, quiet).await,
        #[cfg(not(feature = "demo"))]
        Command::Demo(args) => demo(args, env, cwd, quiet).await,
        Command::Tools(args) => tools(&args, env, cwd).await,
        Command::Sessions(command) => sessions(command, env).await,
        Command::Mcp(args) => crate::mcp::serve(&args, env, cwd).await,
        Command::Serve(args) => crate::serve::serve(args, env, cwd, quiet).await,
        Command::Trust(args) => crate::trust::run(&args, env, cwd),
    }
}

/// `agentry demo` in a build without the `demo` feature.
#[cfg(not(feature = "demo"))]
#[expect(clippy::unused_async, reason = "the same signature as the build with the demo")]
async fn demo(_: DemoArgs, _: &Env, _: &Path, _: bool) -> Result<u8, AppError> {
    Err(crate::error::ConfigError::not_compiled("`agentry demo`", "demo").into())
}

async fn tools(args: &ToolsArgs, env: &Env, cwd: &Path) -> Result<u8, AppError> {
    let overrides = Overrides {
        config: args.config.clone(),
        tools: args.tools.as_deref().map(tool_list),
        ..Overrides::default()
    };
    let settings = Settings::load(&overrides, env, cwd)?;
    let tools = crate::tools::ToolBox::from_settings(&settings, env).await?;
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
