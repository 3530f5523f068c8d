//! ToolBox behaviour: registration, routing, enable/disable, validation,
//! permissions, panics, cancellation, timeouts and hooks.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use agent_core::{RegistryError, ToolContext, ToolError, ToolProvider, ToolRegistry};
use agent_tools::{RequireRoles, ToolBox};
use common::{Behaviour, Scripted, error, text};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn names(registry: &ToolBox) -> Vec<String> {
    registry.definitions().into_iter().map(|d| d.name).collect()
}

async fn run(registry: &ToolBox, tool: &str, arguments: Value) -> agent_core::ToolExecution {
    registry.execute(tool, &arguments, &ToolContext::new()).await
}

fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "count": {"type": "integer"},
            "trip": {
                "type": "object",
                "properties": {
                    "legs": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"date": {"type": "string"}},
                            "required": ["date"]
                        }
                    }
                }
            }
        },
        "required": ["location"]
    })
}

fn weather_registry() -> (ToolBox, Arc<Scripted>) {
    let provider = Scripted::new("travel")
        .tool_with_schema("get_weather", weather_schema(), Behaviour::Answer)
        .shared();
    let registry = ToolBox::new();
    registry.register(provider.clone(), true).unwrap();
    (registry, provider)
}

#[tokio::test]
async fn definitions_list_enabled_tools_in_registration_then_provider_order() {
    let registry = ToolBox::builder()
        .provider(
            Scripted::new("b")
                .tool("b2", Behaviour::Answer)
                .tool("b1", Behaviour::Answer)
                .shared(),
        )
        .disabled_provider(Scripted::new("hidden").tool("h", Behaviour::Answer).shared())
        .provider(Scripted::new("a").tool("a1", Behaviour::Answer).shared())
        .build()
        .unwrap();
    assert_eq!(names(&registry), ["b2", "b1", "a1"]);
    assert_eq!(registry.provider_names(), ["b", "hidden", "a"]);
    assert!(registry.is_enabled("b"));
    assert!(!registry.is_enabled("hidden"));
    assert!(!registry.is_enabled("nobody"));
}

#[tokio::test]
async fn definitions_are_cached_until_providers_change() {
    let provider = Scripted::new("p").tool("t", Behaviour::Answer).shared();
    let registry = ToolBox::new();
    registry.register(provider.clone(), true).unwrap();
    let first = registry.shared_definitions();
    let second = registry.shared_definitions();
    assert!(Arc::ptr_eq(&first, &second), "no change, same snapshot");
    assert_eq!(registry.definitions().len(), 1);
    // tools() is read once, at registration, however often definitions are listed.
    assert_eq!(provider.tools_reads.load(Ordering::SeqCst), 1);

    registry.set_enabled("p", false).unwrap();
    assert!(registry.shared_definitions().is_empty());
    assert!(!Arc::ptr_eq(&first, &registry.shared_definitions()));
}

#[tokio::test]
async fn execution_goes_to_the_first_enabled_provider_that_has_the_tool() {
    let first = Scripted::new("first").tool("search", Behaviour::Answer).shared();
    let second = Scripted::new("second").tool("search", Behaviour::Answer).shared();
    let registry = ToolBox::new();
    registry.register(first.clone(), false).unwrap();
    registry.register(second.clone(), true).unwrap();

    let execution = run(&registry, "search", json!({"q": "x"})).await;
    assert_eq!(text(&execution.outcome), "second:search");
    assert_eq!(execution.provider.as_deref(), Some("second"));
    assert!(first.calls().is_empty());

    // Swap at runtime: now only `first` is enabled.
    registry.set_enabled("second", false).unwrap();
    registry.set_enabled("first", true).unwrap();
    let execution = run(&registry, "search", json!({})).await;
    assert_eq!(text(&execution.outcome), "first:search");
    assert_eq!(second.calls().len(), 1);
}

