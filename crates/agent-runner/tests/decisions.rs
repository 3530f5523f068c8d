//! The loop's decisions, stepped by hand on a [`RunState`]: no runtime, no
//! agent, no driver. Each table is a list of cases; a case is a script of
//! (the step the state must ask for, what the test then feeds it) pairs, the
//! stop cause and detail it must end with, and the record of its tool calls.
//!
//! Steps are written as short strings (see [`observe`]):
//!
//! - `model`, `model(none)`, `model(required)`, `model(tool NAME)`: a model
//!   call and its tool choice, then `<- ID ID!` when the request ends with
//!   tool results (their call ids in order, `!` marking an error);
//! - `summary`: a summary request of a compaction;
//! - `run ID ID`: the calls to run, then `(done: ID)` for calls of the step
//!   that already have an outcome (a driver does not run those);
//! - `approve? ID`: calls waiting for the user's decision;
//! - `finished`.
//!
//! A tool call's record is written `ID NAME: ok RESULT` or `ID NAME: error
//! RESULT`, with `(duplicate of ID)` after the name of a collapsed call; the
//! expected records are prefixes of those lines. Tools run here by the test:
//! `broken` fails with "ID failed", every other tool succeeds with "ID done".

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agent_core::{
    AgentRunResult, AssistantMessage, ChatRequest, ChatResponse, CompactionTrigger, LlmError, LlmErrorKind, Message,
    RunEnd, ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage,
};
use agent_runner::history::is_sendable;
use agent_runner::{Budget, ContextPolicy, RunConfig, RunIdentity, RunState, Step, ToolOutcome};
use agent_testing::response;
use serde_json::{Value, json};

use Feed::{Approve, Collect, Deny, Finish, Interrupt, Leave, ModelError, Reply, Run};

// ---------------------------------------------------------------------------
// States and replies.

/// A run of `config` whose request has a system prompt, the test's tools and the
/// user's "go".
fn state_of(config: RunConfig) -> RunState {
    new_state(config, vec![Message::user("go")], None)
}

/// A run of the default config edited by `edit`.
fn state(edit: impl FnOnce(&mut RunConfig)) -> RunState {
    let mut config = RunConfig::default();
    edit(&mut config);
    state_of(config)
}

/// A run of the default config.
fn default_state() -> RunState {
    state(|_| {})
}

fn new_state(config: RunConfig, messages: Vec<Message>, max_tokens: Option<u32>) -> RunState {
    let tools: Vec<ToolDefinition> = ["echo", "lookup", "book", "broken", "reply"]
        .into_iter()
        .map(|name| ToolDefinition::new(name, format!("The {name} tool."), json!({"type": "object"})))
        .collect();
    let mut request = ChatRequest::new(messages)
        .with_system("You are a test agent.")
        .with_tools(tools);
    request.max_tokens = max_tokens;
    let identity = RunIdentity {
        agent: "tester".into(),
        provider: "scripted".into(),
        model: "scripted-model".into(),
    };
    RunState::new(identity, config, request, None)
}

fn budget(budget: Budget) -> RunConfig {
    RunConfig {
        budget,
        ..RunConfig::default()
    }
}

/// A final answer.
fn answer(text: &str) -> ChatResponse {
    response::text(text)
}

/// A reply asking for these calls: (id, tool, arguments).
fn calls<const N: usize>(calls: [(&str, &str, Value); N]) -> ChatResponse {
    let calls = calls
        .into_iter()
        .map(|(id, name, arguments)| ToolCall::new(id, name, arguments))
        .collect();
    response::with_calls("", calls)
}

/// A reply asking for `echo {"n": n}` as call `id`.
fn echo(id: &str, n: i64) -> ChatResponse {
    calls([(id, "echo", json!({ "n": n }))])
}

/// A reply asking for a call of `tool` (no arguments) as call `id`.
fn call(id: &str, tool: &str) -> ChatResponse {
    calls([(id, tool, json!({}))])
}

// ---------------------------------------------------------------------------
// The table runner.

