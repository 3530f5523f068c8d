//! `agent.run(prompt)` and `agent.resume(state)`: the one way to run, with
//! its chained settings (history, context, cancellation, options, session,
//! checkpoints, whole replies) awaited or streamed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{
    AgentEvent, CancellationToken, Conversation, ConversationMeta, ConversationStore, Message, RunEnd, StoreError,
    ToolContext, TurnMeta,
};
use agent_runner::{Agent, RunCheckpoints, RunConfig, RunState, Session};
use agent_store::InMemoryStore;
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::json;

fn calculator() -> Arc<TestTools> {
    Arc::new(TestTools::new("math").with(TestTool::new("calculator", ToolBehaviour::Reply("4".into()))))
}

async fn finished(
    mut events: impl futures::Stream<Item = AgentEvent> + Unpin,
) -> (Vec<AgentEvent>, Box<agent_core::AgentRunResult>) {
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        if let AgentEvent::RunFinished { result } = event {
            return (seen, result);
        }
        seen.push(event);
    }
    panic!("the stream ended without RunFinished: {seen:?}");
}

#[tokio::test]
async fn the_builder_takes_a_client_by_value_and_awaiting_a_run_gives_its_result() {
    let agent = Agent::builder(ScriptedClient::new().respond(response::text("Hello!"))).build();
    let result = agent.run("Hi").await.expect("a run");
    assert_eq!(result.response, "Hello!");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.messages.len(), 2);
}

#[tokio::test]
async fn history_and_context_reach_the_model_and_the_tools() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([("calculator", json!({"expression": "2+2"}))]))
            .respond(response::text("4")),
    );
    let agent = Agent::builder(client.clone()).tools_from(calculator()).build();
    let history = vec![Message::user("I like sums."), Message::assistant("Noted.")];
    let context = ToolContext::new().with_user("ada");
    let result = agent
        .run("What is 2+2?")
        .history(history)
        .context(context)
        .await
        .expect("a run");
    assert_eq!(result.response, "4");
    let first = &client.requests()[0];
    assert_eq!(first.messages.len(), 3, "the history, then the prompt");
    assert_eq!(first.messages[2], Message::user("What is 2+2?"));
}

#[tokio::test]
async fn options_replace_the_agents_policies_for_one_run() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("calculator", json!({"expression": "1"}))]))
        .respond(response::tool_calls([("calculator", json!({"expression": "2"}))]))
        .respond(response::text("forced"));
    let agent = Agent::builder(client)
        .tools_from(calculator())
        .max_iterations(10)
        .build();
    let options = RunConfig {
        max_iterations: 1,
        ..agent.config().clone()
    };
    let result = agent.run("Count").options(options).await.expect("a run");
    assert_eq!(result.stop_reason, RunEnd::MaxIterations);
    assert_eq!(agent.config().max_iterations, 10, "the agent's own policy is unchanged");
}

#[tokio::test]
async fn a_cancel_token_stops_the_run_and_keeps_what_it_did() {
    let client = ScriptedClient::new().respond_after(Duration::from_secs(10), response::text("late"));
    let agent = Agent::builder(client).build();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let result = agent
        .run("Slow?")
        .cancel_token(cancel)
        .await
        .expect("a cancelled run is a result");
    assert_eq!(result.stop_reason, RunEnd::Cancelled);
    assert_eq!(result.messages[0], Message::user("Slow?"));
}

#[tokio::test]
async fn a_streamed_run_sends_text_as_it_comes_and_whole_replies_send_none() {
    let agent = Agent::builder(
        ScriptedClient::new()
            .respond(response::text("Streamed."))
            .respond(response::text("Whole.")),
    )
    .build();
    let (events, result) = finished(agent.run("Hi").stream()).await;
    assert_eq!(result.response, "Streamed.");
    assert!(events.iter().any(|event| matches!(event, AgentEvent::TextDelta { .. })));

    let (events, result) = finished(agent.run("Again").whole_replies().stream()).await;
    assert_eq!(result.response, "Whole.");
    assert!(
        !events.iter().any(|event| matches!(event, AgentEvent::TextDelta { .. })),
        "{events:?}"
    );
}

#[tokio::test]
async fn resume_drives_a_state_to_its_end_with_checkpoints() {
    #[derive(Default)]
    struct Counting(AtomicUsize);
    #[async_trait]
    impl RunCheckpoints for Counting {
        async fn save(&self, _state: &RunState) -> Result<(), StoreError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("calculator", json!({"expression": "2+2"}))]))
        .respond(response::text("4"));
    let agent = Agent::builder(client).tools_from(calculator()).build();
    let state = agent.start(Vec::new(), "2+2?");
    let checkpoints = Arc::new(Counting::default());
    let result = agent
        .resume(state)
        .checkpoints(checkpoints.clone())
        .await
        .expect("a run");
    assert_eq!(result.response, "4");
    assert!(checkpoints.0.load(Ordering::SeqCst) >= 2, "saved after the steps");
}

