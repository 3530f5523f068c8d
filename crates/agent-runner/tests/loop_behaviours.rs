//! One test (at least) per loop behaviour of ARCHITECTURE.md, each failing if
//! the behaviour breaks.

mod common;

use std::time::{Duration, Instant};

use agent_core::{
    AssistantMessage, ChatResponse, LlmError, LlmErrorKind, Message, RunEnd, StopReason, ToolCall, ToolChoice,
    ToolContext, Usage,
};
use agent_runner::{Budget, history};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use serde_json::json;

fn ctx() -> ToolContext {
    ToolContext::new()
}

// 1. Native tool calling: definitions travel in the request.
#[tokio::test]
async fn native_mode_sends_tool_definitions_and_runs_structured_calls() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"x": 1}))]))
        .respond(response::text("done"));
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let requests = client.requests();
    let names: Vec<_> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "weather", "slow_a", "slow_b", "fail", "boom"]);
    assert_eq!(result.tool_calls[0].result, r#"{"x":1}"#);
    assert_eq!(result.response, "done");
    assert_eq!(result.stop_reason, RunEnd::Completed);
}

// 2. Calls of one turn run concurrently; results keep the model's order.
#[tokio::test]
async fn two_slow_tools_in_one_batch_take_the_time_of_one() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("slow_a", json!({})), ("slow_b", json!({}))]))
        .respond(response::text("done"));
    let started = Instant::now();
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(350),
        "took {elapsed:?}, expected about 200 ms"
    );
    assert!(elapsed >= Duration::from_millis(200));
    assert_eq!(result.tool_calls.len(), 2);
}

#[tokio::test]
async fn results_are_appended_in_call_order_whatever_finishes_first() {
    let tools = TestTools::new("t")
        .with(TestTool::new("late", ToolBehaviour::Reply("late".into())).with_delay(Duration::from_millis(80)))
        .with(TestTool::new("early", ToolBehaviour::Reply("early".into())));
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("late", json!({})), ("early", json!({}))]))
        .respond(response::text("done"));
    common::agent_with(&client, tools)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let second = &client.requests()[1];
    let results: Vec<_> = second.messages.iter().filter_map(Message::as_tool_result).collect();
    assert_eq!(results[0].call_id, "call_1");
    assert_eq!(results[0].content, "late");
    assert_eq!(results[1].call_id, "call_2");
    assert_eq!(results[1].content, "early");
}

#[tokio::test]
async fn concurrency_is_bounded() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("slow_a", json!({})), ("slow_b", json!({}))]))
        .respond(response::text("done"));
    let started = Instant::now();
    common::agent(&client)
        .max_concurrent_tools(1)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "one at a time takes 2 x 200 ms"
    );
}

// 3. Identical calls in one reply are collapsed: one runs, one enters the
// history; the record keeps both, the second marked as a duplicate.
#[tokio::test]
async fn identical_calls_in_a_reply_collapse_into_one_and_the_record_keeps_both() {
    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    let client = ScriptedClient::new()
        .respond(response::with_calls(
            "",
            vec![
                ToolCall::new("a", "echo", json!({"x": 1, "y": [1, 2]})),
                ToolCall::new("b", "echo", json!({"y": [1, 2], "x": 1})),
                ToolCall::new("c", "echo", json!({"x": 2})),
            ],
        ))
        .respond(response::text("done"));
    let result = common::agent_with(&client, TestTools::new("t").with(echo))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    let ids: Vec<_> = result.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(result.tool_calls[0].result, result.tool_calls[1].result);
    assert_eq!(result.tool_calls[0].duplicate_of, None);
    assert_eq!(result.tool_calls[1].duplicate_of.as_deref(), Some("a"));
    let sent = &client.requests()[1].messages;
    let asked: Vec<_> = sent
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(reply) => Some(reply.tool_calls.iter().map(|c| c.id.clone())),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(asked, ["a", "c"], "the duplicate never enters the history");
    let results: Vec<_> = sent
        .iter()
        .filter_map(Message::as_tool_result)
        .map(|r| r.call_id.clone())
        .collect();
    assert_eq!(results, ["a", "c"]);
    assert_eq!(result.messages, {
        let mut history = sent.clone();
        history.push(Message::assistant("done"));
        history
    });
}

