//! Saving a run as it goes ([`RunCheckpoints`]) and resuming it: the state
//! is saved before the first call, after every step and after every tool
//! call that finishes; a saved state resumed in a new agent does not run
//! the calls that had finished, and an interrupted batch keeps their results.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{Message, RunEnd, StoreError, ToolContext};
use agent_runner::{Agent, RunCheckpoints, RunState};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use serde_json::json;

/// Keeps every saved state, as JSON (as a store would).
#[derive(Default)]
struct Recorded(Mutex<Vec<serde_json::Value>>);

#[async_trait::async_trait]
impl RunCheckpoints for Recorded {
    async fn save(&self, state: &RunState) -> Result<(), StoreError> {
        let value = serde_json::to_value(state).map_err(StoreError::backend)?;
        self.0.lock().unwrap().push(value);
        Ok(())
    }
}

impl Recorded {
    fn states(&self) -> Vec<RunState> {
        let saved = self.0.lock().unwrap().clone();
        saved
            .into_iter()
            .map(|value| serde_json::from_value(value).unwrap())
            .collect()
    }
}

/// `fast` answers at once, `slow` after `slow_delay`; both count their runs.
fn tools(slow_delay: Duration) -> (Arc<agent_tools::ToolBox>, TestTool, TestTool) {
    let fast = TestTool::new("fast", ToolBehaviour::Reply("fast result".into()));
    let slow = TestTool::new("slow", ToolBehaviour::Reply("slow result".into())).with_delay(slow_delay);
    let registry = agent_tools::ToolBox::new();
    let provider = TestTools::new("demo").with(fast.clone()).with(slow.clone());
    registry.register(Arc::new(provider), true).unwrap();
    (Arc::new(registry), fast, slow)
}

fn script() -> ScriptedClient {
    ScriptedClient::new()
        .respond(response::tool_calls([("fast", json!({})), ("slow", json!({}))]))
        .respond(response::text("Both done."))
}

fn calls(tool: &TestTool) -> usize {
    tool.call_counter().load(std::sync::atomic::Ordering::SeqCst)
}

#[tokio::test]
async fn the_state_is_saved_before_the_first_call_after_every_step_and_every_finished_tool() {
    let (registry, _, _) = tools(Duration::from_millis(20));
    let agent = Agent::builder(Arc::new(script())).tools(registry).build();
    let saved = Arc::new(Recorded::default());
    let result = agent
        .resume(agent.start(Vec::new(), "go"))
        .checkpoints(saved.clone())
        .await
        .unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);

    let states = saved.states();
    let summary: Vec<(u32, bool, bool)> = states
        .iter()
        .map(|state| {
            (
                state.iteration(),
                state.finished_tool_outcome(0).is_some(),
                state.finished_tool_outcome(1).is_some(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (0, false, false), // before the first call
            (1, false, false), // the model asked for the tools
            (1, true, false),  // `fast` finished
            (1, true, true),   // `slow` finished
            (1, false, false), // the batch is in the history: the next call is due
        ],
        "the final state is not saved: the caller stores the result"
    );
    assert!(states.iter().all(|state| !state.is_finished()));
}

#[tokio::test]
async fn a_run_saved_in_the_middle_of_a_batch_resumes_without_running_finished_calls() {
    // The first process: `slow` never finishes; it dies after `fast` did.
    let (registry, fast, slow) = tools(Duration::from_secs(3600));
    let client = script();
    let agent = Agent::builder(Arc::new(client)).tools(registry).build();
    let saved = Arc::new(Recorded::default());
    let cancel = agent_core::CancellationToken::new();
    let context = ToolContext::new().with_cancel(cancel.clone());
    let run = agent
        .resume(agent.start(Vec::new(), "go"))
        .context(context.clone())
        .checkpoints(saved.clone());
    tokio::select! {
        _ = run => panic!("the slow tool cannot finish"),
        () = async {
            while !saved.states().iter().any(|state| state.finished_tool_outcome(0).is_some()) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } => {}
    }
    assert_eq!((calls(&fast), calls(&slow)), (1, 1));
    let last = saved.states().pop().unwrap();
    assert!(last.finished_tool_outcome(1).is_none());

    // The second process: a new agent with new tools resumes the saved state.
    let (registry, fast_again, slow_again) = tools(Duration::ZERO);
    let client = Arc::new(ScriptedClient::new().respond(response::text("Both done.")));
    let agent = Agent::builder(client.clone()).tools(registry).build();
    let result = agent.resume(last).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "Both done.");
    assert_eq!(calls(&fast_again), 0, "the finished call is not run again");
    assert_eq!(calls(&slow_again), 1);
    let results: Vec<&str> = result.tool_calls.iter().map(|call| call.result.as_str()).collect();
    assert_eq!(results, ["fast result", "slow result"]);
    let sent = &client.requests()[0].messages;
    let tool_messages: Vec<&Message> = sent.iter().filter(|m| matches!(m, Message::Tool(_))).collect();
    assert_eq!(tool_messages.len(), 2, "both results reach the model: {sent:?}");
}

#[tokio::test]
async fn a_cancelled_batch_keeps_the_results_of_the_calls_that_finished() {
    let (registry, _, _) = tools(Duration::from_secs(3600));
    let agent = Agent::builder(Arc::new(script())).tools(registry).build();
    let saved = Arc::new(Recorded::default());
    let cancel = agent_core::CancellationToken::new();
    let context = ToolContext::new().with_cancel(cancel.clone());
    let watcher = {
        let saved = saved.clone();
        tokio::spawn(async move {
            while !saved
                .states()
                .iter()
                .any(|state| state.finished_tool_outcome(0).is_some())
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            cancel.cancel();
        })
    };
    let result = agent
        .resume(agent.start(Vec::new(), "go"))
        .context(context.clone())
        .checkpoints(saved.clone())
        .await
        .unwrap();
    watcher.await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Cancelled);
    assert_eq!(result.tool_calls[0].result, "fast result");
    assert!(!result.tool_calls[0].is_error);
    assert!(result.tool_calls[1].is_error, "the unfinished call is interrupted");
}

#[tokio::test]
async fn an_outcome_for_a_call_not_asked_for_is_refused() {
    let (registry, _, _) = tools(Duration::ZERO);
    let agent = Agent::builder(Arc::new(script())).tools(registry).build();
    let mut state = agent.start(Vec::new(), "go");
    let outcome = agent_runner::ToolOutcome {
        content: "x".into(),
        is_error: false,
        duration: Duration::ZERO,
        cached: false,
        delegated_usage: None,
        attachments: Vec::new(),
    };
    assert!(
        state.on_tool_outcome(0, outcome.clone()).is_err(),
        "no tools were asked for yet"
    );
    state
        .on_model_response(
            response::tool_calls([("fast", json!({})), ("slow", json!({}))]),
            Duration::ZERO,
        )
        .unwrap();
    let error = state
        .on_tool_outcome(2, outcome.clone())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("an outcome for a call it did not ask for"), "{error}");
    state.on_tool_outcome(1, outcome).unwrap();
    assert_eq!(state.finished_tool_outcome(1).map(|o| o.content.as_str()), Some("x"));
    assert!(state.finished_tool_outcome(0).is_none());
}
