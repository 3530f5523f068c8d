//! The tool-result cache: idempotent tools (those declaring a
//! `CachePolicy`) answer a repeated call with canonically equal arguments
//! from an earlier result, within a run and, with a shared cache, across runs.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{AgentEvent, CachePolicy, Message, ToolCall, ToolContext, ToolError, ToolOutput, ToolProvider};
use agent_runner::{Agent, ToolResultCache};
use agent_testing::{ScriptedClient, response};
use futures::StreamExt as _;
use serde_json::{Value, json};

/// `lookup` is idempotent (cached for `ttl`), `write` is not, `flaky` is
/// idempotent and fails its first call. Each counts its executions and
/// answers with the count, so a reused result is told apart from a new one.
struct Counting {
    ttl: Duration,
    lookup: AtomicUsize,
    write: AtomicUsize,
    flaky: AtomicUsize,
}

impl Counting {
    fn new(ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            ttl,
            lookup: AtomicUsize::new(0),
            write: AtomicUsize::new(0),
            flaky: AtomicUsize::new(0),
        })
    }

    fn runs(&self, tool: &str) -> usize {
        match tool {
            "lookup" => self.lookup.load(Ordering::SeqCst),
            "write" => self.write.load(Ordering::SeqCst),
            _ => self.flaky.load(Ordering::SeqCst),
        }
    }
}

