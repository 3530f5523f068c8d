//! Context-window management: before a model call that would not fit, old
//! large tool results are elided and the oldest turns summarised by the
//! model, all within the window, no tool call ever separated from its
//! result; the summary comes from the built-in template.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::{
    AgentEvent, AgentRunResult, CallPurpose, ChatRequest, CompactionTrigger, Message, ModelCatalog, ModelInfo, RunEnd,
    ToolChoice, Usage,
};
use agent_prompts::builtin;
use agent_runner::AgentBuilder;
use agent_runner::context::{SUMMARY_PREFIX, estimate_tokens};
use agent_runner::history::is_sendable;
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use common::context::*;

#[tokio::test]
async fn a_forty_turn_conversation_with_large_results_is_compacted_to_fit_a_tiny_window() {
    let window = 2000;
    let summary_usage = Usage::new(900, 40);
    let router = Router::new(
        ScriptedClient::new()
            .respond(lookup("n1", 41))
            .respond(lookup("n2", 42))
            .respond(response::text("City 40 is the largest.")),
        summaries(10, 100, summary_usage),
    );
    let agent = agent(&router).context_window(window).max_tokens(100).build();
    let history = history(40, RESULT_BYTES);
    assert_eq!(history.len(), 160);
    let stream = agent.run("Which city is the largest?").history(history).stream();
    let (events, result) = collect(stream).await;

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "City 40 is the largest.");
    let requests = router.requests();
    for request in &requests {
        assert_fits(request, window);
    }

    // The summary requests: the template around the oldest turns, written out.
    let summary_requests: Vec<&ChatRequest> = requests.iter().filter(|r| is_summary_request(r)).collect();
    assert_eq!(summary_requests.len(), 5);
    assert_eq!(router.summaries.requests().len(), 5);
    let first = summarised_text(summary_requests[0]);
    assert!(first.starts_with("[user] Question 1: how many people live in city 1?\n\n[assistant]\n"));
    assert!(
        first.contains("[assistant called lookup {\"city\":1}]\n\n[result of lookup] [tool result elided: 3000 bytes]")
    );
    let later = summarised_text(summary_requests[1]);
    assert!(
        later.starts_with("[earlier summary] The user asked about city populations."),
        "{later}"
    );
    for request in &summary_requests {
        assert_eq!(request.max_tokens, Some(400), "a quarter of 80% of the window");
    }

    // The chat requests: the summary first, then the turns kept whole.
    let chat_requests = router.chat.requests();
    assert_eq!(chat_requests.len(), 3);
    let first_chat = &chat_requests[0].messages;
    assert!(matches!(&first_chat[0], Message::System { content } if content.starts_with(SUMMARY_PREFIX)));
    assert_eq!(
        first_chat[1],
        Message::user("Question 40: how many people live in city 40?")
    );
    assert_eq!(
        first_chat[3].as_tool_result().map(|r| r.content.len()),
        Some(RESULT_BYTES),
        "the latest turn is kept whole"
    );
    assert_eq!(first_chat[5], Message::user("Which city is the largest?"));
    assert_eq!(first_chat.len(), 6);
    let last_chat = &chat_requests[2].messages;
    assert_eq!(last_chat[1], Message::user("Which city is the largest?"));
    assert_eq!(
        last_chat[3].as_tool_result().map(|r| r.content.as_str()),
        Some("[tool result elided: 3000 bytes]"),
        "a result the model has seen goes when the latest turn alone is too large"
    );
    assert_eq!(
        last_chat[5].as_tool_result().map(|r| r.content.len()),
        Some(RESULT_BYTES),
        "the result the model has not seen yet stays"
    );

    // The record: three compactions, each with its figures.
    let compactions = &result.compactions;
    assert_eq!(compactions.len(), 3, "{compactions:#?}");
    let (one, two, three) = (&compactions[0], &compactions[1], &compactions[2]);
    assert_eq!(one.trigger, CompactionTrigger::Threshold);
    assert_eq!(one.iteration, 1);
    assert_eq!(one.elided_results, 37, "the results before the 4 recent turns");
    assert_eq!(one.elided_bytes, 37 * RESULT_BYTES);
    assert_eq!(
        one.replaced_messages, 156,
        "everything before the latest turn of the history"
    );
    assert_eq!(one.summary_calls, 4);
    assert_eq!(one.summary_usage, Usage::new(3600, 160));
    assert!(one.estimated_tokens_before > 30_000, "{}", one.estimated_tokens_before);
    // Estimates after a call are calibrated by what the provider counted:
    // here the last summary request.
    let ratio = (900.0 / estimate_tokens(summary_requests[3]) as f64).clamp(1.0, 8.0);
    assert!(ratio > 1.0, "{ratio}");
    let calibrated = |request: &ChatRequest| (estimate_tokens(request) as f64 * ratio).ceil() as u64;
    assert_eq!(one.estimated_tokens_after, calibrated(&chat_requests[0]));
    assert_eq!(one.summary.as_deref().map(Message::system), Some(first_chat[0].clone()));
    assert_eq!((two.iteration, two.replaced_messages, two.summary_calls), (2, 5, 1));
    assert_eq!((two.elided_results, two.elided_bytes), (0, 0));
    assert_eq!(
        (three.iteration, three.replaced_messages, three.summary_calls),
        (3, 0, 0)
    );
    assert_eq!(
        (three.elided_results, three.elided_bytes, three.summary.as_deref()),
        (1, RESULT_BYTES, None)
    );
    assert_eq!(result.added_messages_start(160), Some(1));
    assert_eq!(result.messages[1], Message::user("Which city is the largest?"));
    assert_eq!(result.messages.len(), 7);

    // Summary calls count in the usage and the record, not as iterations.
    assert_eq!(result.iterations, 3);
    assert_eq!(result.usage, Usage::new(3 * 10 + 5 * 900, 3 * 5 + 5 * 40));
    let purposes: Vec<(u32, CallPurpose)> = result.model_calls.iter().map(|c| (c.iteration, c.purpose)).collect();
    let summary = CallPurpose::Summary;
    let chat = CallPurpose::Chat;
    assert_eq!(
        purposes,
        [
            (1, summary),
            (1, summary),
            (1, summary),
            (1, summary),
            (1, chat),
            (2, summary),
            (2, chat),
            (3, chat)
        ]
    );

    // Each compaction is an event, before the model call it made room for;
    // summaries are neither model requests of the loop nor streamed text.
    let compacted: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ContextCompacted { .. }))
        .collect();
    let expected: Vec<AgentEvent> = compactions.iter().map(compaction_event).collect();
    assert_eq!(compacted, expected.iter().collect::<Vec<_>>());
    let order: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ContextCompacted { iteration, .. } => Some(format!("compacted {iteration}")),
            AgentEvent::ModelRequestStarted { iteration, .. } => Some(format!("request {iteration}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "compacted 1",
            "request 1",
            "compacted 2",
            "request 2",
            "compacted 3",
            "request 3"
        ]
    );
    let streamed: String = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "City 40 is the largest.");
}

