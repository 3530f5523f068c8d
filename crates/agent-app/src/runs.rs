//! `agentry run` and `agentry resume`: one user turn, optionally continuing
//! a stored session, saved as it goes so an interrupted run can be resumed.
//! `run --schema FILE` is a typed run: the answer must be JSON matching the
//! schema (see [`Agent::run_json`]).
//!
//! With `--session NAME`, the run's state is saved in the session store
//! after every step (each model reply and each finished tool call). When
//! the run ends its turn is appended, which drops the saved state in the
//! same transaction. When it does not end (the process is killed, or
//! Ctrl-C cancels it), the saved state stays and `agentry resume NAME`
//! continues the run from there: tool calls that had finished are not run
//! again, and the run's deadline is the one it started with (or an
//! earlier one, see below).
//!
//! A resumed run is held to the configuration of today, not to what its
//! saved state says: calls of tools that `[tools] require_approval` names
//! wait for `--approve` (whatever the saved state says is waiting), tools no
//! longer enabled do not run, and each budget, the iteration limit and the
//! deadline (now plus the configured limit) is the stricter of the saved and
//! the configured one. A saved run of another agent, provider or model is
//! refused (exit 2), one at odds with itself too (exit 1). Its turn is
//! appended after whatever the session stored meanwhile.
//!
//! A run that reaches calls of tools that require approval (`[tools]
//! require_approval`) pauses before them with stop reason
//! `awaiting_approval`: its state stays saved in the session and
//! `agentry resume NAME --approve ID` / `--deny ID` decides the waiting calls
//! and continues it (a denied call is an error result the model reads).

use std::io::{self, IsTerminal, Read as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{
    AgentEvent, AgentRunResult, ApprovalDecision, Attachment, CancellationToken, LlmErrorKind, Message, RunEnd,
    ToolContext,
};
use agent_runner::scenes::{SceneError, SceneRouter};
use agent_runner::{
    Agent, ResumeError, RunCheckpoints, RunState, SavedRun, SavedRunError, StoreCheckpoints, TypedError, check_schema,
};
use clap::Args;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::args::{AgentOptions, ProviderOptions};
use crate::assemble::build_agent;
use crate::error::{AppError, EXIT_FAILURE};
use crate::output::{RunOutput, exit_status, stdout_line};
use crate::providers::{Progress, build_client};
use crate::sessions::{SessionLock, SessionStore, validate_name};
use agent_console::{Console, brief, stop_note};
use agentry::config::{Env, Overrides, Settings};

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
    /// Send this image, PDF, text file or recording with the prompt
    /// (repeatable); its type is checked against its content.
    #[arg(long = "attach", value_name = "FILE")]
    pub attach: Vec<PathBuf>,
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
    /// The flags as configuration overrides.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            tools: self.tools.as_deref().map(crate::args::tool_list),
            ..self.provider.overrides()
        }
    }
}

/// The prompt argument, or stdin's text for `-`; an empty one is a usage error.
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

/// A session in use by this process: loaded under its lock, which is held
/// until this is dropped, after its last turn is stored.
pub(crate) struct OpenSession {
    pub store: SessionStore,
    pub name: String,
    /// The conversation the next run continues.
    pub messages: Vec<Message>,
    /// A run of the session was interrupted and can be resumed.
    pub interrupted: bool,
    _lock: SessionLock,
}

/// The session to continue, if `--session` was given, locked first. When
/// another process holds it, `wait` waits for it (saying so on stderr);
/// otherwise this fails.
pub(crate) async fn open_session(
    settings: &Settings,
    name: Option<&str>,
    wait: bool,
) -> Result<Option<OpenSession>, AppError> {
    let Some(name) = name else { return Ok(None) };
    validate_name(name)?;
    let store = SessionStore::open(settings.sessions_dir()).await?;
    let lock = {
        let (store, name) = (store.clone(), name.to_owned());
        tokio::task::spawn_blocking(move || {
            store.lock(&name, wait, || {
                eprintln!("waiting for the session `{name}`: another agentry process is using it");
            })
        })
        .await
        .map_err(|error| AppError::Session(format!("locking the session failed: {error}")))??
    };
    let conversation = store.load_or_create(name).await?;
    Ok(Some(OpenSession {
        store,
        name: name.to_owned(),
        messages: conversation.messages,
        interrupted: conversation.meta.has_checkpoint,
        _lock: lock,
    }))
}

