//! A fallback chain of real provider clients against wiremock servers: it
//! moves on after a 529 (Anthropic) and a 503 (OpenAI) that came before any
//! output, whole and streamed, and never once text has streamed; the
//! record says who answered and who failed; reasoning signatures stay with
//! the provider that wrote them.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::{CancellationToken, LlmClient, LlmErrorKind};
use agent_resilience::FallbackClient;
use agent_runner::Agent;
use common::*;
use serde_json::json;
use wiremock::{MockServer, ResponseTemplate};

const ANTHROPIC: &str = "/v1/messages";
const OPENAI: &str = "/v1/chat/completions";

fn chain(clients: [Arc<dyn LlmClient>; 2]) -> FallbackClient {
    FallbackClient::new(clients).unwrap()
}

#[tokio::test]
async fn a_529_before_any_output_moves_the_call_to_the_next_provider() {
    let (first, second) = (MockServer::start().await, MockServer::start().await);
    answer(
        &first,
        ANTHROPIC,
        ResponseTemplate::new(529).set_body_json(anthropic_overloaded()),
    )
    .await;
    answer(&second, OPENAI, openai_answer("from openai")).await;
    let chain = chain([anthropic(&first), openai(&second)]);

    let reply = chain.complete(&ask("hi"), &CancellationToken::new()).await.unwrap();

    assert_eq!(reply.message.content, "from openai");
    let route = reply.route.unwrap();
    assert_eq!(
        (route.provider.as_str(), route.model.as_str()),
        ("openai", "gpt-4o-mini")
    );
    let [failed] = route.failed.as_slice() else {
        panic!("one failed attempt: {route:?}")
    };
    assert_eq!(failed.provider, "anthropic");
    assert_eq!(
        (failed.error.kind, failed.error.status),
        (LlmErrorKind::Overloaded, Some(529))
    );
    assert_eq!((bodies(&first).await.len(), bodies(&second).await.len()), (1, 1));
}

#[tokio::test]
async fn a_503_before_any_output_moves_a_streamed_call_to_the_next_provider() {
    let (first, second) = (MockServer::start().await, MockServer::start().await);
    answer(&first, OPENAI, openai_error(503)).await;
    let mut events = anthropic_stream_head("from anthropic");
    events.extend([
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ]);
    answer(&second, ANTHROPIC, anthropic_events(&events)).await;
    let chain = chain([openai(&first), anthropic(&second)]);

    let reply = streamed(&chain, &ask("hi")).await.unwrap();

    assert_eq!(reply.message.content, "from anthropic");
    let route = reply.route.unwrap();
    assert_eq!(route.provider, "anthropic");
    assert_eq!(route.failed.len(), 1, "{route:?}");
    assert_eq!(route.failed[0].provider, "openai");
    assert_eq!(
        (route.failed[0].error.kind, route.failed[0].error.status),
        (LlmErrorKind::Overloaded, Some(503))
    );
}

#[tokio::test]
async fn an_error_after_streamed_text_is_the_callers_and_no_other_provider_is_asked() {
    let (first, second) = (MockServer::start().await, MockServer::start().await);
    // Retryable, but it comes after "Hel" reached the caller.
    let mut events = anthropic_stream_head("Hel");
    events.push(anthropic_overloaded());
    answer(&first, ANTHROPIC, anthropic_events(&events)).await;
    answer(&second, OPENAI, openai_stream("from openai")).await;
    let chain = chain([anthropic(&first), openai(&second)]);

    let (seen, error) = streamed(&chain, &ask("hi")).await.err().unwrap();

    assert_eq!(seen, "Hel");
    assert_eq!(error.kind, LlmErrorKind::Overloaded, "{error}");
    assert!(
        bodies(&second).await.is_empty(),
        "the second provider was asked mid-reply"
    );
}

#[tokio::test]
async fn an_error_no_provider_can_help_with_ends_the_call_at_once() {
    let (first, second) = (MockServer::start().await, MockServer::start().await);
    answer(
        &first,
        OPENAI,
        ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "bad key"}})),
    )
    .await;
    answer(&second, ANTHROPIC, anthropic_answer("never")).await;
    let chain = chain([openai(&first), anthropic(&second)]);

    let error = chain
        .complete(&ask("hi"), &CancellationToken::new())
        .await
        .err()
        .unwrap();

    assert_eq!(error.kind, LlmErrorKind::Auth, "{error}");
    assert!(bodies(&second).await.is_empty());
}

#[tokio::test]
async fn when_every_provider_fails_the_last_error_names_the_ones_before() {
    let (first, second) = (MockServer::start().await, MockServer::start().await);
    answer(
        &first,
        ANTHROPIC,
        ResponseTemplate::new(529).set_body_json(anthropic_overloaded()),
    )
    .await;
    answer(&second, OPENAI, openai_error(500)).await;
    let chain = chain([anthropic(&first), openai(&second)]);

    let error = chain
        .complete(&ask("hi"), &CancellationToken::new())
        .await
        .err()
        .unwrap();

    assert_eq!((error.kind, error.status), (LlmErrorKind::Server, Some(500)));
    assert!(
        error
            .message
            .contains("tried before it: anthropic: provider overloaded (HTTP 529)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_run_records_each_attempt_and_keeps_signatures_with_their_provider() {
    let (gpt, claude) = (MockServer::start().await, MockServer::start().await);
    let agent = Agent::builder(chain([openai(&gpt), anthropic(&claude)])).build();

    // Turn 1: OpenAI is overloaded; Anthropic answers, with a signed thinking block.
    answer(&gpt, OPENAI, openai_error(503)).await;
    answer(
        &claude,
        ANTHROPIC,
        anthropic_message(&json!([
            {"type": "thinking", "thinking": "Short answer.", "signature": "sig-from-anthropic"},
            {"type": "text", "text": "Hello."}
        ])),
    )
    .await;
    let first = agent.run("hi").await.unwrap();
    let route = first.model_calls[0].route.as_ref().unwrap();
    assert_eq!(route.provider, "anthropic");
    assert_eq!(route.failed[0].provider, "openai");
    assert_eq!(route.failed[0].error.status, Some(503));

    // Turn 2: OpenAI is back: it gets the history, and no signature.
    gpt.reset().await;
    answer(&gpt, OPENAI, openai_answer("Hi again.")).await;
    let second = agent.run("again").history(first.messages).await.unwrap();
    assert_eq!(second.response, "Hi again.");
    assert_eq!(second.model_calls[0].route.as_ref().unwrap().provider, "openai");
    let sent_to_openai = bodies(&gpt).await[0].to_string();
    assert!(
        sent_to_openai.contains("Hello."),
        "the history went along: {sent_to_openai}"
    );
    assert!(!sent_to_openai.contains("sig-from-anthropic"), "{sent_to_openai}");

    // Turn 3: OpenAI fails again; Anthropic gets its own block back.
    gpt.reset().await;
    answer(&gpt, OPENAI, openai_error(503)).await;
    claude.reset().await;
    answer(&claude, ANTHROPIC, anthropic_answer("Back.")).await;
    let third = agent.run("and now").history(second.messages).await.unwrap();
    assert_eq!(third.response, "Back.");
    let sent_to_anthropic = bodies(&claude).await[0].to_string();
    assert!(sent_to_anthropic.contains("sig-from-anthropic"), "{sent_to_anthropic}");
}
