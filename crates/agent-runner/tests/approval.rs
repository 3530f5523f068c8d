//! Human approval: a run pauses before calls of tools that require it, its
//! saved state is decided (approve / deny) and resumed, possibly by another
//! agent; an approver in the context decides while the run waits; a denied
//! call never runs and the model reads why.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use agent_core::{
    AgentEvent, ApprovalDecision, Message, RunEnd, ToolApprover, ToolCall, ToolContext, ToolRegistry as _,
};
use agent_runner::{Agent, RunState, Step};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use futures::StreamExt;
use serde_json::json;

/// `lookup` runs freely; `book` needs approval (declared on the registry).
fn travel_tools() -> (Arc<agent_tools::ToolBox>, TestTool, TestTool) {
    let lookup = TestTool::new("lookup", ToolBehaviour::Reply("seat 12A is free".into()));
    let book = TestTool::new("book", ToolBehaviour::Reply("booked 12A".into()));
    let registry = agent_tools::ToolBox::builder()
        .provider(Arc::new(
            TestTools::new("travel").with(lookup.clone()).with(book.clone()),
        ))
        .require_approval(["book"])
        .build()
        .unwrap();
    (Arc::new(registry), lookup, book)
}

fn script() -> ScriptedClient {
    ScriptedClient::new()
        .respond(response::tool_calls([
            ("lookup", json!({"seat": "12A"})),
            ("book", json!({"seat": "12A"})),
        ]))
        .respond(response::text("Done."))
}

fn calls(tool: &TestTool) -> usize {
    tool.call_counter().load(std::sync::atomic::Ordering::SeqCst)
}

/// The state as a store keeps it, read back.
fn saved(state: &RunState) -> RunState {
    serde_json::from_value(serde_json::to_value(state).unwrap()).unwrap()
}

/// Steps `state` with `client` until it waits for approval; returns it.
async fn until_paused(agent: &Agent, client: &ScriptedClient) -> RunState {
    let mut state = agent.start(Vec::new(), "book seat 12A");
    let cancel = agent_core::CancellationToken::new();
    loop {
        match state.next_step() {
            Step::CallModel(request) => {
                let reply = agent_core::LlmClient::complete(client, request, &cancel).await.unwrap();
                state.on_model_response(reply, std::time::Duration::ZERO).unwrap();
            }
            Step::AwaitApproval(_) => return state,
            other => panic!("unexpected step {other:?}"),
        }
    }
}

#[tokio::test]
async fn without_an_approver_the_run_pauses_before_any_tool_and_lists_the_waiting_calls() {
    let (registry, lookup, book) = travel_tools();
    let client = Arc::new(script());
    let agent = Agent::builder(client.clone()).tools(registry).build();
    let result = agent.run("book seat 12A").await.unwrap();

    assert_eq!(result.stop_reason, RunEnd::AwaitingApproval);
    assert_eq!(result.stop_reason.as_str(), "awaiting_approval");
    let waiting: Vec<&str> = result.pending_approvals.iter().map(|call| call.name.as_str()).collect();
    assert_eq!(waiting, ["book"]);
    assert_eq!(result.pending_approvals[0].id, "call_2");
    // No tool of the reply ran, not even the one that needs no approval.
    assert_eq!((calls(&lookup), calls(&book)), (0, 0));
    assert_eq!(client.requests().len(), 1);
    // The record is complete and its messages sendable.
    assert_eq!(result.tool_calls.len(), 2);
    assert!(
        result
            .tool_calls
            .iter()
            .all(|call| call.result.contains("paused for the user's approval"))
    );
    assert!(agent_runner::history::is_sendable(&result.messages));
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["stop_reason"], "awaiting_approval");
    assert_eq!(json["pending_approvals"][0]["name"], "book");
}

