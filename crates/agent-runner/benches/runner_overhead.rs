//! `runner_overhead`: what the loop itself costs. One run = one model turn
//! asking for one tool call, the tool, and a second model turn with the final
//! answer, against a client that answers instantly. The figure is the time
//! per run, i.e. the loop's overhead on top of two model calls and one tool.
//!
//! `runner_overhead/context_estimate_and_elision_1000_messages`: what the
//! context-window check adds before a call on a long conversation: the
//! estimate of a 1000-message request (250 turns, each with a 2 KB tool
//! result) and the elision of its old results.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{
    AssistantMessage, CancellationToken, Capabilities, ChatRequest, ChatResponse, LlmClient, LlmError, Message,
    ToolCall, ToolContext, ToolOutput, ToolResult,
};
use agent_runner::context::{elide_tool_results, estimate_tokens};
use agent_runner::{Agent, Protocol};
use agent_testing::{TestTool, TestTools, ToolBehaviour, response};
use async_trait::async_trait;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;

/// Alternates between a tool call and a final answer, with no recording.
struct InstantClient {
    turn: AtomicUsize,
    call: ChatResponse,
    answer: ChatResponse,
}

#[async_trait]
impl LlmClient for InstantClient {
    fn provider(&self) -> &'static str {
        "bench"
    }
    fn model(&self) -> &'static str {
        "bench-model"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_tools: true,
            ..Capabilities::default()
        }
    }
    async fn complete(&self, _request: &ChatRequest, _cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        Ok(if turn.is_multiple_of(2) {
            self.call.clone()
        } else {
            self.answer.clone()
        })
    }
}

fn bench(c: &mut Criterion) {
    let client = Arc::new(InstantClient {
        turn: AtomicUsize::new(0),
        call: response::tool_calls([("get_weather", json!({"location": "Tokyo", "unit": "celsius"}))]),
        answer: response::text("It is 21 °C and sunny in Tokyo."),
    });
    let registry = agent_tools::ToolBox::new();
    let tools = TestTools::new("travel").with(
        TestTool::new(
            "get_weather",
            ToolBehaviour::Reply(ToolOutput::Json(json!({"temp_c": 21, "sky": "sunny"}))),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["location"]
        })),
    );
    if let Err(error) = registry.register(Arc::new(tools), true) {
        panic!("bench tools: {error}");
    }
    let agent = Agent::builder(client)
        .name("bench")
        .system_prompt("You are a travel assistant.")
        .tools(Arc::new(registry))
        .build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let context = ToolContext::new();
    c.bench_function("runner_overhead/tool_call_then_answer", |b| {
        b.to_async(&runtime).iter(|| async {
            let result = agent.run("What's the weather in Tokyo?").context(context.clone()).await;
            assert!(result.is_ok_and(|r| r.tool_calls.len() == 1));
        });
    });
}

/// A request of 250 turns: question, call, 2 KB result, answer.
fn long_request() -> ChatRequest {
    let messages = (0..250)
        .flat_map(|turn| {
            let id = format!("call_{turn}");
            [
                Message::user(format!("What is the weather in city {turn}?")),
                Message::Assistant(AssistantMessage::with_tool_calls(
                    "",
                    vec![ToolCall::new(
                        id.clone(),
                        "get_weather",
                        json!({"location": format!("city {turn}")}),
                    )],
                )),
                Message::tool(ToolResult::success(id, "get_weather", "x".repeat(2048))),
                Message::assistant(format!("It is sunny in city {turn}.")),
            ]
        })
        .collect();
    ChatRequest::new(messages).with_system("You are a travel assistant.")
}

fn bench_context(c: &mut Criterion) {
    let request = long_request();
    assert_eq!(request.messages.len(), 1000);
    c.bench_function("runner_overhead/context_estimate_and_elision_1000_messages", |b| {
        b.iter_batched_ref(
            || request.clone(),
            |request| {
                let tokens = estimate_tokens(request);
                let elided = elide_tool_results(&mut request.messages[..984], &Protocol::Native, 1024);
                assert!(tokens > 128_000 && elided.results == 246);
            },
            BatchSize::LargeInput,
        );
    });
}

criterion_group!(benches, bench, bench_context);
criterion_main!(benches);