#[tokio::test]
async fn calls_past_the_per_reply_cap_are_recorded_as_not_run_and_left_out_of_the_history() {
    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    let calls: Vec<(&str, serde_json::Value)> = (0..5).map(|i| ("echo", json!({"x": i}))).collect();
    let client = ScriptedClient::new()
        .respond(response::tool_calls(calls))
        .respond(response::text("done"));
    let result = common::agent_with(&client, TestTools::new("t").with(echo))
        .max_calls_per_reply(2)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(result.tool_calls.len(), 5);
    assert!(
        result.tool_calls[2..]
            .iter()
            .all(|c| c.is_error && c.result.contains("asked for 5 tool calls and at most 2 run per reply"))
    );
    let results = client.requests()[1]
        .messages
        .iter()
        .filter_map(Message::as_tool_result)
        .count();
    assert_eq!(results, 2);
    assert_eq!(result.stop_reason, RunEnd::Completed);
    // Every request tells the provider the cap, so a local model can stop
    // writing calls that would not run.
    assert!(
        client
            .requests()
            .iter()
            .all(|request| request.max_tool_calls == Some(2))
    );
}

#[tokio::test]
async fn the_default_cap_is_sixteen_calls_per_reply() {
    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    let calls: Vec<(&str, serde_json::Value)> = (0..20).map(|i| ("echo", json!({"x": i}))).collect();
    let client = ScriptedClient::new()
        .respond(response::tool_calls(calls))
        .respond(response::text("done"));
    common::agent_with(&client, TestTools::new("t").with(echo))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 16);
    assert_eq!(client.requests()[0].max_tool_calls, Some(16));
}

#[tokio::test]
async fn deduplication_can_be_switched_off_and_does_not_span_turns() {
    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([
            ("echo", json!({"x": 1})),
            ("echo", json!({"x": 1})),
        ]))
        .respond(response::text("done"));
    common::agent_with(&client, TestTools::new("t").with(echo))
        .deduplicate_calls(false)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);

    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([
            ("echo", json!({"x": 1})),
            ("echo", json!({"x": 2})),
        ]))
        .respond(response::tool_calls([("echo", json!({"x": 1}))]))
        .respond(response::text("done"));
    // Without the re-ask on a repeated call (tests/repeated_calls.rs), which
    // would ask the model again instead of running it.
    common::agent_with(&client, TestTools::new("t").with(echo))
        .reask_repeated_calls(false)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "the later turn's call runs again"
    );
}

// 4. Failures become error results under the same id; the run goes on.
#[tokio::test]
async fn unknown_tool_invalid_arguments_and_tool_errors_become_error_results() {
    let client = ScriptedClient::new()
        .respond(response::with_calls(
            "",
            vec![
                ToolCall::new("u", "no_such_tool", json!({})),
                ToolCall::new("v", "weather", json!({"unit": "kelvin"})),
                ToolCall::new("f", "fail", json!({})),
                ToolCall::from_argument_text("m", "echo", "{\"x\": "),
                ToolCall::new("ok", "echo", json!({"fine": true})),
            ],
        ))
        .respond(response::text("recovered"));
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.response, "recovered");
    let by_id = |id: &str| result.tool_calls.iter().find(|c| c.id == id).expect("recorded");
    assert!(by_id("u").is_error && by_id("u").result.contains("unknown tool `no_such_tool`"));
    assert!(by_id("u").result.contains("echo"), "lists the available tools");
    assert!(
        by_id("v").is_error && by_id("v").result.contains("kelvin"),
        "{}",
        by_id("v").result
    );
    assert!(by_id("v").result.contains("location"), "{}", by_id("v").result);
    assert!(by_id("f").is_error && by_id("f").result.contains("the service is down"));
    assert!(by_id("m").is_error && by_id("m").result.contains("not valid JSON"));
    assert!(!by_id("ok").is_error);
    let sent: Vec<_> = client.requests()[1]
        .messages
        .iter()
        .filter_map(Message::as_tool_result)
        .map(|r| (r.call_id.clone(), r.is_error))
        .collect();
    assert_eq!(
        sent,
        [
            ("u".into(), true),
            ("v".into(), true),
            ("f".into(), true),
            ("m".into(), true),
            ("ok".into(), false)
        ]
    );
}

