//! The short path through the facade: `.tool()`, `.tools_from()`,
//! `prompt()`, `prompt_stream()`, tool closures without a turbofish, and
//! derives through the prelude. This crate has no `schemars` dependency of
//! that name, so `#[derive(JsonSchema)]` here resolves through the prelude,
//! as in a user's crate.

use std::sync::Arc;

use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use agentry::core::RegistryError;
use agentry::prelude::*;
use agentry::serde_json::json;

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct Add {
    /// First addend.
    a: f64,
    /// Second addend.
    b: f64,
}

/// Arguments of `echo`, deriving through the facade's `serde` only.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agentry::serde")]
struct Echo {
    /// What to say back.
    text: String,
}

fn add() -> TypedTool {
    TypedTool::new("add", "Adds two numbers.", |args: Add, _: ToolContext| async move {
        Ok((args.a + args.b).to_string())
    })
}

fn echo() -> TypedTool {
    TypedTool::new("echo", "Says the text back.", |args: Echo, _: ToolContext| async move {
        Ok(args.text)
    })
}

fn tool_names(agent: &Agent) -> Vec<String> {
    agent.registry().definitions().into_iter().map(|d| d.name).collect()
}

#[tokio::test]
async fn one_tool_is_registered_offered_and_run() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([("add", json!({"a": 2, "b": 3}))]))
            .respond(response::text("5")),
    );
    let agent = Agent::builder(client.clone()).tool(add()).build();
    assert_eq!(tool_names(&agent), ["add"]);

    let result = agent.run("2 + 3?").await.map_err(|e| e.to_string());
    let result = result.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(result.tool_calls[0].result, "5");
    assert!(!result.tool_calls[0].is_error);

    let requests = client.requests();
    let offered: Vec<_> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["add"]);
    // The schema came from the type, doc comments included.
    assert_eq!(
        requests[0].tools[0].input_schema["properties"]["a"]["description"],
        "First addend."
    );
}

#[tokio::test]
async fn several_tool_calls_add_several_and_a_same_name_replaces() {
    let replacement = TypedTool::new("add", "Always 42.", |_: Add, _: ToolContext| async { Ok("42") });
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([
                ("add", json!({"a": 1, "b": 1})),
                ("echo", json!({"text": "hi"})),
            ]))
            .respond(response::text("done")),
    );
    let agent = Agent::builder(client)
        .tool(add())
        .tool(echo())
        .tool(replacement)
        .build();
    assert_eq!(tool_names(&agent), ["add", "echo"]);
    let result = agent.run("go").await.map_err(|e| e.to_string());
    let result = result.unwrap_or_else(|error| panic!("{error}"));
    let results: Vec<_> = result.tool_calls.iter().map(|c| c.result.as_str()).collect();
    assert_eq!(results, ["42", "hi"]);
}

#[tokio::test]
async fn tools_from_adds_a_domain_after_single_tools() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([("calculator", json!({"expression": "6 * 7"}))]))
            .respond(response::text("42")),
    );
    let agent = Agent::builder(client)
        .tools_from(Arc::new(agentry::math::tool_set()))
        .tool(echo())
        .build();
    assert_eq!(tool_names(&agent), ["echo", "calculator", "arithmetic"]);
    let result = agent.run("6 * 7?").await.map_err(|e| e.to_string());
    let result = result.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(result.tool_calls[0].result, r#"{"expression":"6 * 7","result":42}"#);
}

