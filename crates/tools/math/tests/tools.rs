//! The `math` provider through a real registry: schemas, results and errors
//! as the model sees them.

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::sync::Arc;

use agent_core::{ToolContext, ToolRegistry};
use agent_tools::ToolBox;
use serde_json::{Value, json};

fn registry() -> ToolBox {
    let registry = ToolBox::new();
    registry
        .register(Arc::new(agent_tools_math::tool_set()), true)
        .expect("registers");
    registry
}

async fn call(registry: &ToolBox, tool: &str, arguments: Value) -> Result<Value, String> {
    let run = registry.execute(tool, &arguments, &ToolContext::new()).await;
    match run.outcome {
        Ok(output) => Ok(serde_json::from_str(&output.to_content()).expect("JSON output")),
        Err(error) => Err(error.to_string()),
    }
}

#[test]
fn provider_lists_both_tools_with_schemas() {
    let registry = registry();
    assert_eq!(registry.provider_names(), ["math"]);
    let definitions = registry.definitions();
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["calculator", "arithmetic"]);
    assert_eq!(definitions[0].input_schema["required"], json!(["expression"]));
    assert_eq!(
        definitions[1].input_schema["properties"]["operation"]["enum"],
        json!(["add", "subtract", "multiply", "divide"])
    );
    assert!(registry.invalid_schemas().is_empty());
}

#[test]
fn both_tools_are_declared_idempotent() {
    let registry = registry();
    for tool in ["calculator", "arithmetic"] {
        let policy = registry.cache_policy(tool).map(|policy| policy.ttl);
        assert_eq!(policy, Some(agent_tools_math::RESULT_TTL), "{tool}");
    }
}

#[tokio::test]
async fn calculator_returns_expression_and_result() {
    let registry = registry();
    assert_eq!(
        call(&registry, "calculator", json!({"expression": "1234 * 5678"})).await,
        Ok(json!({"expression": "1234 * 5678", "result": 7_006_652}))
    );
    assert_eq!(
        call(&registry, "calculator", json!({"expression": "0.1 + 0.2"})).await,
        Ok(json!({"expression": "0.1 + 0.2", "result": 0.3}))
    );
    assert_eq!(
        call(&registry, "calculator", json!({"expression": "sqrt(2)^2"})).await,
        Ok(json!({"expression": "sqrt(2)^2", "result": 2}))
    );
}

#[tokio::test]
async fn calculator_errors_reach_the_model() {
    let registry = registry();
    let error = call(&registry, "calculator", json!({"expression": "10 / (5 - 5)"}))
        .await
        .unwrap_err();
    assert_eq!(error, "division by zero at column 4: 10 cannot be divided by zero");
    let error = call(&registry, "calculator", json!({"expression": "foo(2)"}))
        .await
        .unwrap_err();
    assert!(error.starts_with("unknown name at column 1: \"foo\" is not a known function or constant"));
    let error = call(&registry, "calculator", json!({})).await.unwrap_err();
    assert!(error.contains("expression"), "{error}");
}

#[tokio::test]
async fn arithmetic_applies_one_operation() {
    let registry = registry();
    assert_eq!(
        call(&registry, "arithmetic", json!({"operation": "add", "a": 2, "b": 3.5})).await,
        Ok(json!({"operation": "add", "a": 2, "b": 3.5, "result": 5.5}))
    );
    assert_eq!(
        call(
            &registry,
            "arithmetic",
            json!({"operation": "subtract", "a": 2, "b": 3})
        )
        .await,
        Ok(json!({"operation": "subtract", "a": 2, "b": 3, "result": -1}))
    );
    let error = call(&registry, "arithmetic", json!({"operation": "divide", "a": 1, "b": 0}))
        .await
        .unwrap_err();
    assert!(error.starts_with("division by zero"), "{error}");
    let error = call(&registry, "arithmetic", json!({"operation": "power", "a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(
        error.contains(r#"expected one of ["add","subtract","multiply","divide"]"#),
        "{error}"
    );
}

#[tokio::test]
async fn invented_arguments_are_refused_before_the_tool_runs() {
    let registry = registry();
    // Both calls are otherwise valid and would succeed; the validation
    // message (not the decoder's) shows the tool never ran.
    let cases = [
        (
            "calculator",
            json!({"expression": "1 + 1", "precision": 2}),
            "precision",
        ),
        ("arithmetic", json!({"operation": "add", "a": 1, "b": 2, "c": 3}), "c"),
    ];
    agent_testing::assert_invented_arguments_refused(&registry, &cases).await;
}