#[tokio::test]
async fn schema_invalid_arguments_never_reach_the_tool() {
    let weather = TestTool::new("weather", ToolBehaviour::Reply("sunny".into())).with_schema(json!({
        "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]
    }));
    let runs = weather.call_counter();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("weather", json!({}))]))
        .respond(response::text("Which city?"));
    let result = common::agent_with(&client, TestTools::new("t").with(weather))
        .build()
        .run("weather?")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(result.tool_calls[0].is_error);
    assert!(result.tool_calls[0].result.contains("location"));
}

#[tokio::test]
async fn a_panicking_tool_yields_an_error_result_and_the_run_continues() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("boom", json!({})), ("echo", json!({"a": 1}))]))
        .respond(response::text("still here"));
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "still here");
    assert!(result.tool_calls[0].is_error);
    assert!(
        result.tool_calls[0].result.contains("kaboom"),
        "{}",
        result.tool_calls[0].result
    );
    assert!(!result.tool_calls[1].is_error);
}

#[tokio::test]
async fn a_permission_denial_is_a_result_the_model_sees() {
    let tools = TestTools::new("t")
        .with(TestTool::new("drop_table", ToolBehaviour::Reply("dropped".into())).with_roles(["admin"]));
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("drop_table", json!({}))]))
        .respond(response::text("not allowed"));
    let result = common::agent_with(&client, tools.clone())
        .build()
        .run("drop it")
        .context(ToolContext::new().with_role("user"))
        .await
        .expect("run");
    assert!(result.tool_calls[0].is_error);
    assert!(
        result.tool_calls[0].result.contains("admin"),
        "{}",
        result.tool_calls[0].result
    );
    assert_eq!(tools.calls("drop_table"), 0);
}

#[tokio::test]
async fn three_consecutive_all_failing_iterations_end_the_run_with_an_error() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("fail", json!({"n": 1}))]))
        .respond(response::tool_calls([("fail", json!({"n": 2}))]))
        .respond(response::tool_calls([("fail", json!({"n": 3}))]))
        .respond(response::text("never sent"));
    let error = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect_err("the run fails");
    assert_eq!(error.result.stop_reason, RunEnd::Error);
    assert_eq!(error.result.tool_calls.len(), 3, "the partial record is kept");
    assert!(error.to_string().contains("3 consecutive iterations"), "{error}");
    assert_eq!(client.requests().len(), 3);
}

#[tokio::test]
async fn a_success_resets_the_failure_count() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("fail", json!({"n": 1}))]))
        .respond(response::tool_calls([("fail", json!({"n": 2}))]))
        .respond(response::tool_calls([("echo", json!({}))]))
        .respond(response::tool_calls([("fail", json!({"n": 3}))]))
        .respond(response::text("ok"));
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::Completed);
}

// 5. The same calls twice in a row: the next request forces an answer.
#[tokio::test]
async fn repeating_the_previous_turns_calls_forces_a_final_answer() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"q": 1}))]))
        .respond(response::tool_calls([("echo", json!({"q": 1}))]))
        .respond(response::text("final"));
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let requests = client.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].tool_choice, ToolChoice::Auto);
    assert_eq!(requests[2].tool_choice, ToolChoice::None);
    assert_eq!(result.stop_reason, RunEnd::LoopDetected);
    assert_eq!(result.response, "final");
}

