//! Approval by the call's arguments (a predicate, a configured condition)
//! and approval with edited arguments: the call that waits, the call that
//! runs, and what the record and the history show.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agent_core::{ApprovalDecision, Message, RunEnd, ToolApprover, ToolCall, ToolContext};
use agent_runner::{Agent, RunState};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use agent_tools::ApprovalCondition;
use async_trait::async_trait;
use serde_json::{Value, json};

/// `transfer` echoes its arguments; it needs approval above 100.
fn bank(condition: bool) -> (Arc<agent_tools::ToolBox>, TestTool) {
    let transfer = TestTool::new("transfer", ToolBehaviour::Echo);
    let builder = agent_tools::ToolBox::builder().provider(Arc::new(TestTools::new("bank").with(transfer.clone())));
    let builder = if condition {
        builder.require_approval_when("transfer", "amount > 100".parse::<ApprovalCondition>().unwrap())
    } else {
        builder.require_approval_if("transfer", |args| {
            args["amount"].as_f64().is_none_or(|amount| amount > 100.0)
        })
    };
    (Arc::new(builder.build().unwrap()), transfer)
}

fn calls(tool: &TestTool) -> usize {
    tool.call_counter().load(std::sync::atomic::Ordering::SeqCst)
}

fn script(amount: u32) -> ScriptedClient {
    ScriptedClient::new()
        .respond(response::tool_calls([(
            "transfer",
            json!({"to": "Bob", "amount": amount}),
        )]))
        .respond(response::text("Sent."))
}

fn saved(state: &RunState) -> RunState {
    serde_json::from_value(serde_json::to_value(state).unwrap()).unwrap()
}

#[tokio::test]
async fn a_predicate_lets_small_calls_run_and_holds_large_ones() {
    for condition in [false, true] {
        let (registry, transfer) = bank(condition);
        let agent = Agent::builder(Arc::new(script(20))).tools(registry).build();
        let result = agent.run("send Bob 20").await.unwrap();
        assert_eq!(result.stop_reason, RunEnd::Completed, "condition: {condition}");
        assert_eq!(calls(&transfer), 1);

        let (registry, transfer) = bank(condition);
        let agent = Agent::builder(Arc::new(script(250))).tools(registry).build();
        let result = agent.run("send Bob 250").await.unwrap();
        assert_eq!(result.stop_reason, RunEnd::AwaitingApproval, "condition: {condition}");
        assert_eq!(result.pending_approvals[0].arguments["amount"], 250);
        assert_eq!(calls(&transfer), 0);
    }
}

#[tokio::test]
async fn a_saved_state_read_back_is_held_to_the_predicate_of_the_resuming_agent() {
    let (registry, _) = bank(true);
    let client = script(250);
    let agent = Agent::builder(Arc::new(client.clone())).tools(registry).build();
    let mut state = agent.start(Vec::new(), "send Bob 250");
    let cancel = agent_core::CancellationToken::new();
    let agent_runner::Step::CallModel(request) = state.next_step() else {
        panic!("no model call first");
    };
    let reply = agent_core::LlmClient::complete(&client, request, &cancel)
        .await
        .unwrap();
    state.on_model_response(reply, std::time::Duration::ZERO).unwrap();
    assert!(state.is_awaiting_approval());

    // Read back and restored by another agent: the large call still waits.
    let (registry, transfer) = bank(true);
    let agent = Agent::builder(Arc::new(client.clone())).tools(registry).build();
    let restored = agent.restore(saved(&state)).unwrap();
    assert!(restored.is_awaiting_approval());
    assert_eq!(restored.pending_approvals()[0].arguments["amount"], 250);
    assert_eq!(calls(&transfer), 0);
}

#[tokio::test]
async fn an_approval_with_edited_arguments_runs_them_and_shows_them_everywhere() {
    let (registry, transfer) = bank(false);
    let client = script(250);
    let agent = Agent::builder(Arc::new(client.clone())).tools(registry).build();
    let paused = agent.run("send Bob 250").await.unwrap();
    assert_eq!(paused.stop_reason, RunEnd::AwaitingApproval);

    // The paused run's state, as a store gives it back.
    let mut state = agent.start(Vec::new(), "send Bob 250");
    let cancel = agent_core::CancellationToken::new();
    let agent_runner::Step::CallModel(request) = state.next_step() else {
        panic!("no model call first");
    };
    let second = script(250);
    let reply = agent_core::LlmClient::complete(&second, request, &cancel)
        .await
        .unwrap();
    state.on_model_response(reply, std::time::Duration::ZERO).unwrap();
    let mut state = agent.restore(saved(&state)).unwrap();
    let id = state.pending_approvals()[0].id.clone();
    state.approve_edited(&id, json!({"to": "Bob", "amount": 90})).unwrap();
    assert!(!state.is_awaiting_approval());

    let agent = Agent::builder(Arc::new(second.clone())).tools(bank(false).0).build();
    let result = agent.resume(state).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    let record = &result.tool_calls[0];
    assert_eq!(record.arguments, json!({"to": "Bob", "amount": 90}));
    let echoed: Value = serde_json::from_str(&record.result).unwrap();
    assert_eq!(echoed, json!({"to": "Bob", "amount": 90}));
    // The model reads that its call ran with the edited arguments.
    let sent = &second.requests()[1];
    let call_in_history = sent
        .messages
        .iter()
        .find_map(|message| match message {
            Message::Assistant(reply) => reply.tool_calls.first().cloned(),
            _ => None,
        })
        .unwrap();
    assert_eq!(call_in_history.arguments, json!({"to": "Bob", "amount": 90}));
    // The first agent's tool never ran.
    assert_eq!(calls(&transfer), 0);
}

/// Approves every call, lowering amounts over 100 to 100.
struct CapAmounts;

#[async_trait]
impl ToolApprover for CapAmounts {
    async fn decide(&self, call: &ToolCall) -> ApprovalDecision {
        let mut arguments = call.arguments.clone();
        arguments["amount"] = json!(100);
        ApprovalDecision::Edit { arguments }
    }
}

#[tokio::test]
async fn an_approver_that_edits_while_the_run_waits_runs_the_edited_call() {
    let (registry, transfer) = bank(true);
    let agent = Agent::builder(Arc::new(script(250))).tools(registry).build();
    let context = ToolContext::new().with_approver(Arc::new(CapAmounts));
    let result = agent.run("send Bob 250").context(context).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(calls(&transfer), 1);
    assert_eq!(result.tool_calls[0].arguments["amount"], 100);
    let echoed: Value = serde_json::from_str(&result.tool_calls[0].result).unwrap();
    assert_eq!(echoed["amount"], 100);
}

#[test]
fn an_edit_decision_round_trips_as_json() {
    let decision = ApprovalDecision::Edit {
        arguments: json!({"amount": 1}),
    };
    let json = serde_json::to_value(&decision).unwrap();
    assert_eq!(json, json!({"decision": "edit", "arguments": {"amount": 1}}));
    assert_eq!(serde_json::from_value::<ApprovalDecision>(json).unwrap(), decision);
}