#[tokio::test]
async fn eliding_old_results_is_enough_when_it_frees_the_room() {
    let router = Router::new(
        ScriptedClient::new().respond(response::text("done")),
        ScriptedClient::new(),
    );
    let agent = agent(&router).context_window(4000).max_tokens(100).build();
    let result = agent.run("And now?").history(history(6, RESULT_BYTES)).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    let requests = router.requests();
    assert_eq!(requests.len(), 1, "no summary call");
    assert_fits(&requests[0], 4000);
    let results: Vec<(String, usize)> = requests[0]
        .messages
        .iter()
        .filter_map(Message::as_tool_result)
        .map(|r| (r.call_id.clone(), r.content.len()))
        .collect();
    let marker = "[tool result elided: 3000 bytes]".len();
    assert_eq!(
        results,
        [
            ("h1".into(), marker),
            ("h2".into(), marker),
            ("h3".into(), marker),
            ("h4".into(), RESULT_BYTES),
            ("h5".into(), RESULT_BYTES),
            ("h6".into(), RESULT_BYTES)
        ]
    );
    let [record] = result.compactions.as_slice() else {
        panic!("one compaction: {:?}", result.compactions);
    };
    assert_eq!(
        (record.trigger, record.elided_results, record.elided_bytes),
        (CompactionTrigger::Threshold, 3, 3 * RESULT_BYTES)
    );
    assert_eq!(
        (
            record.replaced_messages,
            record.summary.as_deref(),
            record.summary_calls
        ),
        (0, None, 0)
    );
    assert!(record.estimated_tokens_before > 3100 && record.estimated_tokens_after <= 3100);
    assert_eq!(record.estimated_tokens_after, estimate_tokens(&requests[0]));
    assert_eq!(result.added_messages_start(24), Some(24));
    assert_eq!(result.model_calls.len(), 1);
}

