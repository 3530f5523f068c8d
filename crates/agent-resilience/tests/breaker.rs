//! A circuit breaker in front of a real OpenAI client and a wiremock
//! server: it opens after failures in a row (calls then fail at once and
//! the server sees none), half-opens after its open time (one probe goes
//! through, a second call meanwhile is refused), closes when the probe
//! succeeds and opens again when it fails.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{CancellationToken, LlmClient, LlmErrorKind};
use agent_resilience::{BreakerConfig, BreakerState, CircuitBreaker, FallbackClient, ResilientClient};
use common::*;
use wiremock::MockServer;

const OPENAI: &str = "/v1/chat/completions";

/// Open after 2 failures in a row, for `open` (real time: the test waits it out).
fn breaker(open: Duration) -> Arc<CircuitBreaker> {
    let config = BreakerConfig {
        consecutive_failures: 2,
        failure_rate: 0.0,
        open_secs: open.as_secs_f64(),
        ..BreakerConfig::default()
    };
    Arc::new(CircuitBreaker::new("openai", config).unwrap())
}

async fn call(client: &dyn LlmClient) -> Result<String, agent_core::LlmError> {
    let reply = client.complete(&ask("hi"), &CancellationToken::new()).await?;
    Ok(reply.message.content)
}

#[tokio::test]
async fn the_breaker_opens_half_opens_and_closes() {
    let server = MockServer::start().await;
    answer(&server, OPENAI, openai_error(500)).await;
    let open = Duration::from_millis(300);
    let breaker = breaker(open);
    let client = ResilientClient::new(openai(&server)).with_breaker(Arc::clone(&breaker));

    for _ in 0..2 {
        assert_eq!(call(&client).await.err().unwrap().kind, LlmErrorKind::Server);
    }
    assert_eq!(breaker.snapshot().state, BreakerState::Open);
    let refused = call(&client).await.err().unwrap();
    assert_eq!(refused.kind, LlmErrorKind::CircuitOpen, "{refused}");
    assert!(refused.retry_after().is_some_and(|wait| wait <= open));
    assert_eq!(
        bodies(&server).await.len(),
        2,
        "an open breaker let a call reach the server"
    );

    // Past the open time the endpoint has recovered, but answers slowly:
    // the probe is in flight while a second call comes.
    tokio::time::sleep(open).await;
    server.reset().await;
    answer(
        &server,
        OPENAI,
        openai_answer("ok").set_delay(Duration::from_millis(200)),
    )
    .await;
    assert_eq!(breaker.snapshot().state, BreakerState::HalfOpen);
    let (probe, second) = tokio::join!(call(&client), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        call(&client).await
    });
    assert_eq!(probe.unwrap(), "ok");
    let second = second.err().unwrap();
    assert_eq!(second.kind, LlmErrorKind::CircuitOpen);
    assert!(second.message.contains("probe call is still in flight"), "{second}");
    assert_eq!(bodies(&server).await.len(), 1, "only the probe reached the server");

    let snapshot = breaker.snapshot();
    assert_eq!((snapshot.state, snapshot.times_opened), (BreakerState::Closed, 1));
    assert_eq!(call(&client).await.unwrap(), "ok");
}

#[tokio::test]
async fn a_failed_probe_opens_the_breaker_again() {
    let server = MockServer::start().await;
    answer(&server, OPENAI, openai_error(503)).await;
    let open = Duration::from_millis(200);
    let breaker = breaker(open);
    let client = ResilientClient::new(openai(&server)).with_breaker(Arc::clone(&breaker));
    for _ in 0..2 {
        let _ = call(&client).await;
    }
    tokio::time::sleep(open).await;

    assert_eq!(
        call(&client).await.err().unwrap().kind,
        LlmErrorKind::Overloaded,
        "the probe"
    );
    let snapshot = breaker.snapshot();
    assert_eq!((snapshot.state, snapshot.times_opened), (BreakerState::Open, 2));
    assert_eq!(call(&client).await.err().unwrap().kind, LlmErrorKind::CircuitOpen);
    assert_eq!(bodies(&server).await.len(), 3);
}

#[tokio::test]
async fn a_streamed_reply_cut_short_counts_as_a_failure() {
    let server = MockServer::start().await;
    // A stream without its stop event or [DONE].
    let cut = wiremock::ResponseTemplate::new(200).set_body_raw(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
        "text/event-stream",
    );
    answer(&server, OPENAI, cut).await;
    let breaker = breaker(Duration::from_secs(60));
    let client = ResilientClient::new(openai(&server)).with_breaker(Arc::clone(&breaker));
    for _ in 0..2 {
        assert!(streamed(&client, &ask("hi")).await.is_err());
    }
    assert_eq!(breaker.snapshot().state, BreakerState::Open);
}

#[tokio::test]
async fn a_chain_skips_a_provider_whose_breaker_is_open() {
    let (first, second) = (MockServer::start().await, MockServer::start().await);
    answer(&first, OPENAI, openai_error(500)).await;
    answer(&second, "/v1/messages", anthropic_answer("from anthropic")).await;
    let breaker = breaker(Duration::from_secs(60));
    let guarded: Arc<dyn LlmClient> = Arc::new(ResilientClient::new(openai(&first)).with_breaker(Arc::clone(&breaker)));
    let chain = FallbackClient::new([guarded, anthropic(&second)]).unwrap();

    for _ in 0..3 {
        let reply = chain.complete(&ask("hi"), &CancellationToken::new()).await.unwrap();
        assert_eq!(reply.message.content, "from anthropic");
    }
    assert_eq!(bodies(&first).await.len(), 2, "the third call skipped the open breaker");
    let reply = chain.complete(&ask("hi"), &CancellationToken::new()).await.unwrap();
    let route = reply.route.unwrap();
    assert_eq!(route.failed[0].error.kind, LlmErrorKind::CircuitOpen);
}