#[tokio::test]
async fn a_given_registry_keeps_working_behind_the_builder_tools_and_is_not_changed() {
    let registry = Arc::new(agentry::tools::ToolBox::new());
    let lookup = TestTools::new("lookup").with(TestTool::new("lookup", ToolBehaviour::Reply("found".into())));
    assert!(registry.register(Arc::new(lookup), true).is_ok());
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([
                ("lookup", json!({})),
                ("echo", json!({"text": "x"})),
            ]))
            .respond(response::text("ok")),
    );
    let agent = Agent::builder(client)
        .tools(Arc::clone(&registry) as _)
        .tool(echo())
        .build();
    assert_eq!(tool_names(&agent), ["echo", "lookup"]);
    let result = agent.run("go").await.map_err(|e| e.to_string());
    let result = result.unwrap_or_else(|error| panic!("{error}"));
    let results: Vec<_> = result.tool_calls.iter().map(|c| c.result.as_str()).collect();
    assert_eq!(results, ["found", "x"]);
    // Other agents sharing the registry do not get this agent's tools.
    assert_eq!(registry.provider_names(), ["lookup"]);
}

#[test]
fn a_builder_tool_named_like_a_shared_one_is_an_error_of_try_build_and_left_out_by_build() {
    let registry = Arc::new(agentry::tools::ToolBox::new());
    let lookup = TestTools::new("lookup").with(TestTool::new("echo", ToolBehaviour::Reply("shared".into())));
    assert!(registry.register(Arc::new(lookup), true).is_ok());
    let error = Agent::builder(Arc::new(ScriptedClient::new()))
        .tools(Arc::clone(&registry) as _)
        .tool(echo())
        .try_build()
        .err();
    assert!(
        matches!(&error, Some(BuildError::Tools(RegistryError::DuplicateTool { tool, .. })) if tool == "echo"),
        "{error:?}"
    );
    let agent = Agent::builder(Arc::new(ScriptedClient::new()))
        .tools(registry)
        .tool(echo())
        .build();
    assert_eq!(tool_names(&agent), ["echo"]);
}

#[test]
fn clashing_domains_are_an_error_of_try_build_and_disabled_by_build() {
    let client = || Arc::new(ScriptedClient::new());
    let error = Agent::builder(client())
        .tool(TypedTool::new(
            "calculator",
            "Mine.",
            |_: NoArgs, _: ToolContext| async { Ok("1") },
        ))
        .tools_from(Arc::new(agentry::math::tool_set()))
        .try_build()
        .err();
    assert!(
        matches!(&error, Some(BuildError::Tools(RegistryError::DuplicateTool { tool, .. })) if tool == "calculator"),
        "{error:?}"
    );

    let agent = Agent::builder(client())
        .tool(TypedTool::new(
            "calculator",
            "Mine.",
            |_: NoArgs, _: ToolContext| async { Ok("1") },
        ))
        .tools_from(Arc::new(agentry::math::tool_set()))
        .build();
    assert_eq!(tool_names(&agent), ["calculator"]);
}

#[test]
fn an_out_of_range_config_is_an_error_of_try_build_naming_the_field() {
    let mut config = AgentConfig::default();
    config.request.temperature = Some(7.0);
    let error = Agent::builder(Arc::new(ScriptedClient::new()))
        .agent_config(config)
        .try_build()
        .err();
    assert!(
        matches!(&error, Some(BuildError::Config(invalid)) if invalid.field == "request.temperature"),
        "{error:?}"
    );
    let config: AgentConfig =
        agentry::serde_json::from_str(r#"{"run": {"max_iterations": 3}, "request": {"max_tokens": 64}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
    let agent = Agent::builder(Arc::new(ScriptedClient::new()))
        .agent_config(config)
        .try_build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(agent.config().max_iterations, 3);
    assert_eq!(agent.agent_config().request.max_tokens, Some(64));
}

#[tokio::test]
async fn prompt_starts_a_fresh_conversation_each_time() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::text("one"))
            .respond(response::text("two")),
    );
    let agent = Agent::builder(client.clone()).system_prompt("Be brief.").build();
    let first = agent.run("first").await.map_err(|e| e.to_string());
    let second = agent.run("second").await.map_err(|e| e.to_string());
    assert_eq!(first.map(|r| r.response).as_deref(), Ok("one"));
    assert_eq!(second.map(|r| r.response).as_deref(), Ok("two"));
    let requests = client.requests();
    assert_eq!(requests[1].messages.len(), 1, "{:?}", requests[1].messages);
    assert_eq!(requests[1].messages[0], Message::user("second"));
    assert_eq!(requests[1].system.as_deref(), Some("Be brief."));
}