#[tokio::test]
async fn a_saved_paused_state_approved_in_another_agent_runs_the_batch_once() {
    let (registry, _, _) = travel_tools();
    let client = script();
    let agent = Agent::builder(Arc::new(client.clone())).tools(registry).build();
    let paused = saved(&until_paused(&agent, &client).await);
    assert!(paused.is_awaiting_approval());
    assert_eq!(paused.pending_approvals().len(), 1);

    // Another process: a new registry and agent resume the saved state.
    let (registry, lookup, book) = travel_tools();
    let agent = Agent::builder(Arc::new(client.clone())).tools(registry).build();
    let mut resumed = paused;
    let wrong = resumed.approve("call_9").unwrap_err();
    assert_eq!(wrong.waiting, ["call_2"]);
    assert!(wrong.to_string().contains("call_9"), "{wrong}");
    resumed.approve("call_2").unwrap();
    assert!(!resumed.is_awaiting_approval());
    let result = agent.resume(resumed).await.unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.response, "Done.");
    assert_eq!((calls(&lookup), calls(&book)), (1, 1));
    assert!(result.pending_approvals.is_empty());
    let results: Vec<(&str, bool)> = result
        .tool_calls
        .iter()
        .map(|call| (call.result.as_str(), call.is_error))
        .collect();
    assert_eq!(results, [("seat 12A is free", false), ("booked 12A", false)]);
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_reads_that_the_user_refused_it() {
    let (registry, _, _) = travel_tools();
    let client = script();
    let agent = Agent::builder(Arc::new(client.clone())).tools(registry).build();
    let mut paused = saved(&until_paused(&agent, &client).await);

    let (registry, lookup, book) = travel_tools();
    let agent = Agent::builder(Arc::new(client.clone())).tools(registry).build();
    paused.deny("call_2", Some("too expensive".into())).unwrap();
    let result = agent.resume(paused).await.unwrap();

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!((calls(&lookup), calls(&book)), (1, 0));
    let denied = &result.tool_calls[1];
    assert!(denied.is_error);
    assert!(denied.result.contains("did not approve") && denied.result.contains("too expensive"));
    // The second request carries the denial as the call's error result.
    let requests = client.requests();
    let last = requests.last().unwrap();
    let told = last.messages.iter().any(|message| {
        matches!(message, Message::Tool(result) if result.call_id == "call_2" && result.is_error
            && result.content.contains("did not approve"))
    });
    assert!(told, "{:?}", last.messages);
}

/// Answers from a list, recording what it was asked.
struct Scripted {
    decisions: Mutex<Vec<ApprovalDecision>>,
    asked: Mutex<Vec<ToolCall>>,
}

#[async_trait::async_trait]
impl ToolApprover for Scripted {
    async fn decide(&self, call: &ToolCall) -> ApprovalDecision {
        self.asked.lock().unwrap().push(call.clone());
        let mut decisions = self.decisions.lock().unwrap();
        if decisions.is_empty() {
            ApprovalDecision::deny()
        } else {
            decisions.remove(0)
        }
    }
}

#[tokio::test]
async fn an_approver_in_the_context_decides_while_the_run_waits() {
    for (decision, booked) in [(ApprovalDecision::Approve, 1), (ApprovalDecision::deny(), 0)] {
        let (registry, lookup, book) = travel_tools();
        let agent = Agent::builder(Arc::new(script())).tools(registry).build();
        let approver = Arc::new(Scripted {
            decisions: Mutex::new(vec![decision]),
            asked: Mutex::new(Vec::new()),
        });
        let context = ToolContext::new().with_approver(approver.clone());
        let mut events = Box::pin(agent.run("book seat 12A").context(context).stream());
        let mut seen = Vec::new();
        let mut finished = None;
        while let Some(event) = events.next().await {
            match event {
                AgentEvent::ApprovalRequested { calls, .. } => seen.push(format!("approval:{}", calls[0].name)),
                AgentEvent::ToolStarted { name, .. } => seen.push(format!("started:{name}")),
                AgentEvent::RunFinished { result } => finished = Some(result),
                _ => {}
            }
        }
        let result = finished.unwrap();
        assert_eq!(result.stop_reason, RunEnd::Completed);
        let asked: Vec<String> = approver.asked.lock().unwrap().iter().map(|c| c.name.clone()).collect();
        assert_eq!(asked, ["book"]);
        // Asked before any tool of the reply started.
        assert_eq!(seen[0], "approval:book");
        assert_eq!((calls(&lookup), calls(&book)), (1, booked));
    }
}