#[tokio::test]
async fn disabled_providers_tools_are_neither_listed_nor_executable() {
    let admin = Scripted::new("admin").tool("drop_table", Behaviour::Answer).shared();
    let registry = ToolBox::new();
    registry.register(admin.clone(), false).unwrap();
    registry
        .register(Scripted::new("math").tool("add", Behaviour::Answer).shared(), true)
        .unwrap();

    assert_eq!(names(&registry), ["add"]);
    let execution = run(&registry, "drop_table", json!({})).await;
    assert_eq!(
        error(&execution.outcome),
        ToolError::Disabled {
            name: "drop_table".into()
        }
    );
    assert_eq!(execution.provider, None);
    assert!(admin.calls().is_empty(), "a disabled provider never runs");

    registry.set_enabled("admin", true).unwrap();
    assert_eq!(names(&registry), ["drop_table", "add"]);
    assert_eq!(
        text(&run(&registry, "drop_table", json!({})).await.outcome),
        "admin:drop_table"
    );

    registry.set_enabled("admin", false).unwrap();
    assert_eq!(names(&registry), ["add"]);
    assert!(run(&registry, "drop_table", json!({})).await.outcome.is_err());
}

#[tokio::test]
async fn unknown_tool_lists_the_enabled_tools() {
    let registry = ToolBox::builder()
        .provider(Scripted::new("travel").tool("get_weather", Behaviour::Answer).shared())
        .provider(Scripted::new("math").tool("calculator", Behaviour::Answer).shared())
        .disabled_provider(Scripted::new("secret").tool("launch", Behaviour::Answer).shared())
        .build()
        .unwrap();
    let execution = run(&registry, "get_wether", json!({})).await;
    let failure = error(&execution.outcome);
    assert_eq!(
        failure,
        ToolError::UnknownTool {
            name: "get_wether".into(),
            available: vec!["get_weather".into(), "calculator".into()],
        }
    );
    assert_eq!(
        failure.to_string(),
        "unknown tool `get_wether`; available tools: get_weather, calculator"
    );
}

#[test]
fn duplicate_provider_and_tool_names_are_rejected() {
    let registry = ToolBox::new();
    registry
        .register(
            Scripted::new("travel").tool("get_weather", Behaviour::Answer).shared(),
            true,
        )
        .unwrap();

    let again = registry.register(Scripted::new("travel").tool("other", Behaviour::Answer).shared(), false);
    assert_eq!(again, Err(RegistryError::DuplicateProvider("travel".into())));

    let clash = registry.register(
        Scripted::new("weather").tool("get_weather", Behaviour::Answer).shared(),
        true,
    );
    assert_eq!(
        clash,
        Err(RegistryError::DuplicateTool {
            tool: "get_weather".into(),
            first: "travel".into(),
            second: "weather".into(),
        })
    );
    assert_eq!(registry.provider_names(), ["travel"], "a rejected provider is not kept");

    // A disabled provider may share names; enabling it is what clashes.
    registry
        .register(
            Scripted::new("weather").tool("get_weather", Behaviour::Answer).shared(),
            false,
        )
        .unwrap();
    assert_eq!(
        registry.set_enabled("weather", true),
        Err(RegistryError::DuplicateTool {
            tool: "get_weather".into(),
            first: "travel".into(),
            second: "weather".into(),
        })
    );
    assert!(!registry.is_enabled("weather"));

    // The clash names providers in registration order, whichever is enabled last.
    registry.set_enabled("travel", false).unwrap();
    registry.set_enabled("weather", true).unwrap();
    assert_eq!(
        registry.set_enabled("travel", true),
        Err(RegistryError::DuplicateTool {
            tool: "get_weather".into(),
            first: "travel".into(),
            second: "weather".into(),
        })
    );

    // One provider defining a name twice is rejected even when disabled.
    let twice = Scripted::new("twice")
        .tool("x", Behaviour::Answer)
        .tool("x", Behaviour::Answer)
        .shared();
    assert_eq!(
        registry.register(twice, false),
        Err(RegistryError::DuplicateTool {
            tool: "x".into(),
            first: "twice".into(),
            second: "twice".into(),
        })
    );
}

