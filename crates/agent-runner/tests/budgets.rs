//! Token and cost budgets: checked after every model call, and estimated
//! before each one so that a call sure to overshoot is never made.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_core::{ChatResponse, Message, ModelCatalog, ModelInfo, Pricing, RunEnd, ToolContext, Usage};
use agent_runner::{Budget, history};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use serde_json::json;

fn ctx() -> ToolContext {
    ToolContext::new()
}

/// `scripted-model` at $0.001 per input token and $0.002 per output token.
fn catalog() -> Arc<ModelCatalog> {
    let mut catalog = ModelCatalog::new();
    catalog.insert(
        "scripted-model",
        ModelInfo {
            provider: "scripted".into(),
            context_window: None,
            pricing: Pricing {
                input_per_million: 1000.0,
                output_per_million: 2000.0,
                ..Pricing::default()
            },
            inputs: None,
        },
    );
    Arc::new(catalog)
}

fn call_echo(n: i64, usage: Usage) -> ChatResponse {
    response::with_usage(response::tool_calls([("echo", json!({ "n": n }))]), usage)
}

fn tokens(max: u64) -> Budget {
    Budget {
        max_total_tokens: Some(max),
        ..Budget::default()
    }
}

fn dollars(max: f64) -> Budget {
    Budget {
        max_cost_usd: Some(max),
        ..Budget::default()
    }
}

fn echo_tools() -> (TestTools, Arc<std::sync::atomic::AtomicUsize>) {
    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    (TestTools::new("t").with(echo), runs)
}

// (a) The cost budget, checked after each call.

#[tokio::test]
async fn a_cost_budget_ends_the_run_once_the_first_call_passes_it() {
    let (tools, runs) = echo_tools();
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(100, 10)))
        .respond(response::text("never"));
    let result = common::agent_with(&client, tools)
        .catalog(catalog())
        .budget(dollars(0.10))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("budget stops are results");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some("spent $0.120000, over the budget of $0.100000")
    );
    assert_eq!(client.requests().len(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the calls of the reply are not run");
    assert!(result.tool_calls[0].is_error && result.tool_calls[0].result.starts_with("Not run: spent $0.12"));
    assert!((result.cost_usd.expect("priced") - 0.12).abs() < 1e-9);
    assert!(history::is_sendable(&result.messages));
}

#[tokio::test]
async fn a_cost_budget_ends_the_run_when_a_later_call_passes_it() {
    let (tools, runs) = echo_tools();
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(10, 5)))
        .respond(call_echo(2, Usage::new(100, 10)))
        .respond(response::text("never"));
    let result = common::agent_with(&client, tools)
        .catalog(catalog())
        .budget(dollars(0.10))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some("spent $0.140000, over the budget of $0.100000")
    );
    assert_eq!(client.requests().len(), 2);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_run_within_its_cost_budget_completes_without_a_note() {
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(100, 10)))
        .respond(response::text("done"));
    let result = common::agent(&client)
        .catalog(catalog())
        .budget(dollars(1.0))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.stop_detail, None);
    assert!((result.cost_usd.expect("priced") - 0.14).abs() < 1e-9);
}

// (b) A cost budget that cannot be enforced says so.

#[tokio::test]
async fn an_unpriced_model_runs_on_but_the_result_says_the_cost_budget_was_not_enforced() {
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(100_000, 10_000)))
        .respond(response::text("done"));
    let result = common::agent(&client)
        .budget(dollars(0.01))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.cost_usd, None);
    assert_eq!(result.response, "done");
    assert_eq!(
        result.stop_detail.as_deref(),
        Some("the cost budget of $0.010000 was not enforced: no price is known for the model `scripted-model`")
    );
}

#[tokio::test]
async fn the_unpriced_note_follows_the_detail_of_another_stop() {
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(900, 200)))
        .respond(response::text("never"));
    let result = common::agent(&client)
        .budget(Budget {
            max_total_tokens: Some(1000),
            max_cost_usd: Some(0.5),
            ..Budget::default()
        })
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(
            "used 1100 tokens, over the budget of 1000; the cost budget of $0.500000 was not enforced: \
             no price is known for the model `scripted-model`"
        )
    );
}

// (c) Estimated before each call.