/// `agentry run`; `quiet` (`--quiet`) shows no progress.
pub(crate) async fn run(args: RunArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    let prompt = read_prompt(&args.prompt)?;
    let schema = args.schema.as_deref().map(|path| read_schema(path, cwd)).transpose()?;
    let attachments = agentry::media::attachments_from_files(&args.attach, cwd)
        .map_err(|error| AppError::Usage(error.to_string()))?;
    let settings = Settings::load(&args.agent.overrides(), env, cwd)?;
    let tools = crate::tools::ToolBox::from_settings(&settings, env).await?;
    let session = open_session(&settings, args.agent.session.as_deref(), true).await?;
    if let Some(open) = session.as_ref().filter(|open| open.interrupted) {
        eprintln!(
            "note: the session `{}` had an interrupted run; this run replaces it \
             (`agentry resume {}` would have continued it)",
            open.name, open.name
        );
    }
    let client = build_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let output = Output {
        stream: args.stream,
        json: args.json,
        progress: !quiet,
    };
    if let Some(router) = crate::scenes::router_for(&settings, &client, &tools)? {
        if schema.is_some() {
            return Err(AppError::Usage(
                "--schema does not apply when [scenes] are configured; use another configuration file".to_owned(),
            ));
        }
        return scene_run(&settings, &router, (prompt, attachments), session.as_ref(), output).await;
    }
    let agent = build_agent(&settings, client, &tools);
    let history = session.as_ref().map(|open| open.messages.clone()).unwrap_or_default();
    let prompt = Message::user_with(prompt, attachments);
    if let Some(schema) = schema {
        return typed_run(&settings, &agent, prompt, schema, session.as_ref(), &history, args.json).await;
    }
    let continued = history.len();
    let state = agent.start_message(history, prompt);
    finish(&settings, &agent, state, session.as_ref(), continued, output).await
}

/// The JSON Schema of `run --schema FILE` (relative to `cwd`): a file that
/// cannot be read, is not JSON or is not a usable schema is a usage error
/// naming the file.
fn read_schema(path: &Path, cwd: &Path) -> Result<Value, AppError> {
    let full = cwd.join(path);
    let shown = path.display();
    let text = std::fs::read_to_string(&full)
        .map_err(|error| AppError::Usage(format!("cannot read the schema file {shown}: {error}")))?;
    let schema: Value = serde_json::from_str(&text)
        .map_err(|error| AppError::Usage(format!("the schema file {shown} is not valid JSON: {error}")))?;
    check_schema(&schema)
        .map_err(|error| AppError::Usage(format!("the schema file {shown} is not a usable JSON Schema: {error}")))?;
    Ok(schema)
}

/// `agentry run --schema`: a typed run ([`Agent::run_json`]). The
/// validated answer is printed as pretty JSON on stdout, or as the `output`
/// key of the `--json` object. An answer that fails validation twice is a
/// failure (exit 1) with the violations on stderr. With `--session` the
/// turn (both attempts) is stored as a plain run's is; no checkpoints are
/// saved during it.
async fn typed_run(
    settings: &Settings,
    agent: &Agent,
    prompt: Message,
    schema: Value,
    session: Option<&OpenSession>,
    history: &[Message],
    json: bool,
) -> Result<u8, AppError> {
    let (context, on_ctrl_c) = cancel_on_ctrl_c();
    let outcome = agent.run_json_message(history.to_vec(), prompt, schema, &context);
    let outcome = outcome.await;
    on_ctrl_c.abort();
    let (result, output, error) = match outcome {
        Ok(run) => (run.result, Some(run.value), None),
        Err(TypedError::Schema(message)) => {
            return Err(AppError::Usage(format!("the schema is not usable: {message}")));
        }
        Err(error) => match error.result().cloned() {
            Some(result) => (result, None, Some(error)),
            None => return Err(AppError::RunFailed(error.to_string())),
        },
    };

    if json {
        let mut object = RunOutput::from_result(&result);
        settings.provider()?.name().clone_into(&mut object.provider);
        object.output.clone_from(&output);
        stdout_line(&object.to_json())?;
    } else if let Some(output) = &output {
        let pretty = serde_json::to_string_pretty(output)
            .map_err(|error| AppError::RunFailed(format!("the answer could not be printed: {error}")))?;
        stdout_line(&pretty)?;
    }

    if let Some(open) = session
        && result.stop_reason != RunEnd::Cancelled
    {
        let provider = settings.provider()?.name();
        open.store.record_turn(&open.name, provider, history, &result).await?;
    }
    match &error {
        Some(TypedError::Invalid {
            violations, attempts, ..
        }) => {
            eprintln!("error: the answer does not match the schema after {attempts} attempts:");
            for violation in violations {
                eprintln!("  - {violation}");
            }
        }
        Some(_) if result.stop_reason == RunEnd::Error => {
            eprintln!("error: {}", result.stop_detail.as_deref().unwrap_or("the run failed"));
        }
        Some(error) => {
            if let Some(note) = stop_note(result.stop_reason, result.stop_detail.as_deref()) {
                eprintln!("{note}");
            } else {
                eprintln!("error: {error}");
            }
        }
        None => {
            if let Some(note) = stop_note(result.stop_reason, result.stop_detail.as_deref()) {
                eprintln!("{note}");
            }
        }
    }
    // A cancelled run is an interrupt (130), whatever the typed run said.
    Ok(if error.is_some() && result.stop_reason != RunEnd::Cancelled {
        EXIT_FAILURE
    } else {
        exit_status(result.stop_reason)
    })
}