#[test]
fn unknown_provider_in_set_enabled_lists_registered() {
    let registry = ToolBox::builder()
        .provider(Scripted::new("math").shared())
        .build()
        .unwrap();
    let result = registry.set_enabled("maths", true);
    assert_eq!(
        result,
        Err(RegistryError::UnknownProvider {
            name: "maths".into(),
            registered: vec!["math".into()],
        })
    );
    assert_eq!(registry.set_enabled("math", true), Ok(()), "enabling twice is a no-op");
}

#[tokio::test]
async fn invalid_enum_value_names_argument_options_and_value() {
    let (registry, provider) = weather_registry();
    let execution = run(&registry, "get_weather", json!({"location": "Paris", "unit": "kelvin"})).await;
    let message = error(&execution.outcome).to_string();
    assert!(
        message.contains(r#""unit": expected one of ["celsius","fahrenheit"], got "kelvin""#),
        "{message}"
    );
    assert!(
        message.starts_with("invalid arguments for `get_weather`: "),
        "{message}"
    );
    assert!(provider.calls().is_empty(), "invalid arguments never reach the tool");
}

#[tokio::test]
async fn missing_wrong_type_and_nested_problems_are_all_reported() {
    let (registry, provider) = weather_registry();
    let execution = run(
        &registry,
        "get_weather",
        json!({"count": "five", "trip": {"legs": [{"date": "2025-01-01"}, {"seat": 3}]}}),
    )
    .await;
    let ToolError::InvalidArguments { tool, problems } = error(&execution.outcome) else {
        panic!("expected invalid arguments");
    };
    assert_eq!(tool, "get_weather");
    assert_eq!(
        problems,
        vec![
            r#"missing required argument "location""#.to_owned(),
            r#""count": expected integer, got "five""#.to_owned(),
            r#"missing required argument "trip.legs[1].date""#.to_owned(),
        ]
    );
    assert!(provider.calls().is_empty());
}

#[tokio::test]
async fn null_arguments_are_rejected_not_replaced_by_an_empty_object() {
    let provider = Scripted::new("clock").tool("now", Behaviour::Answer).shared();
    let registry = ToolBox::new();
    registry.register(provider.clone(), true).unwrap();
    let execution = run(&registry, "now", Value::Null).await;
    assert_eq!(
        error(&execution.outcome),
        ToolError::InvalidArguments {
            tool: "now".into(),
            problems: vec!["arguments must be a JSON object, got null".into()],
        }
    );
    assert!(provider.calls().is_empty());
    assert_eq!(text(&run(&registry, "now", json!({})).await.outcome), "clock:now");
}

#[tokio::test]
async fn missing_roles_deny_the_call_with_a_message_for_the_model() {
    let provider = Scripted::new("sql")
        .tool("query", Behaviour::Answer)
        .tool("drop", Behaviour::Answer)
        .require("drop", &["admin", "dba"])
        .shared();
    let registry = ToolBox::new();
    registry.register(provider.clone(), true).unwrap();
    let analyst = ToolContext::new().with_user("u1").with_role("dba");

    let denied = registry.execute("drop", &json!({}), &analyst).await;
    let failure = error(&denied.outcome);
    assert_eq!(
        failure,
        ToolError::PermissionDenied {
            tool: "drop".into(),
            missing_roles: vec!["admin".into()],
        }
    );
    assert_eq!(
        failure.to_string(),
        "permission denied for `drop`: requires role(s) admin"
    );
    assert_eq!(denied.provider.as_deref(), Some("sql"));
    assert!(provider.calls().is_empty());

    // Roles are checked before arguments: no schema details leak to the unauthorised.
    let denied = registry.execute("drop", &Value::Null, &analyst).await;
    assert!(matches!(denied.outcome, Err(ToolError::PermissionDenied { .. })));

    let admin = analyst.clone().with_role("admin");
    assert_eq!(
        text(&registry.execute("drop", &json!({}), &admin).await.outcome),
        "sql:drop"
    );
    assert_eq!(
        text(&registry.execute("query", &json!({}), &analyst).await.outcome),
        "sql:query"
    );
}

#[tokio::test]
async fn require_roles_wraps_a_whole_provider() {
    let inner = Scripted::new("sql")
        .tool("query", Behaviour::Answer)
        .require("query", &["reader"]);
    let guarded: Arc<dyn ToolProvider> = Arc::new(RequireRoles::new(Arc::new(inner), ["analyst", "analyst"]));
    assert_eq!(guarded.required_roles("query"), ["analyst", "reader"]);
    let registry = ToolBox::builder().provider(guarded).build().unwrap();

    let reader = ToolContext::new().with_role("reader");
    let denied = registry.execute("query", &json!({}), &reader).await;
    assert_eq!(
        error(&denied.outcome),
        ToolError::PermissionDenied {
            tool: "query".into(),
            missing_roles: vec!["analyst".into()],
        }
    );
    let both = reader.with_role("analyst");
    assert_eq!(
        text(&registry.execute("query", &json!({}), &both).await.outcome),
        "sql:query"
    );
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_and_the_registry_keeps_working() {
    let registry = ToolBox::builder()
        .provider(
            Scripted::new("flaky")
                .tool("explode", Behaviour::Panic("index out of bounds: the len is 0"))
                .tool("fine", Behaviour::Answer)
                .shared(),
        )
        .build()
        .unwrap();
    let execution = run(&registry, "explode", json!({})).await;
    assert_eq!(
        error(&execution.outcome),
        ToolError::Panicked {
            tool: "explode".into(),
            message: "index out of bounds: the len is 0".into(),
        }
    );
    assert_eq!(execution.provider.as_deref(), Some("flaky"));

    // Nothing is poisoned: listing, toggling and running still work.
    assert_eq!(names(&registry), ["explode", "fine"]);
    assert_eq!(text(&run(&registry, "fine", json!({})).await.outcome), "flaky:fine");
    registry.set_enabled("flaky", false).unwrap();
    registry.set_enabled("flaky", true).unwrap();
    assert!(matches!(
        run(&registry, "explode", json!({})).await.outcome,
        Err(ToolError::Panicked { .. })
    ));
}

#[tokio::test]
async fn cancellation_stops_a_running_tool_promptly() {
    let provider = Scripted::new("slow")
        .tool("wait", Behaviour::Sleep(Duration::from_secs(600)))
        .shared();
    let registry = ToolBox::new();
    registry.register(provider, true).unwrap();
    let cancel = CancellationToken::new();
    let context = ToolContext::new().with_cancel(cancel.clone());
    let trigger = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });

    let started = Instant::now();
    let execution = registry.execute("wait", &json!({}), &context).await;
    assert_eq!(error(&execution.outcome), ToolError::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    trigger.await.unwrap();
}

#[tokio::test]
async fn an_already_cancelled_run_does_not_start_the_tool() {
    let provider = Scripted::new("p").tool("t", Behaviour::Answer).shared();
    let registry = ToolBox::new();
    registry.register(provider.clone(), true).unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let execution = registry
        .execute("t", &json!({}), &ToolContext::new().with_cancel(cancel))
        .await;
    assert_eq!(error(&execution.outcome), ToolError::Cancelled);
    assert!(provider.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_runs_too_long_times_out() {
    let registry = ToolBox::builder()
        .provider(
            Scripted::new("slow")
                .tool("wait", Behaviour::Sleep(Duration::from_secs(600)))
                .shared(),
        )
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    assert_eq!(registry.timeout(), Some(Duration::from_secs(2)));
    let execution = run(&registry, "wait", json!({})).await;
    let failure = error(&execution.outcome);
    assert_eq!(
        failure,
        ToolError::TimedOut {
            tool: "wait".into(),
            after: Duration::from_secs(2),
        }
    );
    assert_eq!(failure.to_string(), "tool `wait` timed out after 2000 ms");
}

#[tokio::test]
async fn hook_attributes_are_returned_with_the_execution() {
    let (registry, _) = weather_registry();
    let execution = run(&registry, "get_weather", json!({"location": "Oslo", "unit": "celsius"})).await;
    assert_eq!(text(&execution.outcome), "travel:get_weather");
    assert_eq!(
        execution.attributes,
        vec![
            ("test.tool".to_owned(), json!("get_weather")),
            ("test.argument_count".to_owned(), json!(2)),
            ("test.ok".to_owned(), json!(true)),
        ]
    );

    // A rejected call still gets the completion hook, not the span hook.
    let execution = run(&registry, "get_weather", json!({})).await;
    assert_eq!(execution.attributes, vec![("test.ok".to_owned(), json!(false))]);
}

#[tokio::test]
async fn a_tool_failure_is_returned_as_is() {
    let registry = ToolBox::builder()
        .provider(
            Scripted::new("p")
                .tool("t", Behaviour::Fail("city not found: Atlantis"))
                .shared(),
        )
        .build()
        .unwrap();
    let execution = run(&registry, "t", json!({})).await;
    assert_eq!(error(&execution.outcome), ToolError::failed("city not found: Atlantis"));
    assert!(execution.duration < Duration::from_secs(10));
}

#[tokio::test]
async fn a_tool_with_an_invalid_schema_is_listed_but_never_runs() {
    let provider = Scripted::new("broken")
        .tool_with_schema("bad", json!({"type": "objekt"}), Behaviour::Answer)
        .tool("good", Behaviour::Answer)
        .shared();
    let registry = ToolBox::new();
    registry.register(provider.clone(), true).unwrap();

    let invalid = registry.invalid_schemas();
    assert_eq!(invalid.len(), 1);
    assert_eq!((invalid[0].0.as_str(), invalid[0].1.as_str()), ("broken", "bad"));

    let execution = run(&registry, "bad", json!({})).await;
    let ToolError::Failed { message } = error(&execution.outcome) else {
        panic!("expected a failure");
    };
    assert!(
        message.contains("tool `bad` cannot be used: its input schema is invalid"),
        "{message}"
    );
    assert!(provider.calls().is_empty());
    assert_eq!(text(&run(&registry, "good", json!({})).await.outcome), "broken:good");
}

#[tokio::test]
async fn the_registry_is_shareable_across_tasks() {
    let registry = Arc::new(
        ToolBox::builder()
            .provider(
                Scripted::new("p")
                    .tool("t", Behaviour::Sleep(Duration::from_millis(5)))
                    .shared(),
            )
            .build()
            .unwrap(),
    );
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let registry = Arc::clone(&registry);
            tokio::spawn(async move { registry.execute("t", &json!({}), &ToolContext::new()).await })
        })
        .collect();
    // Toggling while calls are in flight is safe; no lock is held across a call.
    registry.set_enabled("p", true).unwrap();
    for task in tasks {
        assert_eq!(text(&task.await.unwrap().outcome), "p:t");
    }
    let debug = format!("{registry:?}");
    assert!(debug.contains(r#""p": enabled ["t"]"#), "{debug}");
}

#[test]
fn cache_policies_are_read_through_the_registry_for_enabled_tools_only() {
    use agent_tools::{CachePolicy, NoArgs, ToolSet, TypedTool};
    let tool = |name: &str| TypedTool::new(name, "", |_: NoArgs, _: ToolContext| async { Ok::<_, ToolError>("x") });
    let set = ToolSet::new("kb", "Knowledge base")
        .tool(tool("lookup"))
        .tool(tool("write"))
        .cache_results("lookup", Duration::from_secs(1))
        .cache_results("lookup", Duration::from_secs(60));
    let guarded: Arc<dyn ToolProvider> = Arc::new(RequireRoles::new(Arc::new(set), ["reader"]));
    let registry = ToolBox::builder().provider(guarded).build().unwrap();
    let minute = Some(CachePolicy::new(Duration::from_secs(60)));
    assert_eq!(registry.cache_policy("lookup"), minute);
    assert_eq!(registry.cache_policy("write"), None);
    assert_eq!(registry.cache_policy("missing"), None);
    registry.set_enabled("kb", false).unwrap();
    assert_eq!(registry.cache_policy("lookup"), None);
}