/// A 40-turn history with large results run by an agent `configure`d so;
/// every request sent and the result.
async fn run_long_history(configure: impl FnOnce(AgentBuilder) -> AgentBuilder) -> (Vec<ChatRequest>, AgentRunResult) {
    let router = Router::new(
        ScriptedClient::new().respond(response::text("done")),
        summaries(10, 10, Usage::default()),
    );
    let result = configure(agent(&router))
        .build()
        .run("And now?")
        .history(history(40, RESULT_BYTES))
        .await
        .unwrap();
    (router.requests(), result)
}

/// A catalog giving the scripted model a context `window`.
fn catalog(window: u64) -> Arc<ModelCatalog> {
    let mut catalog = ModelCatalog::new();
    catalog.insert(
        "scripted-model",
        ModelInfo {
            provider: "scripted".into(),
            context_window: Some(window),
            pricing: agent_core::Pricing::default(),
            inputs: None,
        },
    );
    Arc::new(catalog)
}

#[tokio::test]
async fn the_window_comes_from_the_builder_else_the_catalog_else_nothing_is_compacted() {
    // Unknown window: sent as it is.
    let (requests, result) = run_long_history(|builder| builder).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].messages.len(), 161);
    assert!(result.compactions.is_empty());

    let (requests, result) = run_long_history(|builder| builder.catalog(catalog(8000))).await;
    assert_eq!(result.compactions.len(), 1);
    for request in &requests {
        assert_fits(request, 8000);
    }
    // The builder's window wins over the catalog's (which would hold it all).
    let (requests, result) = run_long_history(|builder| builder.catalog(catalog(1_000_000)).context_window(4000)).await;
    assert_eq!(result.compactions.len(), 1);
    for request in &requests {
        assert_fits(request, 4000);
    }
}

#[tokio::test]
async fn a_provider_counting_more_tokens_than_estimated_makes_compaction_start_earlier() {
    // The first request is estimated at `raw` tokens; the window leaves
    // room for the second (the first plus a call and a short result) by
    // that estimate, not when the provider counts three times as many.
    let tools = || TestTools::new("kb").with(TestTool::new("lookup", ToolBehaviour::Reply("42".into())));
    let probe = agent_runner::Agent::builder(Arc::new(ScriptedClient::new()))
        .name("tester")
        .system_prompt("You are a test agent.")
        .tools(common::registry(tools()))
        .build();
    let raw = estimate_tokens(probe.start(history(6, 2000), "And now?").request());
    assert!(raw > 2000, "{raw}");
    let window = raw * 2;
    let run = |reported: u64| async move {
        let router = Router::new(
            ScriptedClient::new()
                .respond(response::with_usage(lookup("n1", 7), Usage::new(reported, 5)))
                .respond(response::text("done")),
            summaries(5, 10, Usage::default()),
        );
        let result = agent_runner::Agent::builder(Arc::new(router.clone()))
            .name("tester")
            .system_prompt("You are a test agent.")
            .tools(common::registry(tools()))
            .context_window(window)
            .build()
            .run("And now?")
            .history(history(6, 2000))
            .await
            .unwrap();
        (router.requests(), result)
    };

    // Counted as estimated: both requests go as they are.
    let (requests, result) = run(raw).await;
    assert_eq!(requests.len(), 2);
    assert!(result.compactions.is_empty());
    let second = estimate_tokens(&requests[1]);
    assert!(second > raw && second <= window * 8 / 10, "{second}");

    // Counted three times over: the second request is compacted first.
    let (requests, result) = run(raw * 3).await;
    let [record] = result.compactions.as_slice() else {
        panic!("one compaction: {:?}", result.compactions);
    };
    assert_eq!(record.iteration, 2);
    assert_eq!(record.estimated_tokens_before, second * 3);
    assert!(record.estimated_tokens_after <= window * 8 / 10, "{record:?}");
    let last = requests.last().unwrap();
    assert!(estimate_tokens(last) * 3 <= window * 8 / 10);
    assert!(is_sendable(&last.messages));
}