/// `agentry resume`; `quiet` (`--quiet`) shows no progress.
pub(crate) async fn resume(args: ResumeArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    let settings = Settings::load(&args.overrides(), env, cwd)?;
    let tools = crate::tools::ToolBox::from_settings(&settings, env).await?;
    let session = open_session(&settings, Some(&args.session), true).await?;
    let Some(session) = session else {
        return Err(AppError::Session(format!("no session named `{}`", args.session)));
    };
    let name = &session.name;
    let saved = session
        .store
        .conversations()
        .checkpoint(name)
        .await
        .map_err(|error| crate::sessions::store_error(name, error))?
        .ok_or_else(|| {
            AppError::Session(format!(
                "the session `{name}` has no interrupted run to resume; `agentry run --session {name} PROMPT` \
                 starts a new one"
            ))
        })?;
    let state = SavedRun::decode(saved).map_err(|error| match error {
        SavedRunError::Unreadable(_) => AppError::Session(format!(
            "the interrupted run of `{name}` {error}; `agentry run --session {name} PROMPT` starts a new one"
        )),
        SavedRunError::OtherFormat { .. } => AppError::Session(format!("the interrupted run of `{name}` {error}")),
    })?;
    let client = build_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let identity = state.identity();
    if !identity.is_served_by(client.as_ref()) {
        return Err(AppError::Usage(format!(
            "the interrupted run of `{name}` used {}/{}, not {}/{}; resume it with --provider and --model \
             naming the same model",
            identity.provider,
            identity.model,
            client.provider(),
            client.model()
        )));
    }
    let agent = build_agent(&settings, client, &tools);
    // Today's configuration applies, not what the saved state says: calls
    // of tools that require approval wait for it, tools no longer enabled
    // do not run, the stricter budgets hold. Decisions come after.
    let mut state = agent.restore(state).map_err(|error| refused(name, &error))?;
    decide(&mut state, &args)?;
    // The turn starts where the saved run started, whatever was stored since.
    let continued = state.continued_messages().unwrap_or(session.messages.len());
    let output = Output {
        stream: args.stream,
        json: args.json,
        progress: !quiet,
    };
    finish(&settings, &agent, state, Some(&session), continued, output).await
}

/// Why the saved run of the session `name` cannot be resumed: the run of
/// another agent, provider or model is a usage error (resume it as it was
/// configured); a state at odds with itself is a session error.
fn refused(name: &str, error: &ResumeError) -> AppError {
    match error {
        ResumeError::OtherRun { .. } => AppError::Usage(format!(
            "the interrupted run of `{name}` cannot be resumed by this configuration: {error}; resume it with \
             the configuration it ran with, or `agentry run --session {name} PROMPT` starts a new run"
        )),
        _ => AppError::Session(format!(
            "the interrupted run of `{name}` cannot be resumed: {error}; `agentry run --session {name} PROMPT` \
             starts a new run"
        )),
    }
}

/// Applies `resume --approve/--deny` to the saved run: an id that is not
/// waiting is a usage error naming the waiting ones.
fn decide(state: &mut RunState, args: &ResumeArgs) -> Result<(), AppError> {
    let decisions = args
        .approve
        .iter()
        .map(|id| (id, ApprovalDecision::Approve))
        .chain(args.deny.iter().map(|id| {
            (
                id,
                ApprovalDecision::Deny {
                    reason: args.reason.clone(),
                },
            )
        }));
    for (id, decision) in decisions {
        state
            .decide(id, decision)
            .map_err(|error| AppError::Usage(format!("{error} (the session `{}` is unchanged)", args.session)))?;
    }
    Ok(())
}

/// How a run is printed: streamed as it goes, and/or as the `--json` object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Output {
    pub stream: bool,
    pub json: bool,
    /// Progress on stderr (when it is a terminal): not with `--quiet`.
    pub progress: bool,
}

