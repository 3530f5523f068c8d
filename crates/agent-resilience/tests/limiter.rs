//! The outbound rate limiter in front of a real OpenAI client and a
//! wiremock server, asserted on counts and order: calls over the limit
//! wait their turn and reach the server in the order they were made; a
//! wait over the maximum fails at once, and a fallback chain moves on.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::{CancellationToken, LlmClient, LlmErrorKind};
use agent_resilience::{FallbackClient, LimiterCounts, RateLimitConfig, RateLimiter, ResilientClient};
use common::*;
use wiremock::MockServer;

const OPENAI: &str = "/v1/chat/completions";

fn limiter(requests_per_minute: u32, max_wait_secs: f64) -> Arc<RateLimiter> {
    let config = RateLimitConfig {
        requests_per_minute: Some(requests_per_minute),
        burst: Some(1),
        max_wait_secs,
        ..RateLimitConfig::default()
    };
    Arc::new(RateLimiter::new("openai", &config).unwrap())
}

fn user_text(body: &serde_json::Value) -> String {
    body["messages"][0]["content"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn calls_over_the_limit_wait_their_turn_in_order() {
    let server = MockServer::start().await;
    answer(&server, OPENAI, openai_answer("ok")).await;
    // One request every 600 ms, none saved up: each call waits for its turn.
    let limiter = limiter(100, 10.0);
    let client = ResilientClient::new(openai(&server)).with_rate_limiter(Arc::clone(&limiter));

    for n in 0..4 {
        let reply = client
            .complete(&ask(&format!("call {n}")), &CancellationToken::new())
            .await;
        assert_eq!(reply.unwrap().message.content, "ok");
    }

    assert_eq!(
        limiter.counts(),
        LimiterCounts {
            immediate: 1,
            delayed: 3,
            refused: 0
        }
    );
    let order: Vec<String> = bodies(&server).await.iter().map(user_text).collect();
    assert_eq!(order, ["call 0", "call 1", "call 2", "call 3"]);
}

#[tokio::test]
async fn concurrent_calls_are_let_through_one_at_a_time() {
    let server = MockServer::start().await;
    answer(&server, OPENAI, openai_answer("ok")).await;
    let limiter = limiter(100, 10.0);
    let client = ResilientClient::new(openai(&server)).with_rate_limiter(Arc::clone(&limiter));

    let calls = (0..3).map(|n| {
        let client = client.clone();
        async move {
            client
                .complete(&ask(&format!("call {n}")), &CancellationToken::new())
                .await
        }
    });
    let replies = futures::future::join_all(calls).await;

    assert!(replies.iter().all(Result::is_ok), "{replies:?}");
    assert_eq!((limiter.counts().immediate, limiter.counts().delayed), (1, 2));
    assert_eq!(bodies(&server).await.len(), 3);
}

#[tokio::test]
async fn a_wait_over_the_maximum_fails_at_once_and_sends_nothing() {
    let server = MockServer::start().await;
    answer(&server, OPENAI, openai_answer("ok")).await;
    // One request a second; no waiting allowed.
    let limiter = limiter(60, 0.0);
    let client = ResilientClient::new(openai(&server)).with_rate_limiter(Arc::clone(&limiter));

    assert!(client.complete(&ask("first"), &CancellationToken::new()).await.is_ok());
    let error = client
        .complete(&ask("second"), &CancellationToken::new())
        .await
        .err()
        .unwrap();

    assert_eq!(error.kind, LlmErrorKind::RateLimited, "{error}");
    assert!(
        error.message.contains("local rate limit") && error.message.contains("max_wait_secs"),
        "{error}"
    );
    assert!(error.retry_after().is_some_and(|wait| !wait.is_zero()));
    assert_eq!(limiter.counts().refused, 1);
    let order: Vec<String> = bodies(&server).await.iter().map(user_text).collect();
    assert_eq!(order, ["first"]);
}

#[tokio::test]
async fn a_chain_moves_on_when_the_local_limit_refuses() {
    let (first, second) = (MockServer::start().await, MockServer::start().await);
    answer(&first, OPENAI, openai_answer("from openai")).await;
    answer(&second, "/v1/messages", anthropic_answer("from anthropic")).await;
    let limited: Arc<dyn LlmClient> =
        Arc::new(ResilientClient::new(openai(&first)).with_rate_limiter(limiter(60, 0.0)));
    let chain = FallbackClient::new([limited, anthropic(&second)]).unwrap();

    let first_reply = chain.complete(&ask("one"), &CancellationToken::new()).await.unwrap();
    let second_reply = chain.complete(&ask("two"), &CancellationToken::new()).await.unwrap();

    assert_eq!(first_reply.message.content, "from openai");
    assert_eq!(second_reply.message.content, "from anthropic");
    let route = second_reply.route.unwrap();
    assert_eq!(route.failed[0].error.kind, LlmErrorKind::RateLimited);
}