// 6. The iteration limit: one last request with tool_choice none.
#[tokio::test]
async fn hitting_max_iterations_forces_one_final_answer_without_running_more_tools() {
    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"n": 1}))]))
        .respond(response::tool_calls([("echo", json!({"n": 2}))]))
        .respond(response::with_calls(
            "Here is what I know.",
            vec![ToolCall::new("late", "echo", json!({"n": 3}))],
        ));
    let result = common::agent_with(&client, TestTools::new("t").with(echo))
        .max_iterations(2)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let requests = client.requests();
    assert_eq!(requests.len(), 3);
    let last = &requests[2];
    assert_eq!(last.tool_choice, ToolChoice::None);
    assert!(
        !last.tools.is_empty(),
        "tool definitions stay while the history holds tool blocks"
    );
    assert!(
        matches!(last.messages.last(), Some(Message::User { content, .. }) if content.starts_with("No more tool calls."))
    );
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the call returned anyway is not run"
    );
    assert_eq!(result.stop_reason, RunEnd::MaxIterations);
    assert_eq!(result.iterations, 3);
    assert_eq!(result.response, "Here is what I know.");
    assert_eq!(
        result.stop_detail.as_deref(),
        Some("reached the limit of 2 iterations; the answer was forced; 1 tool call requested afterwards was not run")
    );
    assert!(
        !result
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { content, .. } if content.contains("Do not call any more"))),
        "the transient instruction is not kept in the history"
    );
    assert!(history::is_sendable(&result.messages));
}

// 7. A forced tool choice applies to the first round only.
#[tokio::test]
async fn a_forced_tool_choice_reverts_to_auto_after_the_first_round() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({}))]))
        .respond(response::tool_calls([("echo", json!({"again": true}))]))
        .respond(response::text("done"));
    common::agent(&client)
        .tool_choice(ToolChoice::Tool { name: "echo".into() })
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let choices: Vec<_> = client.requests().into_iter().map(|r| r.tool_choice).collect();
    assert_eq!(
        choices,
        [
            ToolChoice::Tool { name: "echo".into() },
            ToolChoice::Auto,
            ToolChoice::Auto
        ]
    );
}

// 8. Budgets and cancellation.
#[tokio::test]
async fn a_token_budget_ends_the_run() {
    let client = ScriptedClient::new()
        .respond(response::with_usage(
            response::tool_calls([("echo", json!({}))]),
            Usage::new(900, 200),
        ))
        .respond(response::text("never"));
    let result = common::agent(&client)
        .budget(Budget {
            max_total_tokens: Some(1000),
            ..Budget::default()
        })
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("budget stops are results");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(client.requests().len(), 1);
    assert!(history::is_sendable(&result.messages));
}

#[tokio::test]
async fn a_batch_that_would_exceed_the_tool_call_budget_does_not_start() {
    let echo = TestTool::new("echo", ToolBehaviour::Echo);
    let runs = echo.call_counter();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"n": 1}))]))
        .respond(response::tool_calls([
            ("echo", json!({"n": 2})),
            ("echo", json!({"n": 3})),
        ]))
        .respond(response::text("never"));
    let result = common::agent_with(&client, TestTools::new("t").with(echo))
        .budget(Budget {
            max_tool_calls: Some(2),
            ..Budget::default()
        })
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert!(history::is_sendable(&result.messages));
}

#[tokio::test]
async fn a_deadline_stops_a_slow_run() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("slow_a", json!({}))]))
        .respond(response::text("never"));
    let started = Instant::now();
    let result = common::agent(&client)
        .deadline(Duration::from_millis(50))
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert!(started.elapsed() < Duration::from_millis(180));
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert!(result.tool_calls[0].is_error, "the interrupted call is recorded");
}

