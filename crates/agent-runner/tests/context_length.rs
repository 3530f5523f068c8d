//! A provider's context-length error: one compaction (even without a known
//! window) and one retry of the call; a second error ends the run.

#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{Capabilities, CompactionTrigger, LlmError, LlmErrorKind, Message, RunEnd, Usage};
use agent_runner::ContextPolicy;
use agent_runner::context::SUMMARY_PREFIX;
use agent_runner::history::is_sendable;
use agent_testing::{ScriptedClient, response};
use common::context::*;

#[tokio::test]
async fn a_context_length_error_compacts_once_and_the_call_is_retried() {
    let summary_usage = Usage::new(300, 20);
    let router = Router::new(
        ScriptedClient::new()
            .fail(LlmError::new(LlmErrorKind::ContextLength, "prompt is too long"))
            .respond(response::text("done")),
        summaries(1, 10, summary_usage),
    );
    // No window known: only the provider's error compacts.
    let agent = agent(&router).build();
    let result = agent.run("And now?").history(history(6, 100)).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "done");
    let requests = router.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].messages.len(), 25);
    let summarised = summarised_text(&requests[1]);
    assert!(summarised.starts_with("[user] Question 1:"), "{summarised}");
    assert!(summarised.contains("[assistant] City 3 has 3000 people."));
    assert!(!summarised.contains("Question 4"), "the 4 recent turns are kept");
    let retried = &requests[2].messages;
    assert_eq!(retried.len(), 14);
    assert!(matches!(&retried[0], Message::System { content } if content.starts_with(SUMMARY_PREFIX)));
    assert_eq!(retried[1], Message::user("Question 4: how many people live in city 4?"));
    assert!(is_sendable(retried));
    let [record] = result.compactions.as_slice() else {
        panic!("one compaction: {:?}", result.compactions);
    };
    assert_eq!(record.trigger, CompactionTrigger::ContextLengthError);
    assert_eq!(
        (record.iteration, record.replaced_messages, record.summary_calls),
        (1, 12, 1)
    );
    assert_eq!(record.elided_results, 0, "no result is over the threshold");
    assert_eq!(record.summary_usage, summary_usage);
    assert_eq!(result.iterations, 1);
    assert_eq!(result.usage, Usage::new(310, 25));
    assert_eq!(result.added_messages_start(24), Some(13));
}

#[tokio::test]
async fn a_second_context_length_error_for_the_same_call_ends_the_run() {
    let too_long = || LlmError::new(LlmErrorKind::ContextLength, "prompt is too long");
    let router = Router::new(
        ScriptedClient::new().fail(too_long()).fail(too_long()),
        summaries(1, 10, Usage::new(300, 20)),
    );
    let error = agent(&router)
        .build()
        .run("And now?")
        .history(history(6, 100))
        .await
        .unwrap_err();
    assert_eq!(router.requests().len(), 3, "the call, the summary, the retry");
    assert_eq!(error.result.stop_reason, RunEnd::Error);
    assert_eq!(error.source_error.map(|e| e.kind), Some(LlmErrorKind::ContextLength));
    assert_eq!(error.result.compactions.len(), 1);
    assert!(is_sendable(&error.result.messages));

    // With nothing to compact, the first error ends the run.
    let router = Router::new(ScriptedClient::new().fail(too_long()), ScriptedClient::new());
    let error = agent(&router).build().run("Hello").await.unwrap_err();
    assert_eq!(router.requests().len(), 1);
    assert_eq!(error.source_error.map(|e| e.kind), Some(LlmErrorKind::ContextLength));
    assert!(error.result.compactions.is_empty());

    // Switched off, the error ends the run as well.
    let router = Router::new(
        ScriptedClient::new().fail(too_long()),
        summaries(1, 10, Usage::default()),
    );
    let policy = ContextPolicy {
        enabled: false,
        ..ContextPolicy::default()
    };
    let error = agent(&router)
        .context_policy(policy)
        .build()
        .run("And now?")
        .history(history(6, 100))
        .await
        .unwrap_err();
    assert_eq!(router.requests().len(), 1);
    assert!(error.result.compactions.is_empty());
}

#[tokio::test]
async fn text_protocol_turns_keep_their_results_and_results_are_elided_in_their_form() {
    let text_only = Capabilities {
        native_tools: false,
        ..Capabilities::default()
    };
    let router = Router::new(
        ScriptedClient::new()
            .with_capabilities(text_only)
            .fail(LlmError::new(LlmErrorKind::ContextLength, "too long"))
            .respond(response::text("done")),
        summaries(1, 10, Usage::default()),
    );
    let history: Vec<Message> = (1..=6)
        .flat_map(|turn| {
            [
                Message::user(format!("Question {turn}")),
                Message::assistant(format!(
                    "<tool_call>{{\"name\": \"lookup\", \"arguments\": {{\"city\": {turn}}}}}</tool_call>"
                )),
                Message::user(format!(
                    "<tool_response name=\"lookup\">\n{}\n</tool_response>",
                    "t".repeat(RESULT_BYTES)
                )),
                Message::assistant(format!("Answer {turn}")),
            ]
        })
        .collect();
    let result = agent(&router).build().run("And now?").history(history).await.unwrap();
    assert_eq!(result.response, "done");
    let requests = router.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[0].tools.is_empty(),
        "the text protocol sends no tool definitions"
    );
    let summarised = summarised_text(&requests[1]);
    assert!(summarised.contains("[user] Question 3"));
    assert!(!summarised.contains("Question 4"));
    // The results of turns 1-3 were elided before the summary was written.
    assert_eq!(summarised.matches("[tool result elided: 3047 bytes]").count(), 3);
    let retried = &requests[2].messages;
    assert_eq!(
        retried[1],
        Message::user("Question 4"),
        "a results message starts no turn"
    );
    assert!(matches!(&retried[2], Message::Assistant(reply) if reply.content.starts_with("<tool_call>")));
    assert_eq!(
        retried[3],
        Message::user("<tool_response>\n[tool result elided: 3047 bytes]\n</tool_response>")
    );
    let [record] = result.compactions.as_slice() else {
        panic!("one compaction: {:?}", result.compactions);
    };
    assert_eq!((record.replaced_messages, record.elided_results), (12, 6));
}