/// What the test does after a step.
enum Feed {
    /// The model's reply.
    Reply(ChatResponse),
    /// The model call failed.
    ModelError(LlmError),
    /// Runs the calls of the step that have no outcome yet, as a driver
    /// does, and reports the whole batch.
    Run,
    /// Reports the outcome of call `index` of the step alone, as it finishes.
    Finish(usize),
    /// Reports the batch with no new outcome.
    Collect,
    /// The run is stopped (cancelled, deadline).
    Interrupt(RunEnd, &'static str),
    Approve(&'static str),
    Deny(&'static str, Option<&'static str>),
    /// The driver stops here (nobody to approve) and takes the result.
    Leave,
}

/// One row of a table. Besides what it names, every case checks that each
/// model request and the final history are sendable, that `iterations`
/// counts the chat replies fed, and that no forced-answer instruction stays
/// in the history.
struct Case {
    name: &'static str,
    state: RunState,
    /// (the step expected, what is fed after it); the step after the last
    /// is `finished` (unless the last feed is [`Leave`]).
    script: Vec<(&'static str, Feed)>,
    /// How the run ends: default `Completed` with no detail.
    cause: RunEnd,
    detail: Option<&'static str>,
    /// The record of tool calls, one prefix per call: default none.
    calls: Vec<&'static str>,
    /// The answer, when checked.
    response: Option<&'static str>,
    /// A further check of the result.
    check: Option<fn(&AgentRunResult)>,
}

impl Case {
    fn new(name: &'static str, state: RunState) -> Self {
        Self {
            name,
            state,
            script: Vec::new(),
            cause: RunEnd::Completed,
            detail: None,
            calls: Vec::new(),
            response: None,
            check: None,
        }
    }

    fn script<const N: usize>(mut self, script: [(&'static str, Feed); N]) -> Self {
        self.script = script.into();
        self
    }

    fn ends(mut self, cause: RunEnd, detail: Option<&'static str>) -> Self {
        self.cause = cause;
        self.detail = detail;
        self
    }

    /// The run's record of tool calls, in order (each a prefix of the line).
    fn calls<const N: usize>(mut self, calls: [&'static str; N]) -> Self {
        self.calls = calls.into();
        self
    }

    fn response(mut self, response: &'static str) -> Self {
        self.response = Some(response);
        self
    }

    /// A further check of the result.
    fn check(mut self, check: fn(&AgentRunResult)) -> Self {
        self.check = Some(check);
        self
    }
}

/// Plays every case; the first failing one panics with its name.
fn play(cases: Vec<Case>) {
    for case in cases {
        play_one(case);
    }
}

fn play_one(case: Case) {
    let Case {
        name,
        mut state,
        script,
        cause,
        detail,
        calls,
        response,
        check,
    } = case;
    let asked: Vec<String> = user_messages(&state.request().messages)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut steps: Vec<String> = Vec::new();
    let mut chat_replies = 0;
    let mut left = false;
    for (want, feed) in script {
        let (got, batch) = observe(&mut state, name);
        assert_eq!(
            got,
            want,
            "case `{name}`: step {} is not the expected one (steps so far: {steps:?})",
            steps.len()
        );
        if got.starts_with("model") && matches!(feed, Reply(_)) {
            chat_replies += 1;
        }
        steps.push(got);
        if matches!(feed, Leave) {
            left = true;
            break;
        }
        feed_state(&mut state, feed, &batch).unwrap_or_else(|error| panic!("case `{name}`: step {want}: {error}"));
    }
    if !left {
        let (last, _) = observe(&mut state, name);
        assert_eq!(last, "finished", "case `{name}`: the run goes on after {steps:?}");
    }

    let result = state.into_result();
    assert_eq!(
        result.stop_reason, cause,
        "case `{name}`: stop cause ({:?})",
        result.stop_detail
    );
    assert_eq!(result.stop_detail.as_deref(), detail, "case `{name}`: stop detail");
    let records: Vec<String> = result.tool_calls.iter().map(record_line).collect();
    assert!(
        records.len() == calls.len() && records.iter().zip(&calls).all(|(got, want)| got.starts_with(want)),
        "case `{name}`: tool-call records\n got: {records:#?}\nwant: {calls:#?}"
    );
    if let Some(want) = response {
        assert_eq!(result.response, want, "case `{name}`: response");
    }
    assert_eq!(result.iterations, chat_replies, "case `{name}`: iterations");
    assert!(
        is_sendable(&result.messages),
        "case `{name}`: the history is not sendable: {:#?}",
        result.messages
    );
    let added: Vec<&str> = user_messages(&result.messages)
        .into_iter()
        .filter(|message| !asked.iter().any(|known| known == message))
        .collect();
    assert!(
        added.is_empty(),
        "case `{name}`: a forced-answer instruction stayed in the history: {added:?}"
    );
    if let Some(check) = check {
        check(&result);
    }
}

/// Asks for the next step and writes it down; for `RunTools`, also returns
/// its calls. Every model request must be sendable.
fn observe(state: &mut RunState, name: &str) -> (String, Vec<ToolCall>) {
    let mut batch = None;
    let seen = match state.next_step() {
        Step::CallModel(request) => {
            assert!(
                is_sendable(&request.messages),
                "case `{name}`: an unsendable request: {:#?}",
                request.messages
            );
            describe_request(request)
        }
        Step::RunTools(calls) => {
            batch = Some(calls.iter().map(|call| (**call).clone()).collect());
            String::new()
        }
        Step::AwaitApproval(calls) => format!("approve? {}", ids(calls.iter())),
        Step::Finished => "finished".to_owned(),
    };
    if let Some(batch) = batch {
        return describe_batch(state, batch);
    }
    if state.is_compacting() {
        return ("summary".to_owned(), Vec::new());
    }
    (seen, Vec::new())
}

/// `run ID ID`, then `(done: ID)` for the calls that have an outcome already.
fn describe_batch(state: &RunState, batch: Vec<ToolCall>) -> (String, Vec<ToolCall>) {
    let (done, to_run): (Vec<_>, Vec<_>) = batch
        .iter()
        .enumerate()
        .partition(|(index, _)| state.finished_tool_outcome(*index).is_some());
    let mut seen = format!("run {}", ids(to_run.into_iter().map(|(_, call)| call)));
    if !done.is_empty() {
        seen = format!(
            "{} (done: {})",
            seen.trim_end(),
            ids(done.into_iter().map(|(_, call)| call))
        );
    }
    (seen, batch)
}

fn describe_request(request: &ChatRequest) -> String {
    let mut seen = match &request.tool_choice {
        ToolChoice::Auto => "model".to_owned(),
        ToolChoice::None => "model(none)".to_owned(),
        ToolChoice::Required => "model(required)".to_owned(),
        ToolChoice::Tool { name } => format!("model(tool {name})"),
    };
    let results: Vec<String> = request
        .messages
        .iter()
        .rev()
        .map_while(|message| match message {
            Message::Tool(result) => Some(format!("{}{}", result.call_id, if result.is_error { "!" } else { "" })),
            _ => None,
        })
        .collect();
    if !results.is_empty() {
        let in_order: Vec<String> = results.into_iter().rev().collect();
        seen = format!("{seen} <- {}", in_order.join(" "));
    }
    seen
}

fn ids<'a>(calls: impl Iterator<Item = &'a ToolCall>) -> String {
    calls.map(|call| call.id.as_str()).collect::<Vec<_>>().join(" ")
}

fn feed_state(state: &mut RunState, feed: Feed, batch: &[ToolCall]) -> Result<(), String> {
    match feed {
        Reply(reply) => state
            .on_model_response(reply, Duration::from_millis(5))
            .map_err(|e| e.to_string()),
        ModelError(error) => state.on_model_error(error).map_err(|e| e.to_string()),
        Run => {
            let outcomes: Vec<ToolOutcome> = batch
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    state
                        .finished_tool_outcome(index)
                        .cloned()
                        .unwrap_or_else(|| run_tool(call))
                })
                .collect();
            state.on_tool_results(&outcomes).map_err(|e| e.to_string())
        }
        Finish(index) => state
            .on_tool_outcome(index, run_tool(&batch[index]))
            .map_err(|e| e.to_string()),
        Collect => state.on_tool_results(&[]).map_err(|e| e.to_string()),
        Interrupt(cause, detail) => {
            state.interrupt(cause, detail);
            Ok(())
        }
        Approve(id) => state.approve(id).map_err(|e| e.to_string()),
        Deny(id, reason) => state.deny(id, reason.map(str::to_owned)).map_err(|e| e.to_string()),
        Leave => unreachable!("handled by the runner"),
    }
}

/// What the test's tools do: `broken` fails, the others succeed.
fn run_tool(call: &ToolCall) -> ToolOutcome {
    let failed = call.name == "broken";
    ToolOutcome {
        content: format!("{} {}", call.id, if failed { "failed" } else { "done" }),
        is_error: failed,
        duration: Duration::from_millis(3),
        cached: false,
        delegated_usage: None,
        attachments: Vec::new(),
    }
}

fn record_line(record: &agent_core::ToolCallRecord) -> String {
    let duplicate = record
        .duplicate_of
        .as_ref()
        .map(|of| format!(" (duplicate of {of})"))
        .unwrap_or_default();
    let status = if record.is_error { "error" } else { "ok" };
    format!("{} {}{duplicate}: {status} {}", record.id, record.name, record.result)
}

/// The user messages' texts.
fn user_messages(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The tables.

#[test]
fn answers_and_tool_rounds() {
    play(vec![
        Case::new("a final answer ends the run after one call", default_state())
            .script([("model", Reply(answer("Paris.")))])
            .response("Paris."),
        Case::new(
            "calls run in the model's order and their results come back in that order",
            default_state(),
        )
        .script([
            (
                "model",
                Reply(calls([
                    ("z", "lookup", json!({"q": "b"})),
                    ("a", "echo", json!({"n": 1})),
                ])),
            ),
            ("run z a", Run),
            ("model <- z a", Reply(answer("done"))),
        ])
        .calls(["z lookup: ok z done", "a echo: ok a done"])
        .response("done"),
        Case::new(
            "outcomes that finish out of order still come back in call order",
            default_state(),
        )
        .script([
            (
                "model",
                Reply(calls([
                    ("z", "lookup", json!({"q": "b"})),
                    ("a", "echo", json!({"n": 1})),
                ])),
            ),
            ("run z a", Finish(1)),
            ("run z (done: a)", Finish(0)),
            ("run (done: z a)", Collect),
            ("model <- z a", Reply(answer("done"))),
        ])
        .calls(["z lookup: ok z done", "a echo: ok a done"]),
        Case::new(
            "a failed call is told to the model and the run goes on",
            default_state(),
        )
        .script([
            (
                "model",
                Reply(calls([("a", "broken", json!({})), ("b", "echo", json!({"n": 1}))])),
            ),
            ("run a b", Run),
            ("model <- a! b", Reply(answer("done"))),
        ])
        .calls(["a broken: error a failed", "b echo: ok b done"]),
        Case::new("unreadable arguments are answered in place, not run", default_state())
            .script([
                (
                    "model",
                    Reply(response::with_calls(
                        "",
                        vec![
                            ToolCall::from_argument_text("bad", "echo", "{\"n\": "),
                            ToolCall::new("good", "echo", json!({"n": 1})),
                        ],
                    )),
                ),
                ("run good", Run),
                ("model <- bad! good", Reply(answer("done"))),
            ])
            .calls([
                "bad echo: error invalid arguments for `echo`: not valid JSON",
                "good echo: ok good done",
            ]),
        Case::new(
            "a reply with nothing runnable goes back to the model without a tool step",
            default_state(),
        )
        .script([
            (
                "model",
                Reply(response::with_calls(
                    "",
                    vec![ToolCall::from_argument_text("bad", "echo", "{")],
                )),
            ),
            ("model <- bad!", Reply(answer("done"))),
        ])
        .calls(["bad echo: error invalid arguments"]),
    ]);
}

#[test]
fn collapsing_and_the_per_reply_cap() {
    play(vec![
        Case::new(
            "identical calls of one reply run once and enter the history once; the record keeps both",
            default_state(),
        )
        .script([
            (
                "model",
                // The same arguments, keys in another order.
                Reply(calls([
                    ("a", "echo", json!({"x": 1, "y": 2})),
                    ("b", "echo", json!({"y": 2, "x": 1})),
                    ("c", "echo", json!({"x": 2})),
                ])),
            ),
            ("run a c", Run),
            ("model <- a c", Reply(answer("done"))),
        ])
        .calls([
            "a echo: ok a done",
            "b echo (duplicate of a): ok a done",
            "c echo: ok c done",
        ])
        .check(|result| {
            let kept: Vec<Vec<&str>> = result
                .messages
                .iter()
                .filter_map(|message| match message {
                    Message::Assistant(reply) if !reply.tool_calls.is_empty() => {
                        Some(reply.tool_calls.iter().map(|call| call.id.as_str()).collect())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(kept, [["a", "c"]], "the collapsed call left the history");
            assert_eq!(result.tool_calls[1].duration_ms, 0, "a collapsed call took no time");
        }),
        Case::new(
            "with deduplication off, identical calls each run",
            state(|c| c.deduplicate_calls = false),
        )
        .script([
            (
                "model",
                Reply(calls([("a", "echo", json!({"x": 1})), ("b", "echo", json!({"x": 1}))])),
            ),
            ("run a b", Run),
            ("model <- a b", Reply(answer("done"))),
        ])
        .calls(["a echo: ok a done", "b echo: ok b done"]),
        Case::new(
            "calls past max_calls_per_reply are recorded as not run and left out of the history",
            state(|c| c.max_calls_per_reply = 2),
        )
        .script([
            (
                "model",
                Reply(calls([
                    ("a", "echo", json!({"n": 1})),
                    ("b", "echo", json!({"n": 2})),
                    ("c", "echo", json!({"n": 3})),
                ])),
            ),
            ("run a b", Run),
            ("model <- a b", Reply(answer("done"))),
        ])
        .calls([
            "a echo: ok a done",
            "b echo: ok b done",
            "c echo: error Not run: the reply asked for 3 tool calls and at most 2 run per reply; \
             `echo` was past the limit. Ask for fewer calls at a time.",
        ]),
        Case::new(
            "collapsed calls do not count towards the cap",
            state(|c| c.max_calls_per_reply = 2),
        )
        .script([
            (
                "model",
                Reply(calls([
                    ("a", "echo", json!({"n": 1})),
                    ("b", "echo", json!({"n": 1})),
                    ("c", "echo", json!({"n": 3})),
                ])),
            ),
            ("run a c", Run),
            ("model <- a c", Reply(answer("done"))),
        ])
        .calls([
            "a echo: ok a done",
            "b echo (duplicate of a): ok a done",
            "c echo: ok c done",
        ]),
    ]);
}

#[test]
fn forced_answers_at_the_iteration_limit_and_in_loops() {
    play(vec![
        Case::new(
            "the iteration limit forces a last answer with tool_choice none",
            state(|c| c.max_iterations = 2),
        )
        .script([
            ("model", Reply(echo("a", 1))),
            ("run a", Run),
            ("model <- a", Reply(echo("b", 2))),
            ("run b", Run),
            ("model(none)", Reply(answer("forced"))),
        ])
        .ends(
            RunEnd::MaxIterations,
            Some("reached the limit of 2 iterations; the answer was forced"),
        )
        .calls(["a echo: ok", "b echo: ok"])
        .response("forced"),
        Case::new(
            "calls asked for in the forced answer are not run",
            state(|c| c.max_iterations = 1),
        )
        .script([
            ("model", Reply(echo("a", 1))),
            ("run a", Run),
            ("model(none)", Reply(response::with_calls("One more look.", vec![ToolCall::new("b", "echo", json!({"n": 2}))]))),
        ])
        .ends(
            RunEnd::MaxIterations,
            Some("reached the limit of 1 iteration; the answer was forced; 1 tool call requested afterwards was not run"),
        )
        .calls(["a echo: ok"])
        .response("One more look."),
        Case::new("asking again for the previous reply's calls is a loop", loops_only())
            .script([
                ("model", Reply(echo("a", 1))),
                ("run a", Run),
                ("model <- a", Reply(echo("b", 1))),
                ("run b", Run),
                ("model(none)", Reply(answer("final"))),
            ])
            .ends(
                RunEnd::LoopDetected,
                Some(r#"the model repeated the same tool calls: echo({"n":1}); the answer was forced"#),
            )
            .calls(["a echo: ok", "b echo: ok"])
            .response("final"),
        Case::new("the same calls in another order are a loop too", loops_only())
            .script([
                ("model", Reply(calls([("a", "echo", json!({"n": 1})), ("b", "echo", json!({"n": 2}))]))),
                ("run a b", Run),
                ("model <- a b", Reply(calls([("c", "echo", json!({"n": 2})), ("d", "echo", json!({"n": 1}))]))),
                ("run c d", Run),
                ("model(none)", Reply(answer("final"))),
            ])
            .ends(
                RunEnd::LoopDetected,
                Some(r#"the model repeated the same tool calls: echo({"n":1}) + echo({"n":2}); the answer was forced"#),
            )
            .calls(["a echo: ok", "b echo: ok", "c echo: ok", "d echo: ok"]),
        Case::new("alternating between two rounds is a loop once gone round twice", loops_only())
            .script([
                ("model", Reply(echo("a", 1))),
                ("run a", Run),
                ("model <- a", Reply(echo("b", 2))),
                ("run b", Run),
                ("model <- b", Reply(echo("c", 1))),
                ("run c", Run),
                ("model <- c", Reply(echo("d", 2))),
                ("run d", Run),
                ("model(none)", Reply(answer("final"))),
            ])
            .ends(
                RunEnd::LoopDetected,
                Some(
                    r#"the model alternated between the same tool calls twice: echo({"n":1}), then echo({"n":2}); the answer was forced"#,
                ),
            )
            .calls(["a echo: ok", "b echo: ok", "c echo: ok", "d echo: ok"]),
        Case::new("rounds that change are not a loop", loops_only())
            .script([
                ("model", Reply(echo("a", 1))),
                ("run a", Run),
                ("model <- a", Reply(echo("b", 2))),
                ("run b", Run),
                ("model <- b", Reply(echo("c", 1))),
                ("run c", Run),
                ("model <- c", Reply(echo("d", 3))),
                ("run d", Run),
                ("model <- d", Reply(answer("done"))),
            ])
            .calls(["a echo: ok", "b echo: ok", "c echo: ok", "d echo: ok"]),
        Case::new("a reply repeating answered calls is re-asked once, then the answer is forced", default_state())
            .script([
                ("model", Reply(echo("a", 1))),
                ("run a", Run),
                ("model <- a", Reply(echo("b", 2))),
                ("run b", Run),
                // Round a again (not the previous round, b): a re-ask.
                ("model <- b", Reply(echo("c", 1))),
                ("model", Reply(echo("d", 1))),
                ("model(none)", Reply(answer("final"))),
            ])
            .ends(
                RunEnd::LoopDetected,
                Some(r#"the model repeated the same tool calls: echo({"n":1}); the answer was forced"#),
            )
            .calls(["a echo: ok", "b echo: ok"])
            .response("final"),
        Case::new("after the re-ask a new call runs", default_state())
            .script([
                ("model", Reply(echo("a", 1))),
                ("run a", Run),
                ("model <- a", Reply(echo("b", 2))),
                ("run b", Run),
                ("model <- b", Reply(echo("c", 1))),
                ("model", Reply(echo("d", 3))),
                ("run d", Run),
                ("model <- d", Reply(answer("done"))),
            ])
            .calls(["a echo: ok", "b echo: ok", "d echo: ok"])
            .response("done"),
        Case::new("a repeat at the iteration limit forces the answer instead of a re-ask", state(|c| c.max_iterations = 2))
            .script([
                ("model", Reply(calls([("a", "echo", json!({"n": 1})), ("b", "echo", json!({"n": 2}))]))),
                ("run a b", Run),
                ("model <- a b", Reply(echo("c", 1))),
                ("model(none)", Reply(answer("forced"))),
            ])
            .ends(
                RunEnd::MaxIterations,
                Some("reached the limit of 2 iterations; the answer was forced"),
            )
            .calls(["a echo: ok", "b echo: ok"])
            .response("forced"),
    ]);
}

/// A run that leaves repeats to the loop detection (no re-ask).
fn loops_only() -> RunState {
    state(|c| c.reask_repeated_calls = false)
}

#[test]
fn consecutive_failed_rounds() {
    play(vec![
        Case::new(
            "rounds whose calls all failed end the run after max_consecutive_failures",
            state(|c| c.max_consecutive_failures = 2),
        )
        .script([
            ("model", Reply(calls([("a", "broken", json!({"n": 1}))]))),
            ("run a", Run),
            ("model <- a!", Reply(calls([("b", "broken", json!({"n": 2}))]))),
            ("run b", Run),
        ])
        .ends(
            RunEnd::Error,
            Some("every tool call failed in 2 consecutive iterations; last error: `broken`: b failed"),
        )
        .calls(["a broken: error a failed", "b broken: error b failed"])
        // The user is told the lookup failed, and why.
        .response("I could not look that up: a failed."),
        Case::new(
            "a round with one success breaks the run of failures",
            state(|c| c.max_consecutive_failures = 2),
        )
        .script([
            ("model", Reply(calls([("a", "broken", json!({"n": 1}))]))),
            ("run a", Run),
            (
                "model <- a!",
                Reply(calls([
                    ("b", "broken", json!({"n": 2})),
                    ("c", "echo", json!({"n": 2})),
                ])),
            ),
            ("run b c", Run),
            ("model <- b! c", Reply(calls([("d", "broken", json!({"n": 3}))]))),
            ("run d", Run),
            ("model <- d!", Reply(answer("I could not do it."))),
        ])
        .calls(["a broken: error", "b broken: error", "c echo: ok", "d broken: error"]),
        Case::new("by default two failed rounds are not enough", default_state())
            .script([
                ("model", Reply(calls([("a", "broken", json!({"n": 1}))]))),
                ("run a", Run),
                ("model <- a!", Reply(calls([("b", "broken", json!({"n": 2}))]))),
                ("run b", Run),
                ("model <- b!", Reply(answer("I could not do it."))),
            ])
            .calls(["a broken: error", "b broken: error"]),
    ]);
}

#[test]
fn tool_choice_and_stop_tools() {
    play(vec![
        Case::new(
            "a required tool choice applies to the first round only",
            state(|c| c.tool_choice = ToolChoice::Required),
        )
        .script([
            ("model(required)", Reply(echo("a", 1))),
            ("run a", Run),
            ("model <- a", Reply(answer("done"))),
        ])
        .calls(["a echo: ok"]),
        Case::new(
            "so does a named one",
            state(|c| c.tool_choice = ToolChoice::Tool { name: "lookup".into() }),
        )
        .script([
            ("model(tool lookup)", Reply(call("a", "lookup"))),
            ("run a", Run),
            ("model <- a", Reply(answer("done"))),
        ])
        .calls(["a lookup: ok"]),
        Case::new(
            "tool_choice_every_round keeps it for every request",
            state(|c| {
                c.tool_choice = ToolChoice::Required;
                c.tool_choice_every_round = true;
            }),
        )
        .script([
            ("model(required)", Reply(echo("a", 1))),
            ("run a", Run),
            ("model(required) <- a", Reply(answer("done"))),
        ])
        .calls(["a echo: ok"]),
        Case::new(
            "a forced answer overrides it",
            state(|c| {
                c.tool_choice = ToolChoice::Required;
                c.tool_choice_every_round = true;
                c.max_iterations = 1;
            }),
        )
        .script([
            ("model(required)", Reply(echo("a", 1))),
            ("run a", Run),
            ("model(none)", Reply(answer("forced"))),
        ])
        .ends(
            RunEnd::MaxIterations,
            Some("reached the limit of 1 iteration; the answer was forced"),
        )
        .calls(["a echo: ok"]),
        Case::new(
            "a successful call of a stop tool ends the run, its result the answer",
            state(|c| c.stop_at_tools = vec!["reply".into()]),
        )
        .script([
            (
                "model",
                Reply(calls([("a", "echo", json!({"n": 1})), ("b", "reply", json!({}))])),
            ),
            ("run a b", Run),
        ])
        .calls(["a echo: ok", "b reply: ok b done"])
        .response("b done")
        .check(|result| {
            assert_eq!(result.messages.last(), Some(&Message::assistant("b done")));
        }),
    ]);
}

#[test]
fn budgets_stop_before_spending_more() {
    let tokens = |max| {
        budget(Budget {
            max_total_tokens: Some(max),
            ..Budget::default()
        })
    };
    let tool_calls = |max| {
        budget(Budget {
            max_tool_calls: Some(max),
            ..Budget::default()
        })
    };
    play(vec![
        Case::new(
            "a reply that passes the token budget ends the run before its calls run",
            state_of(tokens(100)),
        )
        .script([("model", Reply(response::with_usage(echo("a", 1), Usage::new(90, 20))))])
        .ends(RunEnd::BudgetExceeded, Some("used 110 tokens, over the budget of 100"))
        .calls(["a echo: error Not run: used 110 tokens, over the budget of 100."]),
        Case::new(
            "a model call whose estimate does not fit in the tokens left is not made",
            new_state(tokens(1000), vec![Message::user("go")], Some(300)),
        )
        .script([
            ("model", Reply(response::with_usage(echo("a", 1), Usage::new(600, 50)))),
            ("run a", Run),
        ])
        .ends(
            RunEnd::BudgetExceeded,
            Some(
                "the next model call would exceed the token budget: estimated at 904 tokens \
                 (604 input + up to 300 output), with 350 of 1000 left",
            ),
        )
        .calls(["a echo: ok a done"]),
        Case::new(
            "a first call whose max_tokens alone passes the budget is never made",
            new_state(tokens(1000), vec![Message::user("go")], Some(2000)),
        )
        .ends(
            RunEnd::BudgetExceeded,
            Some(
                "the next model call would exceed the token budget: estimated at 2000 tokens \
                 (0 input + up to 2000 output), with 1000 of 1000 left",
            ),
        ),
        Case::new(
            "a batch that would pass max_tool_calls does not start",
            state_of(tool_calls(2)),
        )
        .script([(
            "model",
            Reply(calls([
                ("a", "echo", json!({"n": 1})),
                ("b", "echo", json!({"n": 2})),
                ("c", "echo", json!({"n": 3})),
            ])),
        )])
        .ends(
            RunEnd::BudgetExceeded,
            Some("the model asked for 3 more tool call(s), which would exceed the budget of 2 (0 used)"),
        )
        .calls([
            "a echo: error Not run: the model asked for 3 more tool call(s)",
            "b echo: error Not run: the model asked for 3 more tool call(s)",
            "c echo: error Not run: the model asked for 3 more tool call(s)",
        ]),
        Case::new(
            "calls already run count against max_tool_calls",
            state_of(tool_calls(2)),
        )
        .script([
            (
                "model",
                Reply(calls([("a", "echo", json!({"n": 1})), ("b", "echo", json!({"n": 2}))])),
            ),
            ("run a b", Run),
            ("model <- a b", Reply(echo("c", 3))),
        ])
        .ends(
            RunEnd::BudgetExceeded,
            Some("the model asked for 1 more tool call(s), which would exceed the budget of 2 (2 used)"),
        )
        .calls([
            "a echo: ok",
            "b echo: ok",
            "c echo: error Not run: the model asked for 1 more",
        ]),
        Case::new(
            "collapsed calls count once against max_tool_calls",
            state_of(tool_calls(1)),
        )
        .script([
            (
                "model",
                Reply(calls([("a", "echo", json!({"n": 1})), ("b", "echo", json!({"n": 1}))])),
            ),
            ("run a", Run),
            ("model <- a", Reply(answer("done"))),
        ])
        .calls(["a echo: ok", "b echo (duplicate of a): ok"]),
    ]);
}

#[test]
fn interruptions_and_model_errors() {
    play(vec![
        Case::new(
            "an interrupt while tools are pending answers them as interrupted",
            default_state(),
        )
        .script([
            (
                "model",
                Reply(calls([("a", "echo", json!({"n": 1})), ("b", "lookup", json!({}))])),
            ),
            ("run a b", Interrupt(RunEnd::Cancelled, "cancelled by the user")),
        ])
        .ends(RunEnd::Cancelled, Some("cancelled by the user"))
        .calls([
            "a echo: error The tool call was interrupted before it returned a result.",
            "b lookup: error The tool call was interrupted before it returned a result.",
        ])
        .check(|result| {
            let results: Vec<&ToolResult> = result
                .messages
                .iter()
                .filter_map(|message| match message {
                    Message::Tool(result) => Some(result),
                    _ => None,
                })
                .collect();
            assert_eq!(results.len(), 2, "each call has its result in the history");
            assert!(results.iter().all(|result| result.is_error));
        }),
        Case::new(
            "calls that finished before an interrupt keep their results",
            default_state(),
        )
        .script([
            (
                "model",
                Reply(calls([("a", "echo", json!({"n": 1})), ("b", "lookup", json!({}))])),
            ),
            ("run a b", Finish(0)),
            (
                "run b (done: a)",
                Interrupt(RunEnd::BudgetExceeded, "the run's deadline passed"),
            ),
        ])
        .ends(RunEnd::BudgetExceeded, Some("the run's deadline passed"))
        .calls([
            "a echo: ok a done",
            "b lookup: error The tool call was interrupted before it returned a result.",
        ]),
        Case::new(
            "an interrupt before a forced answer drops its instruction",
            state(|c| c.max_iterations = 1),
        )
        .script([
            ("model", Reply(echo("a", 1))),
            ("run a", Run),
            ("model(none)", Interrupt(RunEnd::Cancelled, "stop")),
        ])
        .ends(RunEnd::Cancelled, Some("stop"))
        .calls(["a echo: ok"])
        .check(|result| assert!(matches!(result.messages.last(), Some(Message::Tool(_))))),
        Case::new("a failed model call ends the run with its error", default_state())
            .script([("model", ModelError(LlmError::new(LlmErrorKind::Server, "boom")))])
            .ends(RunEnd::Error, Some("server error: boom")),
        Case::new("a cancelled model call ends the run as cancelled", default_state())
            .script([
                ("model", Reply(echo("a", 1))),
                ("run a", Run),
                (
                    "model <- a",
                    ModelError(LlmError::new(LlmErrorKind::Cancelled, "by the user")),
                ),
            ])
            .ends(RunEnd::Cancelled, Some("cancelled: by the user"))
            .calls(["a echo: ok"]),
    ]);
}

/// Six old turns of a question, a `lookup` call, its result and an answer,
/// then the new question.
fn long_history() -> Vec<Message> {
    let mut messages: Vec<Message> = (1..=6)
        .flat_map(|turn| {
            let id = format!("h{turn}");
            [
                Message::user(format!("Question {turn}: how many people live in city {turn}?")),
                Message::Assistant(AssistantMessage::with_tool_calls(
                    "",
                    vec![ToolCall::new(id.clone(), "lookup", json!({ "city": turn }))],
                )),
                Message::tool(ToolResult::success(id, "lookup", "d".repeat(100))),
                Message::assistant(format!("City {turn} has {} people.", turn * 1000)),
            ]
        })
        .collect();
    messages.push(Message::user("And now?"));
    messages
}

fn windowed(window: u64) -> RunState {
    let config = RunConfig {
        context: ContextPolicy {
            window_tokens: Some(window),
            ..ContextPolicy::default()
        },
        ..RunConfig::default()
    };
    new_state(config, long_history(), None)
}

fn too_long() -> Feed {
    ModelError(LlmError::new(LlmErrorKind::ContextLength, "prompt is too long"))
}

#[test]
fn context_length_errors() {
    play(vec![
        Case::new(
            "a context-length error is met with one compaction and the call is retried",
            windowed(4000),
        )
        .script([
            ("model", too_long()),
            ("summary", Reply(answer("The user asked about city populations."))),
            ("model", Reply(answer("done"))),
        ])
        .response("done")
        .check(|result| {
            let [record] = result.compactions.as_slice() else {
                panic!("one compaction: {:?}", result.compactions);
            };
            assert_eq!(record.trigger, CompactionTrigger::ContextLengthError);
            assert_eq!(record.summary_calls, 1);
            assert!(
                matches!(&result.messages[0], Message::System { content } if content.contains("city populations")),
                "the summary replaced the old turns: {:?}",
                result.messages[0]
            );
        }),
        Case::new(
            "a second context-length error for the same call ends the run",
            windowed(4000),
        )
        .script([
            ("model", too_long()),
            ("summary", Reply(answer("The user asked about city populations."))),
            ("model", too_long()),
        ])
        .ends(RunEnd::Error, Some("context length exceeded: prompt is too long")),
        Case::new("with nothing to compact the first one ends the run", default_state())
            .script([("model", too_long())])
            .ends(RunEnd::Error, Some("context length exceeded: prompt is too long")),
    ]);
}

#[test]
fn approval_holds_the_batch() {
    let needs_booking = || default_state().with_approval_required(["book"]);
    let lookup_and_book = || {
        Reply(calls([
            ("a", "lookup", json!({"seat": "12A"})),
            ("b", "book", json!({"seat": "12A"})),
        ]))
    };
    play(vec![
        Case::new("an approved call runs with the rest of its batch", needs_booking())
            .script([
                ("model", lookup_and_book()),
                ("approve? b", Approve("b")),
                ("run a b", Run),
                ("model <- a b", Reply(answer("Booked."))),
            ])
            .calls(["a lookup: ok a done", "b book: ok b done"]),
        Case::new("a denied call never runs and its result is an error", needs_booking())
            .script([
                ("model", lookup_and_book()),
                ("approve? b", Deny("b", Some("too expensive"))),
                ("run a (done: b)", Run),
                ("model <- a b!", Reply(answer("Not booked."))),
            ])
            .calls([
                "a lookup: ok a done",
                "b book: error Not run: the user did not approve this call of `book` (too expensive). Do not retry it",
            ]),
        Case::new("each waiting call is decided on its own", needs_booking())
            .script([
                (
                    "model",
                    Reply(calls([
                        ("a", "book", json!({"seat": "12A"})),
                        ("b", "book", json!({"seat": "14C"})),
                    ])),
                ),
                ("approve? a b", Deny("b", None)),
                ("approve? a", Approve("a")),
                ("run a (done: b)", Run),
                ("model <- a b!", Reply(answer("Booked 12A."))),
            ])
            .calls([
                "a book: ok a done",
                "b book: error Not run: the user did not approve this call of `book`. Do not retry it",
            ]),
        Case::new("a batch with no such call runs at once", needs_booking())
            .script([
                ("model", Reply(call("a", "lookup"))),
                ("run a", Run),
                ("model <- a", Reply(answer("done"))),
            ])
            .calls(["a lookup: ok"]),
        Case::new("a run nobody decides for stops awaiting approval", needs_booking())
            .script([("model", lookup_and_book()), ("approve? b", Leave)])
            .ends(
                RunEnd::AwaitingApproval,
                Some("1 call(s) wait for the user's approval: book"),
            )
            .calls(["a lookup: error", "b book: error"])
            .check(|result| {
                let waiting: Vec<&str> = result.pending_approvals.iter().map(|call| call.id.as_str()).collect();
                assert_eq!(waiting, ["b"]);
            }),
        Case::new(
            "an interrupt while waiting answers the batch as interrupted",
            needs_booking(),
        )
        .script([
            ("model", lookup_and_book()),
            ("approve? b", Interrupt(RunEnd::Cancelled, "stop")),
        ])
        .ends(RunEnd::Cancelled, Some("stop"))
        .calls([
            "a lookup: error The tool call was interrupted before it returned a result.",
            "b book: error The tool call was interrupted before it returned a result.",
        ]),
    ]);
}