#[tokio::test]
async fn a_cancelled_run_stops_within_100_ms_even_while_a_tool_sleeps() {
    let tools = TestTools::new("t")
        .with(TestTool::new("sleepy", ToolBehaviour::Reply("zzz".into())).with_delay(Duration::from_secs(30)));
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("sleepy", json!({}))]))
        .respond(response::text("never"));
    let context = ToolContext::new();
    let cancel = context.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let result = common::agent_with(&client, tools)
        .build()
        .run("go")
        .context(context.clone())
        .await
        .expect("cancellation is a result");
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(150), "stopped after {elapsed:?}");
    assert_eq!(result.stop_reason, RunEnd::Cancelled);
    assert!(
        history::is_sendable(&result.messages),
        "interrupted call got a synthesised result"
    );
    assert_eq!(client.requests().len(), 1);
}

#[tokio::test]
async fn a_cancelled_model_call_stops_promptly() {
    let client = ScriptedClient::new().respond_after(Duration::from_secs(30), response::text("late"));
    let context = ToolContext::new();
    let cancel = context.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(context.clone())
        .await
        .expect("result");
    assert!(started.elapsed() < Duration::from_millis(130));
    assert_eq!(result.stop_reason, RunEnd::Cancelled);
}

// 9. Sendable history and deterministic requests.
#[tokio::test]
async fn a_history_with_a_dangling_tool_call_is_repaired_before_sending() {
    let history = vec![
        Message::user("earlier"),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("old", "echo", json!({}))],
        )),
    ];
    let client = ScriptedClient::new().respond(response::text("ok"));
    common::agent(&client)
        .build()
        .run("again")
        .history(history)
        .context(ctx())
        .await
        .expect("run");
    let sent = &client.requests()[0].messages;
    assert!(history::is_sendable(sent));
    assert_eq!(
        sent[2].as_tool_result().map(|r| (r.call_id.as_str(), r.is_error)),
        Some(("old", true))
    );
    assert!(matches!(&sent[3], Message::User { content, .. } if content == "again"));
}

#[tokio::test]
async fn requests_with_the_same_tools_serialise_byte_identical_prefixes() {
    let script = || {
        ScriptedClient::new()
            .respond(response::tool_calls([("echo", json!({"b": 2, "a": 1}))]))
            .respond(response::text("done"))
    };
    let first = script();
    let second = script();
    common::agent(&first)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    common::agent(&second)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let serialise = |request: &agent_core::ChatRequest| serde_json::to_string(request).expect("serialise");
    assert_eq!(serialise(&first.requests()[0]), serialise(&second.requests()[0]));
    assert_eq!(serialise(&first.requests()[1]), serialise(&second.requests()[1]));
    let stable = |request: &agent_core::ChatRequest| {
        (
            serde_json::to_string(&request.system).expect("system"),
            serde_json::to_string(&request.tools).expect("tools"),
        )
    };
    assert_eq!(stable(&first.requests()[0]), stable(&first.requests()[1]));
    // Each request's messages extend the previous request's messages.
    let earlier = serde_json::to_string(&first.requests()[0].messages).expect("messages");
    let later = serde_json::to_string(&first.requests()[1].messages).expect("messages");
    assert!(later.starts_with(&earlier[..earlier.len() - 1]));
}

// 10. The record, usage, cost and multi-turn continuation.
#[tokio::test]
async fn the_result_records_calls_usage_cost_and_a_history_that_continues() {
    let mut catalog = agent_core::ModelCatalog::new();
    catalog.insert(
        "scripted-model",
        agent_core::ModelInfo {
            provider: "scripted".into(),
            context_window: Some(8192),
            pricing: agent_core::Pricing {
                input_per_million: 1.0,
                output_per_million: 2.0,
                ..agent_core::Pricing::default()
            },
            inputs: None,
        },
    );
    let client = ScriptedClient::new()
        .respond(response::with_usage(
            response::tool_calls([("echo", json!({"v": 1}))]),
            Usage::new(100, 10),
        ))
        .respond(response::with_usage(
            response::text("first answer"),
            Usage::new(150, 20),
        ))
        .respond(response::text("second answer"));
    let agent = common::agent(&client).catalog(std::sync::Arc::new(catalog)).build();
    let first = agent.run("one").context(ctx()).await.expect("run");
    assert_eq!(first.iterations, 2);
    assert_eq!(first.usage, Usage::new(250, 30));
    let cost = first.cost_usd.expect("priced");
    assert!((cost - (250.0 * 1.0 + 30.0 * 2.0) / 1e6).abs() < 1e-12, "{cost}");
    assert_eq!(first.model_calls.len(), 2);
    assert_eq!(first.tool_calls[0].name, "echo");
    assert_eq!(first.tool_calls[0].arguments, json!({"v": 1}));
    assert_eq!(first.provider, "scripted");
    assert_eq!(
        first.messages.len(),
        4,
        "user, assistant call, tool result, assistant answer"
    );

    let second = agent
        .run("two")
        .history(first.messages.clone())
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(second.response, "second answer");
    let sent = &client.requests()[2].messages;
    assert_eq!(&sent[..4], &first.messages[..]);
    assert!(matches!(&sent[4], Message::User { content, .. } if content == "two"));
}