#[tokio::test]
async fn a_call_whose_estimate_exceeds_the_remaining_tokens_is_not_made() {
    let (tools, runs) = echo_tools();
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(600, 50)))
        .respond(response::text("never"));
    let result = common::agent_with(&client, tools)
        .max_tokens(300)
        .budget(tokens(1000))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(client.requests().len(), 1, "the second call is never made");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the first reply's call ran");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(result.usage, Usage::new(600, 50));
    // 600 input tokens last time, plus the reply and result since (18
    // characters: 4), plus up to 300 output tokens.
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(
            "the next model call would exceed the token budget: estimated at 904 tokens \
             (604 input + up to 300 output), with 350 of 1000 left"
        )
    );
    assert!(history::is_sendable(&result.messages));
    assert!(
        matches!(result.messages.last(), Some(Message::Tool(r)) if r.content == r#"{"n":1}"#),
        "the history ends with the result the model has not seen yet"
    );
}

#[tokio::test]
async fn without_max_tokens_the_input_estimate_alone_can_stop_the_run() {
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(900, 50)))
        .respond(response::text("never"));
    let result = common::agent(&client)
        .budget(tokens(1000))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(client.requests().len(), 1);
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some("the next model call would exceed the token budget: estimated at 904 input tokens, with 50 of 1000 left")
    );
}

#[tokio::test]
async fn a_large_tool_result_counts_towards_the_next_calls_estimate() {
    let tools = TestTools::new("t").with(TestTool::new("dump", ToolBehaviour::Reply("x".repeat(40_000).into())));
    let client = ScriptedClient::new()
        .respond(response::with_usage(
            response::tool_calls([("dump", json!({}))]),
            Usage::new(100, 10),
        ))
        .respond(response::text("never"));
    let result = common::agent_with(&client, tools)
        .max_tool_result_bytes(0)
        .budget(tokens(5000))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(client.requests().len(), 1);
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    let detail = result.stop_detail.unwrap_or_default();
    assert!(
        detail.contains("estimated at 10101 input tokens, with 4890 of 5000 left"),
        "{detail}"
    );
}

#[tokio::test]
async fn the_first_call_is_blocked_only_when_max_tokens_alone_exceeds_the_budget() {
    let client = ScriptedClient::new().respond(response::text("never"));
    let result = common::agent(&client)
        .max_tokens(2000)
        .budget(tokens(1000))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert!(client.requests().is_empty(), "no call is made");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(result.iterations, 0);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(
            "the next model call would exceed the token budget: estimated at 2000 tokens \
             (0 input + up to 2000 output), with 1000 of 1000 left"
        )
    );
    assert_eq!(result.messages, [Message::user("go")], "the user's message is kept");

    // A long history is not estimated on the first call: no figures yet.
    let client = ScriptedClient::new().respond(response::text("ok"));
    let history = vec![Message::user("y".repeat(100_000)), Message::assistant("noted")];
    let result = common::agent(&client)
        .max_tokens(200)
        .budget(tokens(1000))
        .build()
        .run("go")
        .history(history)
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(client.requests().len(), 1);
    assert_eq!(result.stop_reason, RunEnd::Completed);
}

#[tokio::test]
async fn a_call_whose_estimated_cost_exceeds_what_is_left_is_not_made() {
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(100, 10)))
        .respond(response::text("never"));
    let result = common::agent(&client)
        .catalog(catalog())
        .max_tokens(100)
        .budget(dollars(0.40))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    // First call: up to 100 output tokens = $0.20, allowed. Second: 104
    // input tokens ($0.104) + up to $0.20 of output, and $0.12 already spent.
    assert_eq!(client.requests().len(), 1);
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(
        result.stop_detail.as_deref(),
        Some(
            "the next model call would exceed the cost budget: estimated at $0.304000 \
             (104 input + up to 100 output tokens), with $0.280000 of $0.400000 left"
        )
    );
}

#[tokio::test]
async fn a_forced_final_answer_that_would_exceed_the_budget_is_not_requested() {
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(600, 50)))
        .respond(response::text("never"));
    let result = common::agent(&client)
        .max_iterations(1)
        .max_tokens(300)
        .budget(tokens(1000))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(client.requests().len(), 1);
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert!(
        result
            .stop_detail
            .as_deref()
            .is_some_and(|d| d.starts_with("the next model call would exceed the token budget")),
        "{:?}",
        result.stop_detail
    );
    assert!(
        !result
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { content, .. } if content.contains("Do not call any more"))),
        "the forced-answer instruction is not left in the history"
    );
    assert!(history::is_sendable(&result.messages));
}

