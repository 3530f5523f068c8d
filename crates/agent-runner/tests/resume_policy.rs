//! A saved run is resumed under the agent's policy of today: the state read
//! back from a store is not trusted to say which calls need approval, which
//! tools may run, how far its budgets go, or whose run it is.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{ChatRequest, LlmClient, RunEnd, ToolContext, ToolDefinition, ToolExecution};
use agent_runner::{Agent, RunState, Step};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use serde_json::{Value, json};

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

fn travel_agent(client: &ScriptedClient, registry: Arc<agent_tools::ToolBox>) -> Agent {
    Agent::builder(Arc::new(client.clone()))
        .name("travel")
        .tools(registry)
        .build()
}

fn calls(tool: &TestTool) -> usize {
    tool.call_counter().load(std::sync::atomic::Ordering::SeqCst)
}

/// `state` as a store keeps it, changed by `tamper`, read back.
fn tampered(state: &RunState, tamper: impl FnOnce(&mut Value)) -> RunState {
    let mut saved = serde_json::to_value(state).unwrap();
    tamper(&mut saved);
    serde_json::from_value(saved).unwrap()
}

/// Steps `state` with `client` until it asks for something else than a
/// model call; returns it.
async fn after_model_calls(mut state: RunState, client: &ScriptedClient) -> RunState {
    let cancel = agent_core::CancellationToken::new();
    loop {
        match state.next_step() {
            Step::CallModel(request) => {
                let reply = client.complete(request, &cancel).await.unwrap();
                state.on_model_response(reply, Duration::ZERO).unwrap();
            }
            _ => return state,
        }
    }
}

fn tool_names(request: &ChatRequest) -> Vec<&str> {
    request.tools.iter().map(|tool| tool.name.as_str()).collect()
}

#[tokio::test]
async fn a_saved_state_whose_approval_gate_was_emptied_still_pauses_under_an_agent_requiring_approval() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([
            ("lookup", json!({"seat": "12A"})),
            ("book", json!({"seat": "12A"})),
        ]))
        .respond(response::text("Done."));
    let (registry, _, _) = travel_tools();
    let agent = travel_agent(&client, registry);
    let paused = after_model_calls(agent.start(Vec::new(), "book seat 12A"), &client).await;
    assert!(paused.is_awaiting_approval());

    // Somebody with write access to the store empties the gate.
    let emptied = tampered(&paused, |saved| saved["approval"] = json!({}));
    assert!(!emptied.is_awaiting_approval(), "the tampering took");

    // Another process, configured as before, resumes it without approving.
    let (registry, lookup, book) = travel_tools();
    let agent = travel_agent(&client, registry);
    let result = agent.resume(emptied).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::AwaitingApproval);
    let waiting: Vec<&str> = result.pending_approvals.iter().map(|call| call.name.as_str()).collect();
    assert_eq!(waiting, ["book"]);
    assert_eq!((calls(&lookup), calls(&book)), (0, 0), "no tool of the batch ran");
    assert_eq!(client.requests().len(), 1, "the model was not asked again");
}

#[tokio::test]
async fn a_state_saved_before_the_model_asked_keeps_the_current_approval_rules() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::text("Done."));
    let (registry, _, _) = travel_tools();
    let agent = travel_agent(&client, registry);
    let fresh = tampered(&agent.start(Vec::new(), "book seat 12A"), |saved| {
        saved["approval"] = json!({});
    });

    let (registry, _, book) = travel_tools();
    let result = travel_agent(&client, registry).resume(fresh).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::AwaitingApproval);
    assert_eq!(calls(&book), 0);
}