#[tokio::test]
async fn a_model_error_fails_the_run_but_keeps_the_history() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({}))]))
        .fail(LlmError::new(LlmErrorKind::Server, "upstream exploded").with_status(500));
    let error = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect_err("fails");
    assert_eq!(error.source_error.map(|e| e.kind), Some(LlmErrorKind::Server));
    assert_eq!(error.result.tool_calls.len(), 1);
    assert_eq!(error.result.messages.len(), 3);
    assert!(
        error
            .result
            .stop_detail
            .is_some_and(|d| d.contains("upstream exploded"))
    );
}

#[tokio::test]
async fn text_before_tool_calls_in_one_response_does_not_end_the_run() {
    let client = ScriptedClient::new()
        .respond(ChatResponse {
            message: AssistantMessage::with_tool_calls("Let me look.", vec![ToolCall::new("c", "echo", json!({}))]),
            stop_reason: StopReason::ToolUse,
            usage: Usage::new(1, 1),
            model: String::new(),
            id: None,
            route: None,
        })
        .respond(response::text("Found it."));
    let result = common::agent(&client)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.response, "Found it.");
    assert_eq!(result.tool_calls.len(), 1);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArguments {}

#[tokio::test]
async fn reaching_the_deadline_cancels_the_runs_token_but_not_the_callers() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    // A tool whose work outlives its future, as a local model's job or a
    // SQL thread does: it stops only when the token it was given is cancelled.
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stopped);
    let worker = agent_tools::TypedTool::new(
        "work",
        "Works for a long time.",
        move |_: NoArguments, context: agent_core::ToolContext| {
            let flag = Arc::clone(&flag);
            async move {
                let token = context.cancel.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    flag.store(true, Ordering::SeqCst);
                });
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok::<_, agent_core::ToolError>(agent_tools::Json(json!({})))
            }
        },
    );
    let registry = agent_tools::ToolBox::new();
    registry
        .register(Arc::new(agent_tools::ToolSet::new("w", "Work").tool(worker)), true)
        .expect("register");
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("work", json!({}))]))
        .respond(response::text("never"));
    let caller = ctx();
    let result = agent_runner::Agent::builder(Arc::new(client))
        .tools(Arc::new(registry))
        .deadline(Duration::from_millis(100))
        .build()
        .run("go")
        .context(caller.clone())
        .await
        .expect("run");
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        stopped.load(Ordering::SeqCst),
        "the tool's token was cancelled at the deadline"
    );
    assert!(!caller.cancel.is_cancelled(), "the caller's token is left alone");
}

