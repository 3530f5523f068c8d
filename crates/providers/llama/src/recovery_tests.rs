//! The engine survives its own failures: a panic fails one request, and a
//! thread that ended is started again. Each test uses a context size of its
//! own, so it has an engine no other test shares.

use agent_core::{CancellationToken, ChatRequest, LlmClient, Message};
use tokio::sync::mpsc;

use crate::engine::{Generated, Job};
use crate::sampling::tests::model_is_fetched;
use crate::{LlamaClient, LlamaConfig};

fn client_with_own_engine(context_size: u32) -> Option<LlamaClient> {
    if !model_is_fetched() {
        return None;
    }
    let config = LlamaConfig {
        context_size,
        max_tokens: 8,
        ..LlamaConfig::default()
    };
    Some(LlamaClient::load(config).expect("the model loads"))
}

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::user("Say hello.")])
}

#[tokio::test]
async fn a_panic_during_a_request_fails_that_request_and_the_next_one_runs() {
    let Some(client) = client_with_own_engine(1536) else {
        return;
    };
    let (out, mut generated) = mpsc::unbounded_channel();
    let job = Job {
        prompt: "Hello".to_owned(),
        max_tokens: 4,
        temperature: 0.0,
        seed: 0,
        stop: Vec::new(),
        suppress_tool_calls: false,
        grammar: None,
        grammar_use: crate::engine::GrammarUse::Lazy,
        call_limits: crate::echo::CallLimits::default(),
        cancel: CancellationToken::new(),
        out,
    };
    client.engine().expect("engine").submit_panicking(job).expect("queued");
    let Some(Generated::Failed(error)) = generated.recv().await else {
        panic!("the panicking job did not end with a failure");
    };
    assert!(error.message.contains("failed during this request"), "{error}");
    let reply = client.complete(&hello(), &CancellationToken::new()).await;
    assert!(reply.is_ok(), "the engine is still usable: {reply:?}");
}

#[tokio::test]
async fn an_engine_whose_thread_ended_is_started_again_by_the_next_request() {
    let Some(client) = client_with_own_engine(1280) else {
        return;
    };
    let first = client.engine().expect("engine");
    first.crash().expect("sent");
    for _ in 0..500 {
        if first.has_stopped() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(first.has_stopped(), "the thread did not end");
    let reply = client.complete(&hello(), &CancellationToken::new()).await;
    assert!(reply.is_ok(), "the next request restarts the engine: {reply:?}");
    let second = client.engine().expect("engine");
    assert!(!std::sync::Arc::ptr_eq(&first, &second), "a new engine");
    assert!(!second.has_stopped());
}