#[tokio::test]
async fn a_state_whose_tool_call_budget_was_raised_is_held_to_the_current_one() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([
            ("echo", json!({"n": 1})),
            ("echo", json!({"n": 2})),
        ]))
        .respond(response::text("Done."));
    let tools = common::tools();
    let agent = common::agent_with(&client, tools.clone())
        .budget(agent_runner::Budget {
            max_tool_calls: Some(1),
            ..agent_runner::Budget::default()
        })
        .build();
    let raised = tampered(&agent.start(Vec::new(), "go"), |saved| {
        saved["config"]["budget"]["max_tool_calls"] = json!(100);
    });
    let result = agent.resume(raised).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded, "{:?}", result.stop_detail);
    assert!(
        result
            .stop_detail
            .as_deref()
            .unwrap_or_default()
            .contains("budget of 1"),
        "{:?}",
        result.stop_detail
    );
    assert_eq!(tools.calls("echo"), 0);
}

#[tokio::test]
async fn a_state_whose_iteration_limit_was_raised_is_held_to_the_current_one() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"n": 1}))]))
        .respond(response::text("From what I know."));
    let agent = common::agent(&client).max_iterations(1).build();
    let raised = tampered(&agent.start(Vec::new(), "go"), |saved| {
        saved["config"]["max_iterations"] = json!(50);
    });
    let result = agent.resume(raised).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::MaxIterations);
}

#[tokio::test]
async fn a_state_whose_deadline_was_pushed_back_ends_by_the_current_limit() {
    let client = ScriptedClient::new().respond(response::text("Too late."));
    // A limit this short has passed by the time the run resumes.
    let agent = common::agent(&client).deadline(Duration::from_nanos(1)).build();
    let later = tampered(&agent.start(Vec::new(), "go"), |saved| {
        saved["deadline_unix_ms"] = json!(4_102_444_800_000_u64); // 2100-01-01
        saved["config"]["budget"]["deadline"] = json!(86_400_000);
    });
    let result = agent.resume(later).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::BudgetExceeded);
    assert_eq!(result.stop_detail.as_deref(), Some("the run's deadline passed"));
    assert!(client.requests().is_empty());
}

/// A registry that no longer lists `hidden` but would still run it, as a
/// registry filtered per user may: the runner must not rely on `execute`
/// to refuse what the agent does not offer.
struct Hiding {
    inner: Arc<dyn agent_core::ToolRegistry>,
    hidden: &'static str,
}

#[async_trait::async_trait]
impl agent_core::ToolRegistry for Hiding {
    fn definitions(&self) -> Vec<ToolDefinition> {
        let mut tools = self.inner.definitions();
        tools.retain(|tool| tool.name != self.hidden);
        tools
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> ToolExecution {
        self.inner.execute(tool, arguments, context).await
    }
}

#[tokio::test]
async fn a_tool_removed_from_the_agent_does_not_run_when_a_saved_state_asks_for_it() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("weather", json!({"location": "Oslo"}))]))
        .respond(response::tool_calls([
            ("weather", json!({"location": "Bergen"})),
            ("echo", json!({"n": 1})),
        ]))
        .respond(response::text("I cannot tell."));
    let tools = common::tools();
    let agent = common::agent_with(&client, tools.clone()).build();
    let saved = after_model_calls(agent.start(Vec::new(), "Weather in Oslo?"), &client).await;
    let mut probe = saved.clone();
    assert!(matches!(probe.next_step(), Step::RunTools(calls) if calls.len() == 1));
    let saved = tampered(&saved, |_| {});

    // Today the agent no longer offers `weather`.
    let today = Agent::builder(Arc::new(client.clone()))
        .name("tester")
        .system_prompt("You are a test agent.")
        .tools(Arc::new(Hiding {
            inner: common::registry(tools.clone()),
            hidden: "weather",
        }))
        .build();
    let result = today.resume(saved).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(tools.calls("weather"), 0, "neither the saved call nor the new one ran");
    assert_eq!(tools.calls("echo"), 1, "an offered tool still runs");
    let weather: Vec<(bool, &str)> = result
        .tool_calls
        .iter()
        .filter(|call| call.name == "weather")
        .map(|call| (call.is_error, call.result.as_str()))
        .collect();
    assert_eq!(weather.len(), 2);
    assert!(
        weather
            .iter()
            .all(|(is_error, result)| *is_error && result.contains("unknown tool `weather`")),
        "{weather:?}"
    );
    // The model is no longer offered it either.
    let requests = client.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests[1..] {
        assert!(!tool_names(request).contains(&"weather"), "{:?}", tool_names(request));
        assert!(tool_names(request).contains(&"echo"));
    }
}