#[async_trait::async_trait]
impl ToolProvider for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }

    fn description(&self) -> &'static str {
        "Tools that count their executions"
    }

    fn tools(&self) -> Vec<agent_core::ToolDefinition> {
        ["lookup", "write", "flaky"]
            .into_iter()
            .map(|name| agent_core::ToolDefinition::new(name, name, json!({"type": "object"})))
            .collect()
    }

    fn cache_policy(&self, tool: &str) -> Option<CachePolicy> {
        (tool != "write").then(|| CachePolicy::new(self.ttl))
    }

    async fn execute(&self, tool: &str, _arguments: &Value, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let counter = match tool {
            "lookup" => &self.lookup,
            "write" => &self.write,
            _ => &self.flaky,
        };
        let run = counter.fetch_add(1, Ordering::SeqCst) + 1;
        if tool == "flaky" && run == 1 {
            return Err(ToolError::failed("try again"));
        }
        Ok(ToolOutput::Text(format!("{tool} run {run}")))
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

fn agent(client: &ScriptedClient, tools: &Arc<Counting>) -> agent_runner::AgentBuilder {
    let registry = agent_tools::ToolBox::new();
    registry
        .register(Arc::clone(tools) as Arc<dyn ToolProvider>, true)
        .unwrap();
    Agent::builder(Arc::new(client.clone())).tools(Arc::new(registry))
}

/// The content of the tool result for `call_id` in `messages`.
fn result_in_history(messages: &[Message], call_id: &str) -> Option<String> {
    messages.iter().find_map(|message| match message {
        Message::Tool(result) if result.call_id == call_id => Some(result.content.clone()),
        _ => None,
    })
}

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn identical_idempotent_calls_in_successive_iterations_run_once() {
    let tools = Counting::new(MINUTE);
    // The second reply adds a call so that it is not a repeat (a loop).
    let client = ScriptedClient::new()
        .respond(response::with_calls(
            "",
            vec![call("a", "lookup", json!({"q": "rust"}))],
        ))
        .respond(response::with_calls(
            "",
            vec![call("b", "lookup", json!({"q": "rust"})), call("c", "write", json!({}))],
        ))
        .respond(response::text("done"));
    let result = agent(&client, &tools).build().run("go").await.unwrap();

    assert_eq!(tools.runs("lookup"), 1);
    let records = &result.tool_calls;
    assert_eq!((records[0].id.as_str(), records[0].cached), ("a", false));
    assert_eq!((records[1].id.as_str(), records[1].cached), ("b", true));
    assert!(!records[2].cached, "{records:?}");
    assert_eq!(records[1].result, "lookup run 1");
    assert!(!records[1].is_error);
    assert_eq!(records[1].duration_ms, 0);
    assert_eq!(records[1].iteration, 2);
    assert_eq!(records[1].duplicate_of, None);
    // The model sees a result for the cached call like for any other.
    assert_eq!(
        result_in_history(&result.messages, "b").as_deref(),
        Some("lookup run 1")
    );
    assert_eq!(
        result_in_history(&client.requests()[2].messages, "b").as_deref(),
        Some("lookup run 1")
    );
}

#[tokio::test]
async fn a_tool_without_a_cache_policy_runs_every_time() {
    let tools = Counting::new(MINUTE);
    let client = ScriptedClient::new()
        .respond(response::with_calls("", vec![call("a", "write", json!({"x": 1}))]))
        .respond(response::with_calls(
            "",
            vec![call("b", "write", json!({"x": 1})), call("c", "lookup", json!({}))],
        ))
        .respond(response::text("done"));
    let result = agent(&client, &tools).build().run("go").await.unwrap();

    assert_eq!(tools.runs("write"), 2);
    assert_eq!(result.tool_calls[1].result, "write run 2");
    assert!(result.tool_calls.iter().all(|record| !record.cached));
}

#[tokio::test]
async fn key_order_and_whitespace_do_not_change_the_key() {
    let tools = Counting::new(MINUTE);
    let reordered: Value = serde_json::from_str(r#"{ "b" : 2,   "a": 1 }"#).unwrap();
    let client = ScriptedClient::new()
        .respond(response::with_calls(
            "",
            vec![call("a", "lookup", json!({"a": 1, "b": 2}))],
        ))
        .respond(response::with_calls(
            "",
            vec![
                call("b", "lookup", reordered),
                call("c", "lookup", json!({"a": 1, "b": 3})),
            ],
        ))
        .respond(response::text("done"));
    let result = agent(&client, &tools).build().run("go").await.unwrap();

    let cached: Vec<bool> = result.tool_calls.iter().map(|record| record.cached).collect();
    assert_eq!(cached, [false, true, false]);
    assert_eq!(tools.runs("lookup"), 2, "different values are a different key");
    assert_eq!(result.tool_calls[2].result, "lookup run 2");
}

#[tokio::test]
async fn an_expired_result_is_not_reused() {
    let tools = Counting::new(Duration::from_millis(30));
    let client = ScriptedClient::new()
        .respond(response::with_calls("", vec![call("a", "lookup", json!({}))]))
        .respond_after(
            Duration::from_millis(120),
            response::with_calls("", vec![call("b", "lookup", json!({})), call("c", "write", json!({}))]),
        )
        .respond(response::text("done"));
    let result = agent(&client, &tools).build().run("go").await.unwrap();

    assert_eq!(tools.runs("lookup"), 2);
    assert!(!result.tool_calls[1].cached);
    assert_eq!(result.tool_calls[1].result, "lookup run 2");
}

#[tokio::test]
async fn failed_calls_are_not_cached() {
    let tools = Counting::new(MINUTE);
    let client = ScriptedClient::new()
        .respond(response::with_calls("", vec![call("a", "flaky", json!({}))]))
        .respond(response::with_calls(
            "",
            vec![call("b", "flaky", json!({})), call("c", "write", json!({"n": 1}))],
        ))
        .respond(response::with_calls(
            "",
            vec![call("d", "flaky", json!({})), call("e", "write", json!({"n": 2}))],
        ))
        .respond(response::text("done"));
    let result = agent(&client, &tools).build().run("go").await.unwrap();

    let flaky: Vec<(bool, bool, &str)> = result
        .tool_calls
        .iter()
        .filter(|record| record.name == "flaky")
        .map(|record| (record.is_error, record.cached, record.result.as_str()))
        .collect();
    assert_eq!(
        flaky,
        [
            (true, false, "try again"),
            (false, false, "flaky run 2"),
            (false, true, "flaky run 2")
        ]
    );
    assert_eq!(tools.runs("flaky"), 2);
}

#[tokio::test]
async fn a_cache_shared_through_the_builder_serves_the_next_run() {
    let tools = Counting::new(MINUTE);
    let turns = |runs: usize| {
        (0..runs).fold(ScriptedClient::new(), |client, _| {
            client
                .respond(response::with_calls("", vec![call("a", "lookup", json!({"q": 1}))]))
                .respond(response::text("done"))
        })
    };
    let alice = ToolContext::new().with_user("alice");

    // Without a shared cache, every run starts empty.
    let unshared = agent(&turns(2), &tools).build();
    let first = unshared.run("go").context(alice.clone()).await.unwrap();
    let second = unshared
        .run("again")
        .history(first.messages)
        .context(alice.clone())
        .await
        .unwrap();
    assert_eq!(tools.runs("lookup"), 2);
    assert!(!second.tool_calls[0].cached);

    let cache = ToolResultCache::new();
    let session = agent(&turns(2), &tools).tool_cache(cache.clone()).build();
    let first = session.run("go").context(alice.clone()).await.unwrap();
    assert_eq!(tools.runs("lookup"), 3);
    assert!(!first.tool_calls[0].cached);
    let second = session
        .run("again")
        .history(first.messages)
        .context(alice.clone())
        .await
        .unwrap();
    assert_eq!(tools.runs("lookup"), 3, "the second run reused the first one's result");
    assert!(second.tool_calls[0].cached);
    assert_eq!(second.tool_calls[0].result, "lookup run 3");
    assert_eq!(cache.len(), 1);

    // Another caller does not get alice's result.
    let bob = agent(&turns(1), &tools).tool_cache(cache).build();
    let other = bob
        .run("go")
        .context(ToolContext::new().with_user("bob"))
        .await
        .unwrap();
    assert!(!other.tool_calls[0].cached);
    assert_eq!(tools.runs("lookup"), 4);
}

#[tokio::test]
async fn a_cached_call_reports_its_completion_as_cached() {
    let tools = Counting::new(MINUTE);
    let client = ScriptedClient::new()
        .respond(response::with_calls("", vec![call("a", "lookup", json!({}))]))
        .respond(response::with_calls(
            "",
            vec![call("b", "lookup", json!({})), call("c", "write", json!({}))],
        ))
        .respond(response::text("done"));
    let events: Vec<AgentEvent> = agent(&client, &tools).build().run("go").stream().collect().await;
    let completions: Vec<(String, u64, Option<Value>)> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolCompleted {
                call_id,
                duration_ms,
                attributes,
                ..
            } => Some((call_id.clone(), *duration_ms, attributes.get("agentry.cached").cloned())),
            _ => None,
        })
        .collect();
    assert_eq!(completions.len(), 3, "{completions:?}");
    assert_eq!(completions[0].2, None);
    let cached = completions.iter().find(|(id, ..)| id == "b").unwrap();
    assert_eq!((cached.1, cached.2.clone()), (0, Some(json!(true))));
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("{events:?}");
    };
    assert!(result.tool_calls[1].cached);
    assert_eq!(tools.runs("lookup"), 1);
}