#[tokio::test]
async fn prompt_stream_yields_text_and_the_result() {
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([("echo", json!({"text": "pong"}))]))
            .respond(response::text("pong!")),
    );
    let agent = Agent::builder(client).tool(echo()).build();
    let mut events = agent.run("ping").stream();
    let (mut text, mut tools, mut result) = (String::new(), Vec::new(), None);
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::TextDelta { text: delta } => text.push_str(&delta),
            AgentEvent::ToolCompleted { name, result, .. } => tools.push((name, result)),
            AgentEvent::RunFinished { result: finished } => result = Some(finished),
            _ => {}
        }
    }
    assert_eq!(text, "pong!");
    assert_eq!(tools, [("echo".to_owned(), "pong".to_owned())]);
    assert_eq!(result.map(|r| r.stop_reason), Some(RunEnd::Completed));
}

/// Closures that return `Ok(..)`, `Err("..".into())` or use `?` on a
/// `String` error, all without `Ok::<_, ToolError>`.
#[tokio::test]
async fn tool_closures_need_no_turbofish() {
    let checked = TypedTool::new("sqrt", "Square root.", |args: Add, _: ToolContext| async move {
        if args.a < 0.0 {
            return Err("`a` must not be negative".into());
        }
        let b = u8::try_from(args.b as i64).map_err(|error| error.to_string())?;
        Ok(Json(json!({"root": args.a.sqrt(), "b": b})))
    });
    let context = ToolContext::new();
    let ok = checked.call(&json!({"a": 9, "b": 1}), &context).await;
    assert_eq!(ok.map(|o| o.to_content()), Ok(r#"{"root":3.0,"b":1}"#.to_owned()));
    let negative = checked.call(&json!({"a": -1, "b": 1}), &context).await;
    assert_eq!(negative.err(), Some(ToolError::failed("`a` must not be negative")));
    let out_of_range = checked.call(&json!({"a": 1, "b": 300}), &context).await;
    assert!(matches!(out_of_range, Err(ToolError::Failed { ref message }) if message.contains("out of range")));

    // A failing tool is a tool result the model reads; the run goes on.
    let client = Arc::new(
        ScriptedClient::new()
            .respond(response::tool_calls([("sqrt", json!({"a": -4, "b": 0}))]))
            .respond(response::text("cannot")),
    );
    let agent = Agent::builder(client).tool(checked).build();
    let result = agent.run("sqrt(-4)?").await.map_err(|e| e.to_string());
    let result = result.unwrap_or_else(|error| panic!("{error}"));
    assert!(result.tool_calls[0].is_error);
    assert!(result.tool_calls[0].result.contains("must not be negative"));
}

#[test]
fn provider_config_keeps_the_openai_variant_with_another_base_url() {
    let config = agentry::openai::OpenAiConfig::openai("gpt-4o-mini").with_base_url("http://127.0.0.1:9/v1");
    assert_eq!(config.variant, agentry::openai::Variant::OpenAi);
    let parsed: Result<ProviderConfig, _> = agentry::serde_json::from_value(json!({
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-test",
    }));
    let parsed = parsed.map_err(|e| e.to_string());
    assert!(matches!(&parsed, Ok(ProviderConfig::OpenAi(c)) if c.base_url.as_deref() == Some("http://127.0.0.1:9/v1")));
    let client = parsed.ok().map(|p| p.client().map(|c| c.provider().to_owned()));
    assert_eq!(client.and_then(Result::ok).as_deref(), Some("openai"));
    let unknown: Result<ProviderConfig, _> = agentry::serde_json::from_value(json!({"provider": "openia"}));
    assert!(unknown.is_err_and(|e| e.to_string().contains("openia")));
}
