//! Typed tools: generated schemas, typed arguments, outputs, tool sets.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use agent_core::{ToolContext, ToolError, ToolOutput, ToolProvider, ToolRegistry};
use agent_tools::{Json, NoArgs, Tool, ToolBox, ToolSet, TypedTool, tool_schema};
use common::{error, text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Not shown to the model.
#[derive(Debug, Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name, e.g. "Paris".
    location: String,
    /// Temperature unit; celsius when omitted.
    unit: Option<Unit>,
    /// How many days to forecast.
    days: u8,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Leg {
    /// Departure date, YYYY-MM-DD.
    #[allow(dead_code)]
    date: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Trip {
    legs: Vec<Leg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct BookArgs {
    trip: Trip,
}

#[derive(Serialize)]
struct Forecast {
    location: String,
    days: u8,
    unit: &'static str,
}

fn weather_tool() -> TypedTool {
    TypedTool::new(
        "get_weather",
        "Weather forecast for a city",
        |args: WeatherArgs, context: ToolContext| async move {
            if args.location == "Atlantis" {
                return Err(ToolError::failed("unknown city: Atlantis"));
            }
            let unit = match args.unit.unwrap_or(Unit::Celsius) {
                Unit::Celsius => "celsius",
                Unit::Fahrenheit => "fahrenheit",
            };
            let _ = context.user_id;
            Ok(Json(Forecast {
                location: args.location,
                days: args.days,
                unit,
            }))
        },
    )
}

#[test]
fn schema_comes_from_the_type_with_descriptions_and_required_fields() {
    let tool = weather_tool();
    let schema = &tool.definition().input_schema;
    assert_eq!(tool.definition().name, "get_weather");
    assert_eq!(tool.definition().description, "Weather forecast for a city");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["location"]["type"], "string");
    assert_eq!(
        schema["properties"]["location"]["description"],
        "City name, e.g. \"Paris\"."
    );
    assert_eq!(
        schema["properties"]["unit"]["description"],
        "Temperature unit; celsius when omitted."
    );
    assert_eq!(
        schema["properties"]["days"]["description"],
        "How many days to forecast."
    );
    // Option fields are not required.
    assert_eq!(schema["required"], json!(["location", "days"]));
    // No meta-schema or title noise at the root.
    assert!(schema.get("$schema").is_none());
    assert!(schema.get("title").is_none());
}

#[test]
fn nested_types_are_inlined() {
    let schema = tool_schema::<BookArgs>();
    assert!(schema.get("$defs").is_none(), "{schema}");
    assert_eq!(
        schema["properties"]["trip"]["properties"]["legs"]["items"]["properties"]["date"]["description"],
        "Departure date, YYYY-MM-DD."
    );
}

#[test]
fn no_args_is_an_empty_object_schema() {
    assert_eq!(tool_schema::<NoArgs>(), json!({"type": "object", "properties": {}}));
}

#[tokio::test]
async fn typed_tool_receives_typed_arguments_and_returns_json() {
    let registry = ToolBox::builder()
        .provider(Arc::new(ToolSet::new("travel", "Travel tools").tool(weather_tool())))
        .build()
        .unwrap();
    let execution = registry
        .execute(
            "get_weather",
            &json!({"location": "Oslo", "unit": "fahrenheit", "days": 3}),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(
        execution.outcome,
        Ok(ToolOutput::Json(
            json!({"location": "Oslo", "days": 3, "unit": "fahrenheit"})
        ))
    );
    // Optional argument omitted, or sent as null.
    for arguments in [
        json!({"location": "Oslo", "days": 1}),
        json!({"location": "Oslo", "unit": null, "days": 1}),
    ] {
        let execution = registry.execute("get_weather", &arguments, &ToolContext::new()).await;
        assert_eq!(
            text(&execution.outcome),
            r#"{"location":"Oslo","days":1,"unit":"celsius"}"#
        );
    }
    // The tool's own failure comes through unchanged.
    let execution = registry
        .execute(
            "get_weather",
            &json!({"location": "Atlantis", "days": 1}),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(error(&execution.outcome), ToolError::failed("unknown city: Atlantis"));
}

#[tokio::test]
async fn typed_tool_arguments_are_validated_against_the_generated_schema() {
    let registry = ToolBox::builder()
        .provider(Arc::new(ToolSet::new("travel", "Travel tools").tool(weather_tool())))
        .build()
        .unwrap();
    let execution = registry
        .execute(
            "get_weather",
            &json!({"location": "Oslo", "unit": "kelvin", "days": "five"}),
            &ToolContext::new(),
        )
        .await;
    let message = error(&execution.outcome).to_string();
    assert!(
        message.contains(r#""unit": expected one of ["celsius","fahrenheit",null], got "kelvin""#),
        "{message}"
    );
    assert!(message.contains(r#""days": expected integer, got "five""#), "{message}");

    let execution = registry
        .execute(
            "get_weather",
            &json!({"location": "Oslo", "days": 300}),
            &ToolContext::new(),
        )
        .await;
    let message = error(&execution.outcome).to_string();
    assert!(message.contains(r#""days": must be at most 255, got 300"#), "{message}");
}

#[tokio::test]
async fn decoding_errors_name_the_field() {
    // Called directly, without the registry's schema check, serde reports the path.
    let book = TypedTool::new("book", "Books a trip", |args: BookArgs, _: ToolContext| async move {
        Ok::<_, ToolError>(format!("{} legs", args.trip.legs.len()))
    });
    let failure = book
        .call(&json!({"trip": {"legs": [{"date": 20_250_101}]}}), &ToolContext::new())
        .await
        .unwrap_err();
    let ToolError::InvalidArguments { tool, problems } = failure else {
        panic!("expected invalid arguments");
    };
    assert_eq!(tool, "book");
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with(r#""trip.legs[0].date": invalid type: integer `20250101`"#),
        "{problems:?}"
    );

    let failure = book.call(&json!({}), &ToolContext::new()).await.unwrap_err();
    assert_eq!(
        failure.to_string(),
        "invalid arguments for `book`: arguments: missing field `trip`"
    );
    assert_eq!(
        text(&book.call(&json!({"trip": {"legs": []}}), &ToolContext::new()).await),
        "0 legs"
    );
}

/// A stateful tool defined as a type.
struct Counter {
    calls: AtomicU32,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How much to add.
    by: u32,
}

impl Tool for Counter {
    type Args = CountArgs;
    type Output = String;

    const NAME: &'static str = "count";

    fn description(&self) -> String {
        "Adds to a counter and returns the total".into()
    }

    fn required_roles(&self) -> Vec<String> {
        vec!["counter".into()]
    }

    async fn call(&self, args: CountArgs, context: &ToolContext) -> Result<String, ToolError> {
        let total = self.calls.fetch_add(args.by, Ordering::SeqCst) + args.by;
        Ok(format!(
            "{} -> {total}",
            context.user_id.as_deref().unwrap_or("anonymous")
        ))
    }
}

#[tokio::test]
async fn trait_tools_keep_state_and_their_roles() {
    let set = ToolSet::new("counting", "Counters").tool(Counter {
        calls: AtomicU32::new(0),
    });
    assert_eq!(set.required_roles("count"), ["counter"]);
    assert_eq!(
        set.tools()[0].input_schema["properties"]["by"]["description"],
        "How much to add."
    );
    let registry = ToolBox::builder().provider(Arc::new(set)).build().unwrap();

    let anonymous = registry.execute("count", &json!({"by": 1}), &ToolContext::new()).await;
    assert!(matches!(anonymous.outcome, Err(ToolError::PermissionDenied { .. })));

    let context = ToolContext::new().with_user("ada").with_role("counter");
    assert_eq!(
        text(&registry.execute("count", &json!({"by": 2}), &context).await.outcome),
        "ada -> 2"
    );
    assert_eq!(
        text(&registry.execute("count", &json!({"by": 3}), &context).await.outcome),
        "ada -> 5"
    );
}

#[tokio::test]
async fn tool_set_roles_hooks_and_order() {
    let set = ToolSet::new("admin", "Maintenance")
        .tool(TypedTool::new(
            "vacuum",
            "Compacts",
            |_: NoArgs, _: ToolContext| async { Ok::<_, ToolError>("vacuumed") },
        ))
        .tool(
            TypedTool::new("reindex", "Rebuilds indexes", |_: NoArgs, _: ToolContext| async {
                Ok::<_, ToolError>(json!({"rebuilt": 3}))
            })
            .require_roles(["dba", "dba"]),
        )
        .require_roles(["admin"])
        .with_span_attributes(|tool, _| vec![("admin.tool".into(), json!(tool))])
        .with_completion_attributes(|_, outcome| vec![("admin.ok".into(), json!(outcome.is_ok()))]);
    assert_eq!(set.len(), 2);
    assert!(!set.is_empty());
    assert_eq!(set.typed_tools()[1].required_roles(), ["dba"]);
    assert_eq!(set.required_roles("vacuum"), ["admin"]);
    assert_eq!(set.required_roles("reindex"), ["admin", "dba"]);
    assert_eq!(
        set.tools().into_iter().map(|d| d.name).collect::<Vec<_>>(),
        ["vacuum", "reindex"]
    );
    // Unknown names inside the set (only reachable when called directly).
    assert!(matches!(
        set.execute("nope", &json!({}), &ToolContext::new()).await,
        Err(ToolError::UnknownTool { .. })
    ));

    let registry = ToolBox::builder().provider(Arc::new(set)).build().unwrap();
    let context = ToolContext::new().with_role("admin");
    let execution = registry.execute("vacuum", &json!({"extra": true}), &context).await;
    assert_eq!(text(&execution.outcome), "vacuumed");
    assert_eq!(
        execution.attributes,
        vec![
            ("admin.tool".to_owned(), json!("vacuum")),
            ("admin.ok".to_owned(), json!(true))
        ]
    );
    let execution = registry.execute("reindex", &json!({}), &context).await;
    assert_eq!(
        error(&execution.outcome).to_string(),
        "permission denied for `reindex`: requires role(s) dba"
    );
    let execution = registry.execute("reindex", &json!({}), &context.with_role("dba")).await;
    assert_eq!(execution.outcome, Ok(ToolOutput::Json(json!({"rebuilt": 3}))));
}

#[test]
fn a_tool_set_with_a_name_twice_is_rejected_at_registration() {
    let set = ToolSet::new("dup", "Duplicates")
        .tool(TypedTool::new("x", "one", |_: NoArgs, _: ToolContext| async {
            Ok::<_, ToolError>("1")
        }))
        .tool(TypedTool::new("x", "two", |_: NoArgs, _: ToolContext| async {
            Ok::<_, ToolError>("2")
        }));
    let result = ToolBox::builder().provider(Arc::new(set)).build();
    assert!(matches!(result, Err(agent_core::RegistryError::DuplicateTool { .. })));
}

#[test]
fn hand_tuned_schema_replaces_the_generated_one() {
    let tool =
        weather_tool().with_input_schema(json!({"type": "object", "properties": {"location": {"type": "string"}}}));
    assert_eq!(
        tool.definition().input_schema["properties"].as_object().unwrap().len(),
        1
    );
    assert_eq!(tool.name(), "get_weather");
    assert!(format!("{tool:?}").contains("get_weather"));
}