#[tokio::test]
async fn a_state_that_does_not_match_the_agent_resuming_it_is_refused() {
    type Tamper = fn(&mut Value);
    let tampers: [(&str, Tamper); 4] = [
        ("another agent", |saved| saved["identity"]["agent"] = json!("intruder")),
        ("another model", |saved| saved["identity"]["model"] = json!("pricier-9")),
        ("another provider", |saved| {
            saved["identity"]["provider"] = json!("elsewhere");
        }),
        ("a request for another model", |saved| {
            saved["request"]["model"] = json!("pricier-9");
        }),
    ];
    for (what, tamper) in tampers {
        let client = ScriptedClient::new().respond(response::text("Hello."));
        let agent = common::agent(&client).build();
        let state = tampered(&agent.start(Vec::new(), "hi"), tamper);
        let refused = agent.resume(state).await;
        let Err(error) = refused else {
            panic!("{what}: resumed: {refused:?}");
        };
        assert_eq!(error.result.stop_reason, RunEnd::Error, "{what}");
        assert!(client.requests().is_empty(), "{what}: the model was called");
    }
}

#[tokio::test]
async fn restore_names_why_a_state_is_refused_and_a_stream_of_it_ends_in_an_error() {
    use futures::StreamExt;

    let client = ScriptedClient::new().respond(response::text("Hello."));
    let agent = common::agent(&client).build();
    let fresh = agent.start(Vec::new(), "hi");
    let intruder = tampered(&fresh, |saved| saved["identity"]["agent"] = json!("intruder"));
    let Err(error) = agent.restore(intruder.clone()) else {
        panic!("another agent's run was restored");
    };
    assert!(matches!(error, agent_runner::ResumeError::OtherRun { .. }), "{error}");
    assert!(error.to_string().contains("`intruder`"), "{error}");
    let odd = tampered(&fresh, |saved| saved["request"]["model"] = json!("pricier-9"));
    assert!(matches!(
        agent.restore(odd),
        Err(agent_runner::ResumeError::Inconsistent(_))
    ));

    let events: Vec<_> = agent.resume(intruder).stream().collect().await;
    let Some(agent_core::AgentEvent::RunFinished { result }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(result.stop_reason, RunEnd::Error);
    assert!(
        events
            .iter()
            .any(|event| matches!(event, agent_core::AgentEvent::Error { message } if message.contains("intruder")))
    );
    assert!(client.requests().is_empty());

    // A state made in this process is the caller's: it is driven as it is.
    assert!(!fresh.is_read_back());
    let raised = fresh.with_max_iterations(50);
    let restored = agent.restore(tampered(&raised, |_| {})).unwrap();
    assert!(!restored.is_read_back());
}

#[tokio::test]
async fn an_approval_read_back_from_a_store_is_asked_again() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::text("Done."));
    let (registry, _, _) = travel_tools();
    let agent = travel_agent(&client, registry);
    let paused = after_model_calls(agent.start(Vec::new(), "book seat 12A"), &client).await;
    let mut decided = agent.restore(tampered(&paused, |_| {})).unwrap();
    decided.approve("call_1").unwrap();
    assert!(!decided.is_awaiting_approval());

    // Saved after the decision, read back: the decision is not in it.
    let (registry, _, book) = travel_tools();
    let agent = travel_agent(&client, registry);
    let result = agent.resume(tampered(&decided, |_| {})).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::AwaitingApproval);
    assert_eq!(calls(&book), 0);

    // Decided in the process that drives it, it runs.
    let mut decided = agent.restore(tampered(&decided, |_| {})).unwrap();
    decided.approve("call_1").unwrap();
    let result = agent.resume(decided).await.unwrap();
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(calls(&book), 1);
}