#[tokio::test]
async fn a_provider_can_declare_its_tools_need_approval_and_other_runs_are_unchanged() {
    let tools = agent_tools::ToolSet::new("travel", "Booking")
        .tool(agent_tools::TypedTool::new(
            "book",
            "Books a seat",
            |_args: serde_json::Value, _ctx: ToolContext| async { Ok::<_, agent_core::ToolError>("booked") },
        ))
        .require_approval("book");
    let registry = agent_tools::ToolBox::new();
    registry.register(Arc::new(tools), true).unwrap();
    assert!(registry.requires_approval("book"));
    assert!(!registry.requires_approval("lookup"));

    // A registry with no approval rules: the same script runs straight through.
    let plain = agent_tools::ToolBox::new();
    let lookup = TestTool::new("lookup", ToolBehaviour::Reply("free".into()));
    let booking = TestTool::new("book", ToolBehaviour::Reply("booked".into()));
    plain
        .register(
            Arc::new(TestTools::new("travel").with(lookup).with(booking.clone())),
            true,
        )
        .unwrap();
    let agent = Agent::builder(Arc::new(script())).tools(Arc::new(plain)).build();
    let result = agent.run("book").await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(calls(&booking), 1);
}

#[tokio::test]
async fn cancelling_while_the_approver_waits_ends_the_run_cancelled_with_a_sendable_history() {
    struct Never;
    #[async_trait::async_trait]
    impl ToolApprover for Never {
        async fn decide(&self, _call: &ToolCall) -> ApprovalDecision {
            std::future::pending().await
        }
    }
    let (registry, lookup, book) = travel_tools();
    let agent = Agent::builder(Arc::new(script())).tools(registry).build();
    let cancel = agent_core::CancellationToken::new();
    let context = ToolContext::new()
        .with_approver(Arc::new(Never))
        .with_cancel(cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let result = agent.run("book").context(context.clone()).await.unwrap();
    canceller.await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Cancelled);
    assert!(result.pending_approvals.is_empty());
    assert_eq!((calls(&lookup), calls(&book)), (0, 0));
    assert!(agent_runner::history::is_sendable(&result.messages));
}

#[tokio::test]
async fn a_denied_call_does_not_count_against_the_tool_call_budget_and_its_denial_stands() {
    let (registry, _, _) = travel_tools();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([
            ("lookup", json!({"seat": "12A"})),
            ("book", json!({"seat": "12A"})),
        ]))
        .respond(response::tool_calls([("lookup", json!({"seat": "14C"}))]))
        .respond(response::text("Done."));
    let agent = Agent::builder(Arc::new(client.clone()))
        .tools(registry)
        .budget(agent_runner::Budget {
            max_tool_calls: Some(2),
            ..agent_runner::Budget::default()
        })
        .build();
    let mut state = until_paused(&agent, &client).await;
    state.deny("call_2", None).unwrap();

    // A driver that runs every call of the step anyway: the denial stands.
    let Step::RunTools(calls) = state.next_step() else {
        panic!("no tool step")
    };
    assert_eq!(calls.len(), 2);
    let ran = |content: &str| agent_runner::ToolOutcome {
        content: content.to_owned(),
        is_error: false,
        duration: std::time::Duration::ZERO,
        cached: false,
        delegated_usage: None,
        attachments: Vec::new(),
    };
    state
        .on_tool_results(&[ran("seat 12A is free"), ran("booked 12A")])
        .unwrap();

    // One call ran, so a second one fits the budget of two.
    let cancel = agent_core::CancellationToken::new();
    let Step::CallModel(request) = state.next_step() else {
        panic!("no model step")
    };
    let reply = agent_core::LlmClient::complete(&client, request, &cancel)
        .await
        .unwrap();
    state.on_model_response(reply, std::time::Duration::ZERO).unwrap();
    assert!(matches!(state.next_step(), Step::RunTools(calls) if calls.len() == 1));
    let result = state.into_result();
    let booked = &result.tool_calls[1];
    assert!(
        booked.is_error && booked.result.contains("did not approve"),
        "{booked:?}"
    );
}