#[tokio::test]
async fn a_huge_tool_result_is_capped_before_it_enters_the_history() {
    let huge = "x".repeat(100_000);
    let tools = TestTools::new("t").with(TestTool::new("dump", ToolBehaviour::Reply(huge.clone().into())));
    let script = || {
        ScriptedClient::new()
            .respond(response::tool_calls([("dump", json!({}))]))
            .respond(response::text("done"))
    };
    let client = script();
    let result = common::agent_with(&client, tools.clone())
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let sent = client.requests()[1].clone();
    let tool_message = sent
        .messages
        .iter()
        .find_map(Message::as_tool_result)
        .expect("the result was sent");
    assert!(tool_message.content.len() < 33 * 1024, "{}", tool_message.content.len());
    assert!(
        tool_message
            .content
            .ends_with("[truncated: the result was 100000 bytes; only the first 32768 are shown]"),
        "{}",
        &tool_message.content[tool_message.content.len() - 100..]
    );
    assert_eq!(
        result.tool_calls[0].result, tool_message.content,
        "the record shows what the model saw"
    );

    let client = script();
    common::agent_with(&client, tools)
        .max_tool_result_bytes(0)
        .build()
        .run("go")
        .context(ctx())
        .await
        .expect("run");
    let sent = client.requests()[1].clone();
    let full = sent.messages.iter().find_map(Message::as_tool_result).expect("sent");
    assert_eq!(full.content, huge, "0 turns the cap off");
}

/// Tools see what the user has said in the conversation (and only that), so
/// they can refuse an argument the model made up.
#[tokio::test]
async fn tools_are_told_what_the_user_said_in_the_conversation() {
    use agent_tools::{Json, ToolSet, TypedTool};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        city: String,
    }
    let tool = TypedTool::new(
        "said",
        "Did the user say it?",
        |args: Args, context: agent_core::ToolContext| {
            let said = agent_tools::UserWords::of(&context).map(|words| words.contains(&args.city));
            async move { Ok::<_, agent_core::ToolError>(Json(json!({ "said": said }))) }
        },
    );
    let registry = agent_tools::ToolBox::new();
    registry
        .register(std::sync::Arc::new(ToolSet::new("t", "test").tool(tool)), true)
        .expect("register");
    let client = ScriptedClient::new()
        .respond(response::tool_calls([
            ("said", json!({"city": "Tokyo"})),
            ("said", json!({"city": "Paris"})),
            ("said", json!({"city": "Oslo"})),
        ]))
        .respond(response::text("done"));
    let history = vec![
        Message::user("I live in Oslo."),
        Message::assistant("Noted: Paris is lovely too."),
    ];
    let result = agent_runner::Agent::builder(std::sync::Arc::new(client))
        .tools(std::sync::Arc::new(registry))
        .build()
        .run("Weather in tokyo?")
        .history(history)
        .context(ctx())
        .await
        .expect("run");
    let said: Vec<&str> = result.tool_calls.iter().map(|call| call.result.as_str()).collect();
    assert_eq!(said, [r#"{"said":true}"#, r#"{"said":false}"#, r#"{"said":true}"#]);
}

/// A stop tool's result is the answer: the run ends after it, and the
/// answer enters the history as the assistant's message.
#[tokio::test]
async fn a_stop_tool_ends_the_run_with_its_result_and_the_tool_choice_can_hold_every_round() {
    let reply = TestTool::new(
        "reply_to_user",
        ToolBehaviour::Reply(agent_core::ToolOutput::Text("It is 12 °C in Oslo.".into())),
    );
    let weather = TestTool::new(
        "weather",
        ToolBehaviour::Reply(agent_core::ToolOutput::Text("12 °C".into())),
    );
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("weather", json!({"city": "Oslo"}))]))
        .respond(response::tool_calls([(
            "reply_to_user",
            json!({"text": "It is 12 °C in Oslo."}),
        )]))
        .respond(response::text("never asked for"));
    let result = common::agent_with(&client, TestTools::new("t").with(weather).with(reply))
        .tool_choice(ToolChoice::Required)
        .tool_choice_every_round(true)
        .stop_at_tools(["reply_to_user"])
        .build()
        .run("Weather in Oslo?")
        .context(ctx())
        .await
        .expect("run");
    assert_eq!(result.response, "It is 12 °C in Oslo.");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.iterations, 2);
    let requests = client.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|request| request.tool_choice == ToolChoice::Required)
    );
    assert_eq!(
        result.messages.last(),
        Some(&Message::assistant("It is 12 °C in Oslo."))
    );
}