impl Output {
    /// The console that shows the run as it goes, if any: with `--stream`
    /// (and no `--json`) its text on stdout and its notes on stderr;
    /// otherwise only the progress on stderr (the run is printed when it
    /// ends). Progress (the progress line, the tools' spinners) shows only
    /// on a terminal and not with `--quiet`.
    pub(crate) fn console(self) -> Option<Console> {
        if self.stream && !self.json {
            let console = Console::new(io::stdout()).with_notes(io::stderr());
            return Some(if self.progress {
                console.with_spinners()
            } else {
                console
            });
        }
        self.progress.then(Console::progress_only)
    }

    /// Whether the run is watched through its events: streamed, or shown
    /// as it goes on a terminal. (On other outputs it runs as it always
    /// did, unwatched.)
    pub(crate) fn watched(self) -> bool {
        self.stream || (self.progress && io::stderr().is_terminal())
    }
}

/// Drives `state` to its end (saving it after every step when it belongs to
/// `session`), prints the result, stores the turn (which continued the
/// first `continued` messages of the session), and returns the exit status.
async fn finish(
    settings: &Settings,
    agent: &Agent,
    state: RunState,
    session: Option<&OpenSession>,
    continued: usize,
    output: Output,
) -> Result<u8, AppError> {
    let (context, on_ctrl_c) = cancel_on_ctrl_c();
    let checkpoints = session.map(|open| {
        Arc::new(StoreCheckpoints::new(
            Arc::clone(open.store.conversations()),
            open.name.clone(),
        )) as Arc<dyn RunCheckpoints>
    });
    let mut request = agent.resume(state).context(context);
    if let Some(checkpoints) = checkpoints {
        request = request.checkpoints(checkpoints);
    }
    let result = if output.watched() {
        // Without --stream the model's replies are asked for whole, as
        // unwatched runs ask for them, unless it runs in this process, where
        // streaming costs nothing and shows how far the model got.
        if !(output.stream || settings.provider()?.runs_in_process()) {
            request = request.whole_replies();
        }
        print_stream(request.stream(), output.console()).await?
    } else {
        match request.await {
            Ok(result) => result,
            Err(error) => *error.result,
        }
    };
    on_ctrl_c.abort();
    report(settings, &result, output)?;

    // A paused run stays saved in the session, like an interrupted one.
    if let Some(open) = session.filter(|_| result.stop_reason != RunEnd::AwaitingApproval) {
        if result.stop_reason == RunEnd::Cancelled {
            // The saved state stays: the run can go on from its last step.
            eprintln!("the run was interrupted; `agentry resume {}` continues it", open.name);
        } else {
            // A failed turn adds no messages: the stored conversation stays as it was.
            let provider = settings.provider()?.name();
            store_turn_of(open, provider, continued, &result).await?;
        }
    }
    Ok(conclude(&result, session.map(|open| open.name.as_str())))
}

/// Appends the turn of `result`, which continued the first `continued`
/// messages of the session, after what the session holds now
/// ([`agent_runner::store_turn`]).
async fn store_turn_of(
    open: &OpenSession,
    provider: &str,
    continued: usize,
    result: &AgentRunResult,
) -> Result<(), AppError> {
    let name = &open.name;
    if result.added_messages_start(continued).is_none() {
        return Err(AppError::Session(format!(
            "the run's conversation does not continue the stored session `{name}`; its turn was not stored"
        )));
    }
    agent_runner::store_turn(open.store.conversations().as_ref(), name, provider, continued, result)
        .await
        .map(drop)
        .map_err(|error| crate::sessions::store_error(name, error))
}

/// Says on stderr how a printed run ended (the error, why it stopped, or
/// which calls wait for approval: `resumable` names the session that keeps
/// a paused run) and returns its exit status ([`exit_status`]: 130 for a
/// run cancelled by Ctrl-C).
pub(crate) fn conclude(result: &AgentRunResult, resumable: Option<&str>) -> u8 {
    if result.stop_reason == RunEnd::Error {
        eprintln!("error: {}", result.stop_detail.as_deref().unwrap_or("the run failed"));
    } else if result.stop_reason == RunEnd::AwaitingApproval {
        awaiting_note(result, resumable);
    } else if let Some(note) = stop_note(result.stop_reason, result.stop_detail.as_deref()) {
        eprintln!("{note}");
    }
    exit_status(result.stop_reason)
}

