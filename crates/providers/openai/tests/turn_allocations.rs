//! The allocations of one agent turn, guarded: the `agent_turn` bench's
//! scenario (one tool call, then the answer, through agent-runner and the
//! OpenAI adapter against a loopback server that allocates nothing per
//! request), counted by a global counting allocator. A count is
//! deterministic where a time is not, so this test asserts it.
//!
//! The only test of its binary: the allocator counts every thread.

use std::alloc::System;
use std::future::IntoFuture;
use std::sync::Arc;

use agent_core::{ToolContext, ToolError};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use agent_runner::Agent;
use agent_testing::loopback::{CannedServer, json_response};
use agent_tools::{Json, ToolBox, ToolSet, TypedTool};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The most allocations a turn may make: under 150, the issue's aim
/// (143 measured on 2026-12-03 in this test's scenario, a test build, once
/// requests shared the registry's tool definitions and the history check
/// stopped allocating; 147 the day before, 201 the day before that). A change that adds allocations to every turn fails
/// here: lower the figure as the turn gets leaner, raise it only for a
/// reason worth the cost.
const MAX_ALLOCATIONS_PER_TURN: f64 = 145.0;

/// Turns counted, after the warm-up.
const TURNS: usize = 200;

const TOOL_CALL: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Tokyo\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}}"#;
const ANSWER: &str = r#"{"id":"chatcmpl-2","object":"chat.completion","created":2,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"It is 21 °C in Tokyo."},"finish_reason":"stop"}],"usage":{"prompt_tokens":121,"completion_tokens":11,"total_tokens":132}}"#;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// City name.
    location: String,
}

#[derive(serde::Serialize)]
struct Weather {
    temp_c: f64,
}

fn agent(address: std::net::SocketAddr) -> Agent {
    let tool = TypedTool::new(
        "get_weather",
        "Current weather for a city.",
        |args: WeatherArgs, _: ToolContext| async move {
            let _ = args.location;
            Ok::<_, ToolError>(Json(Weather { temp_c: 21.0 }))
        },
    );
    let registry = ToolBox::new();
    if let Err(error) = registry.register(Arc::new(ToolSet::new("travel", "Travel tools").tool(tool)), true) {
        panic!("{error}");
    }
    let mut config = OpenAiConfig::openai("gpt-4o-mini").with_api_key("sk-test-key");
    config.base_url = Some(format!("http://{address}/v1"));
    let client = OpenAiClient::new(config).unwrap_or_else(|error| panic!("{error}"));
    Agent::builder(Arc::new(client))
        .name("bench")
        .system_prompt("You are a travel assistant.")
        .tools(Arc::new(registry))
        .build()
}

#[test]
fn an_agent_turn_stays_within_its_allocation_budget() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("{error}"));
    let server = runtime
        .block_on(CannedServer::start(
            json_response(TOOL_CALL),
            json_response(ANSWER),
            br#""role":"tool""#,
        ))
        .unwrap_or_else(|error| panic!("{error}"));
    let agent = agent(server.address());
    let context = ToolContext::new();
    let turn = || {
        let result = runtime
            .block_on(
                agent
                    .run("What's the weather in Tokyo?")
                    .context(context.clone())
                    .into_future(),
            )
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(result.tool_calls.len(), 1);
        assert_eq!(result.response, "It is 21 °C in Tokyo.");
    };
    // Warm up: the connection, the pools, the lazily built statics.
    for _ in 0..20 {
        turn();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..TURNS {
        turn();
    }
    let per_turn = region.change().allocations as f64 / TURNS as f64;
    eprintln!("allocations per agent turn: {per_turn:.1} (at most {MAX_ALLOCATIONS_PER_TURN})");
    assert!(
        per_turn <= MAX_ALLOCATIONS_PER_TURN,
        "an agent turn made {per_turn:.1} allocations, more than the {MAX_ALLOCATIONS_PER_TURN} allowed"
    );
}