#[tokio::test]
async fn a_session_continues_the_stored_conversation_and_stores_the_turn() {
    let store: Arc<dyn ConversationStore> = Arc::new(InMemoryStore::new());
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::text("Hello, Ada."))
            .respond(response::text("You are Ada.")),
    );
    let agent = Agent::builder(client.clone()).build();
    let session = Session::new(store.clone(), "ada");
    agent
        .run("I am Ada.")
        .session(session.clone())
        .await
        .expect("the first turn");
    let (_, result) = finished(agent.run("Who am I?").session(session).stream()).await;
    assert_eq!(result.response, "You are Ada.");
    let second = &client.requests()[1];
    assert_eq!(
        second.messages.len(),
        3,
        "the stored turn, then the prompt: {:?}",
        second.messages
    );
    let stored = store.load("ada").await.expect("load").expect("the conversation");
    assert_eq!(stored.messages.len(), 4, "both turns are stored");
    assert_eq!(stored.meta.user_turns, 2);
    assert!(!stored.meta.has_checkpoint, "a stored turn ends its checkpoint");
}

/// A store whose appends fail.
struct FullDisk(InMemoryStore);

#[async_trait]
impl ConversationStore for FullDisk {
    async fn create(&self, name: &str) -> Result<ConversationMeta, StoreError> {
        self.0.create(name).await
    }
    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        self.0.load(name).await
    }
    async fn transcript(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        self.0.transcript(name).await
    }
    async fn append(&self, _: &str, _: &[Message], _: &TurnMeta) -> Result<ConversationMeta, StoreError> {
        Err(StoreError::backend("disk full"))
    }
    async fn compact(&self, name: &str, replaced: usize, summary: &str) -> Result<ConversationMeta, StoreError> {
        self.0.compact(name, replaced, summary).await
    }
    async fn list(&self) -> Result<Vec<ConversationMeta>, StoreError> {
        self.0.list().await
    }
    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        self.0.delete(name).await
    }
    async fn import(&self, conversation: &Conversation) -> Result<ConversationMeta, StoreError> {
        self.0.import(conversation).await
    }
    async fn save_checkpoint(&self, name: &str, checkpoint: &serde_json::Value) -> Result<(), StoreError> {
        self.0.save_checkpoint(name, checkpoint).await
    }
    async fn checkpoint(&self, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
        self.0.checkpoint(name).await
    }
    async fn clear_checkpoint(&self, name: &str) -> Result<(), StoreError> {
        self.0.clear_checkpoint(name).await
    }
}

#[tokio::test]
async fn a_turn_the_session_cannot_store_is_an_error_that_keeps_the_run() {
    let store: Arc<dyn ConversationStore> = Arc::new(FullDisk(InMemoryStore::new()));
    let agent = Agent::builder(
        ScriptedClient::new()
            .respond(response::text("Kept."))
            .respond(response::text("Kept again.")),
    )
    .build();
    let error = agent
        .run("Hi")
        .session(Session::new(store.clone(), "full"))
        .await
        .expect_err("the turn was not stored");
    assert!(error.store_error.is_some());
    assert_eq!(error.result.response, "Kept.", "the run's record is whole");
    assert!(error.to_string().contains("could not be stored"), "{error}");

    let (events, result) = finished(agent.run("Hi").session(Session::new(store, "full")).stream()).await;
    assert_eq!(result.response, "Kept again.");
    assert!(
        events
            .iter()
            .any(|event| matches!(event, AgentEvent::Error { message } if message.contains("disk full"))),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_session_with_a_bad_name_fails_before_the_model_is_asked() {
    let client = Arc::new(ScriptedClient::new().respond(response::text("never")));
    let agent = Agent::builder(client.clone()).build();
    let store: Arc<dyn ConversationStore> = Arc::new(InMemoryStore::new());
    let error = agent
        .run("Hi")
        .session(Session::new(store, "../etc"))
        .await
        .expect_err("a bad name");
    assert!(error.store_error.is_some());
    assert_eq!(error.result.stop_reason, RunEnd::Error);
    assert!(error.to_string().contains("could not be loaded"), "{error}");
    assert!(client.requests().is_empty());
}