/// Says on stderr which calls wait for approval and how to decide them
/// (`session` keeps the paused state; nothing of the turn is stored in its
/// conversation yet).
fn awaiting_note(result: &AgentRunResult, session: Option<&str>) {
    eprintln!("the run paused: these tool calls wait for your approval:");
    for call in &result.pending_approvals {
        eprintln!(
            "  {} {}({})",
            call.id,
            call.name,
            brief(&call.arguments.to_string(), 200)
        );
    }
    if let Some(name) = session {
        eprintln!("`agentry resume {name} --approve ID` runs a call, `--deny ID` refuses it (repeat for several)");
    } else {
        eprintln!(
            "the paused run is not kept: `agentry run --session NAME` (without [scenes]) keeps it to approve and resume"
        );
    }
}

/// Prints a finished run: the `--json` object, or the scene, the tool calls
/// (stderr) and the answer (stdout) unless they were streamed.
pub(crate) fn report(settings: &Settings, result: &AgentRunResult, output: Output) -> Result<(), AppError> {
    if output.json {
        let mut json = RunOutput::from_result(result);
        settings.provider()?.name().clone_into(&mut json.provider);
        stdout_line(&json.to_json())?;
    } else if !output.stream {
        let mut console = Console::new(io::stdout()).with_notes(io::stderr());
        if let Some(scene) = &result.scene {
            console
                .note(&format!("  ⇢ scene {scene}"))
                .map_err(|error| AppError::io("writing to stderr", error))?;
        }
        for call in &result.tool_calls {
            let mark = if call.is_error { "✗" } else { "✓" };
            console
                .note(&format!(
                    "  {mark} {} {} → {}",
                    call.name,
                    brief(&call.arguments.to_string(), 120),
                    brief(&call.result, 120)
                ))
                .map_err(|error| AppError::io("writing to stderr", error))?;
        }
        if !result.response.is_empty() {
            stdout_line(result.response.trim_end())?;
        }
    }
    Ok(())
}

/// Shows a run's `events` as they come on `console` ([`Output::console`]:
/// text to stdout, tool calls and the scene to stderr; or only the
/// progress; or nothing); returns the run's record.
pub(crate) async fn print_stream(
    mut events: impl Stream<Item = AgentEvent> + Unpin,
    mut console: Option<Console>,
) -> Result<AgentRunResult, AppError> {
    let write = |error: io::Error| AppError::io("writing to stdout", error);
    while let Some(event) = events.next().await {
        if let AgentEvent::RunFinished { result } = event {
            if let Some(console) = &mut console {
                console.clear_spinners();
                if console.renders() && !console.text_seen() && !result.response.is_empty() {
                    console.write_text(result.response.trim_end()).map_err(write)?;
                }
                console.end_line().map_err(write)?;
            }
            return Ok(*result);
        }
        if let Some(console) = &mut console {
            console.event(&event).map_err(write)?;
        }
    }
    Err(AppError::RunFailed("the run ended without a result".to_owned()))
}

/// A context whose run Ctrl-C cancels, and the task watching for it (abort
/// it when the run is over).
pub(crate) fn cancel_on_ctrl_c() -> (ToolContext, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    (ToolContext::new().with_cancel(cancel), watcher)
}

/// `agentry run` with scenes: routes the prompt, runs the scene, prints as
/// a plain run does (`--json` adds `scene`), stores the turn in the session.
async fn scene_run(
    settings: &Settings,
    router: &SceneRouter,
    (text, attachments): (String, Vec<Attachment>),
    session: Option<&OpenSession>,
    output: Output,
) -> Result<u8, AppError> {
    let history = session.map(|open| open.messages.clone()).unwrap_or_default();
    let (context, on_ctrl_c) = cancel_on_ctrl_c();
    let outcome = if output.stream {
        let events = router.run_stream_attached(history.clone(), text, attachments, context);
        print_stream(events, output.console()).await
    } else {
        match router.run_attached(history.clone(), text, attachments, &context).await {
            Ok(result) => Ok(result),
            Err(SceneError::Run { source, .. }) => Ok(*source.result),
            // Interrupted while routing: no scene ran, no record to print.
            Err(SceneError::Routing(error)) if error.kind == LlmErrorKind::Cancelled => Err(AppError::Interrupted(
                "the run was cancelled while the scene was being chosen".to_owned(),
            )),
            Err(error) => Err(AppError::RunFailed(error.to_string())),
        }
    };
    on_ctrl_c.abort();
    let result = outcome?;
    report(settings, &result, output)?;
    if let Some(open) = session
        && result.stop_reason != RunEnd::Cancelled
    {
        let provider = settings.provider()?.name();
        open.store.record_turn(&open.name, provider, &history, &result).await?;
    }
    Ok(conclude(&result, None))
}