#[tokio::test]
async fn calls_that_fit_the_estimate_go_ahead() {
    let client = ScriptedClient::new()
        .respond(call_echo(1, Usage::new(300, 50)))
        .respond(response::with_usage(response::text("done"), Usage::new(320, 20)))
        .respond(response::text("never"));
    let result = common::agent(&client)
        .max_tokens(300)
        .budget(tokens(1000))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(client.requests().len(), 2);
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.stop_detail, None);
}

#[test]
fn the_figures_of_the_estimate_survive_saving_and_resuming_a_run() {
    use agent_runner::{RunState, Step, ToolOutcome};

    let client = ScriptedClient::new();
    let agent = common::agent(&client).max_tokens(300).budget(tokens(1000)).build();
    let mut state = agent.start(vec![], "go");
    state
        .on_model_response(call_echo(1, Usage::new(600, 50)), std::time::Duration::ZERO)
        .expect("in phase");
    let saved = serde_json::to_string(&state).expect("state serialises");
    let mut state: RunState = serde_json::from_str(&saved).expect("state deserialises");
    state
        .on_tool_results(&[ToolOutcome {
            content: r#"{"n":1}"#.into(),
            is_error: false,
            duration: std::time::Duration::ZERO,
            cached: false,
            delegated_usage: None,
            attachments: Vec::new(),
        }])
        .expect("in phase");
    assert!(matches!(state.next_step(), Step::Finished));
    assert_eq!(state.stop_cause(), Some(RunEnd::BudgetExceeded));
    let detail = state.into_result().stop_detail.unwrap_or_default();
    assert!(detail.contains("(604 input + up to 300 output)"), "{detail}");
}

#[tokio::test]
async fn a_resumed_run_keeps_the_deadline_it_started_with() {
    use agent_runner::RunState;

    let client = ScriptedClient::new().respond(response::text("never"));
    let agent = common::agent(&client)
        .deadline(std::time::Duration::from_millis(40))
        .build();
    let state = agent.start(vec![], "go");
    let deadline = state.deadline().expect("a deadline");
    let saved = serde_json::to_string(&state).expect("state serialises");
    let restored: RunState = serde_json::from_str(&saved).expect("state deserialises");
    assert_eq!(restored.deadline(), Some(deadline), "the same instant, not a fresh one");
    let left = deadline
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    assert!(left <= std::time::Duration::from_millis(40), "{left:?}");

    // Resumed after the deadline passed: it stops at once, calling nothing.
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    let started = std::time::Instant::now();
    let result = agent.resume(restored).context(ctx()).await.expect("run");
    assert!(started.elapsed() < std::time::Duration::from_millis(30));
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(result.stop_detail.as_deref(), Some("the run's deadline passed"));
    assert!(client.requests().is_empty());

    // A state saved before deadlines were kept in it gets one when resumed.
    // (Nor compaction: no context figures, no context policy.)
    let mut old: serde_json::Value = serde_json::from_str(&saved).expect("json");
    let fields = old.as_object_mut().expect("an object");
    for field in ["deadline_unix_ms", "context", "prepared"] {
        assert!(fields.remove(field).is_some(), "{field} is saved");
    }
    let config = fields
        .get_mut("config")
        .and_then(|c| c.as_object_mut())
        .expect("a config");
    assert!(config.remove("context").is_some());
    let old: RunState = serde_json::from_value(old).expect("an old state deserialises");
    assert_eq!(old.deadline(), None);
    let client = ScriptedClient::new().respond(response::text("in time"));
    let result = common::agent(&client)
        .deadline(std::time::Duration::from_secs(30))
        .build()
        .resume(old)
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::Completed);
}

#[tokio::test]
async fn a_run_stopped_by_its_deadline_says_what_it_found() {
    use std::time::Duration;

    // The call ran; the model's answer would come too late.
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("weather", json!({"location": "Oslo"}))]))
        .respond_after(Duration::from_secs(5), response::text("never"));
    let result = common::agent(&client)
        .deadline(Duration::from_millis(300))
        .build()
        .run("How warm is Oslo?")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(result.stop_detail.as_deref(), Some("the run's deadline passed"));
    assert_eq!(
        result.response,
        "I could not finish, but here is what I found: temp_c: 21"
    );
    assert!(
        matches!(result.messages.last(), Some(Message::Tool(_))),
        "the history ends where the model stopped"
    );

    // Nothing found yet: it says so, and never an empty answer.
    let client = ScriptedClient::new().respond(response::tool_calls([("slow_a", json!({}))]));
    let result = common::agent(&client)
        .deadline(Duration::from_millis(50))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(result.response, "I could not finish looking that up.");
}