#[tokio::test]
async fn a_forced_final_answer_is_compacted_with_its_instruction_kept_last() {
    let router = Router::new(
        ScriptedClient::new()
            .respond(lookup("n1", 9))
            .respond(response::text("City 9 has 9000 people.")),
        summaries(8, 10, Usage::default()),
    );
    let agent = agent(&router).context_window(1200).max_iterations(1).build();
    let result = agent
        .run("How many live in city 9?")
        .history(history(8, 100))
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::MaxIterations);
    assert_eq!(result.response, "City 9 has 9000 people.");
    let requests = router.requests();
    assert!(requests.len() > 2, "a summary before the forced answer");
    for request in &requests {
        assert_fits(request, 1200);
    }
    let chat = router.chat.requests();
    assert_eq!(chat.len(), 2);
    assert_eq!(chat[0].messages.len(), 33, "the first request fits as it is");
    let forced = &chat[1];
    assert_eq!(forced.tool_choice, ToolChoice::None);
    assert!(matches!(&forced.messages[0], Message::System { content } if content.starts_with(SUMMARY_PREFIX)));
    let instruction = builtin::source(builtin::FORCED_FINAL_ANSWER).unwrap();
    assert_eq!(
        forced.messages.last(),
        Some(&Message::user(instruction)),
        "the instruction stays last"
    );
    assert_eq!(forced.messages[1], Message::user("How many live in city 9?"));
    let [record] = result.compactions.as_slice() else {
        panic!("one compaction: {:?}", result.compactions);
    };
    assert_eq!((record.iteration, record.replaced_messages), (2, 32));
    // The instruction does not stay in the history; the answer does.
    assert_eq!(result.messages.len(), 5);
    assert_eq!(result.messages[1], Message::user("How many live in city 9?"));
    assert_eq!(result.messages[4], Message::assistant("City 9 has 9000 people."));
    assert!(is_sendable(&result.messages));
    assert_eq!(result.added_messages_start(32), Some(1));
}

#[tokio::test]
async fn an_agent_keeps_the_calibration_its_runs_learned_for_the_next_run() {
    // One run whose single request the provider counts at three times the
    // estimate; the next run of the same agent is estimated with that
    // factor before its first call, and compacted before it is sent.
    let tools = || TestTools::new("kb").with(TestTool::new("lookup", ToolBehaviour::Reply("42".into())));
    let probe = agent_runner::Agent::builder(Arc::new(ScriptedClient::new()))
        .name("tester")
        .system_prompt("You are a test agent.")
        .tools(common::registry(tools()))
        .build();
    let raw = estimate_tokens(probe.start(history(6, 2000), "And now?").request());
    let window = raw * 2;
    let router = Router::new(
        ScriptedClient::new()
            .respond(response::with_usage(response::text("first"), Usage::new(raw * 3, 5)))
            .respond(response::text("second")),
        summaries(5, 10, Usage::default()),
    );
    let agent = agent_runner::Agent::builder(Arc::new(router.clone()))
        .name("tester")
        .system_prompt("You are a test agent.")
        .tools(common::registry(tools()))
        .context_window(window)
        .build();
    let first = agent.run("And now?").history(history(6, 2000)).await.unwrap();
    assert!(
        first.compactions.is_empty(),
        "the first estimate fits: {:?}",
        first.compactions
    );
    assert!((agent.start(Vec::new(), "x").calibration() - 3.0).abs() < 0.01);

    let second = agent.run("And now?").history(history(6, 2000)).await.unwrap();
    let [record] = second.compactions.as_slice() else {
        panic!(
            "the second run is compacted before its first call: {:?}",
            second.compactions
        );
    };
    assert_eq!(record.iteration, 1);
    let sent = router.requests();
    assert_fits(sent.last().unwrap(), window);
}
