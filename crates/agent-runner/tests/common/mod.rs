//! Shared fixtures for the runner tests.
#![allow(dead_code)]

pub mod context;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Capabilities, ToolOutput, ToolRegistry};
use agent_runner::{Agent, AgentBuilder};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour};
use serde_json::json;

/// A registry with the tools most tests use:
/// - `echo`: returns its arguments
/// - `weather`: schema with a required `location` and a `unit` enum
/// - `slow_a` / `slow_b`: sleep 200 ms
/// - `fail`: always fails; `boom`: panics
pub fn tools() -> TestTools {
    TestTools::new("test")
        .with(TestTool::new("echo", ToolBehaviour::Echo))
        .with(
            TestTool::new("weather", ToolBehaviour::Reply(ToolOutput::Json(json!({"temp_c": 21})))).with_schema(
                json!({
                    "type": "object",
                    "properties": {
                        "location": {"type": "string"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                    },
                    "required": ["location"]
                }),
            ),
        )
        .with(TestTool::new("slow_a", ToolBehaviour::Reply("a".into())).with_delay(Duration::from_millis(200)))
        .with(TestTool::new("slow_b", ToolBehaviour::Reply("b".into())).with_delay(Duration::from_millis(200)))
        .with(TestTool::new("fail", ToolBehaviour::Fail("the service is down".into())))
        .with(TestTool::new("boom", ToolBehaviour::Panic("kaboom".into())))
}

/// A registry holding `tools`.
pub fn registry(tools: TestTools) -> Arc<dyn ToolRegistry> {
    let registry = agent_tools::ToolBox::new();
    registry.register(Arc::new(tools), true).expect("test tools register");
    Arc::new(registry)
}

/// An agent over `client` with the default test tools.
pub fn agent(client: &ScriptedClient) -> AgentBuilder {
    agent_with(client, tools())
}

/// An agent over `client` with `tools`.
pub fn agent_with(client: &ScriptedClient, tools: TestTools) -> AgentBuilder {
    Agent::builder(Arc::new(client.clone()))
        .name("tester")
        .system_prompt("You are a test agent.")
        .tools(registry(tools))
}

/// A scripted model without native tool calling, that streams.
pub fn text_only() -> ScriptedClient {
    ScriptedClient::new().with_capabilities(Capabilities {
        native_tools: false,
        streaming: true,
        ..Capabilities::default()
    })
}

/// A scripted client that says it enforces a JSON-schema response format.
pub fn json_schema_client() -> ScriptedClient {
    ScriptedClient::new().with_capabilities(Capabilities {
        native_tools: true,
        parallel_tool_calls: true,
        streaming: true,
        prompt_caching: false,
        json_schema: true,
        format_with_tools: false,
    })
}
