//! JSON Schema -> Gemini schema subset over schemars-generated schemas:
//! nested structs, unit and tagged enums, `Option`s, maps and recursion.
#![allow(clippy::unwrap_used, dead_code)]

use agent_provider_gemini::mapper::schema::{SchemaOptions, to_gemini_schema};
use schemars::JsonSchema;
use serde_json::{Value, json};

fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap()
}

fn gemini<T: JsonSchema>() -> Value {
    to_gemini_schema(&schema_of::<T>(), SchemaOptions::default()).unwrap()
}

/// A point on a map.
#[derive(JsonSchema)]
struct Point {
    /// Latitude in degrees.
    lat: f64,
    lon: f32,
}

#[derive(JsonSchema)]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

#[derive(JsonSchema)]
enum Action {
    Stop,
    Go { speed: u8 },
}

/// A trip to plan.
#[derive(JsonSchema)]
struct Trip {
    /// Where to go.
    destination: String,
    stops: Vec<Point>,
    /// Where the trip starts, if not at home.
    start: Option<Point>,
    unit: Option<Unit>,
    nights: u32,
    budget: i64,
    note: Option<String>,
    tags: std::collections::BTreeMap<String, String>,
}

#[derive(JsonSchema)]
struct Drawing {
    shapes: Vec<Shape>,
    next: Action,
}

#[derive(JsonSchema)]
struct Comment {
    text: String,
    replies: Vec<Comment>,
}

#[test]
fn nested_structs_options_and_unit_enums() {
    let translated = gemini::<Trip>();
    insta::assert_json_snapshot!("schema_trip", translated);
    let expected = json!({"type": "OBJECT", "title": "Trip", "description": "A trip to plan.", "properties": {"destination": {"type": "STRING", "description": "Where to go."}, "stops": {"type": "ARRAY", "items": {"type": "OBJECT", "description": "A point on a map.", "properties": {"lat": {"type": "NUMBER", "format": "double", "description": "Latitude in degrees."}, "lon": {"type": "NUMBER", "format": "float"}}, "required": ["lat", "lon"]}}, "start": {"type": "OBJECT", "description": "Where the trip starts, if not at home.", "nullable": true, "properties": {"lat": {"type": "NUMBER", "format": "double", "description": "Latitude in degrees."}, "lon": {"type": "NUMBER", "format": "float"}}, "required": ["lat", "lon"]}, "unit": {"type": "STRING", "nullable": true, "enum": ["Celsius", "Fahrenheit"]}, "nights": {"type": "INTEGER", "minimum": 0}, "budget": {"type": "INTEGER", "format": "int64"}, "note": {"type": "STRING", "nullable": true}, "tags": {"type": "OBJECT"}}, "required": ["destination", "stops", "nights", "budget", "tags"]});
    assert_eq!(translated, expected);
}

#[test]
fn tagged_and_externally_tagged_enums() {
    let translated = gemini::<Drawing>();
    insta::assert_json_snapshot!("schema_drawing", translated);
    let expected = json!({"type": "OBJECT", "title": "Drawing", "properties": {"shapes": {"type": "ARRAY", "items": {"anyOf": [{"type": "OBJECT", "properties": {"kind": {"type": "STRING", "enum": ["circle"]}, "radius": {"type": "NUMBER", "format": "double"}}, "required": ["kind", "radius"]}, {"type": "OBJECT", "properties": {"kind": {"type": "STRING", "enum": ["square"]}, "side": {"type": "NUMBER", "format": "double"}}, "required": ["kind", "side"]}]}}, "next": {"anyOf": [{"type": "STRING", "enum": ["Stop"]}, {"type": "OBJECT", "properties": {"Go": {"type": "OBJECT", "properties": {"speed": {"type": "INTEGER", "minimum": 0, "maximum": 255}}, "required": ["speed"]}}, "required": ["Go"]}]}}, "required": ["shapes", "next"]});
    assert_eq!(translated, expected);
}

#[test]
fn a_recursive_type_is_refused_naming_the_reference() {
    let error = to_gemini_schema(&schema_of::<Comment>(), SchemaOptions::default()).unwrap_err();
    assert!(error.contains("recursive"), "{error}");
    assert!(error.contains("#/$defs/Comment") || error.contains("\"#\""), "{error}");
}

#[test]
fn a_schemars_tool_and_response_schema_in_a_request_body() {
    use agent_core::{ChatRequest, Message, ResponseFormat, ToolDefinition};
    use agent_provider_gemini::BodyOptions;
    use agent_provider_gemini::mapper::build_request_json;

    let request = ChatRequest {
        response_format: Some(ResponseFormat {
            name: "drawing".into(),
            schema: schema_of::<Drawing>(),
            strict: true,
        }),
        ..ChatRequest::new(vec![Message::user("Plan a trip, then draw it.")]).with_tools(vec![ToolDefinition::new(
            "plan_trip",
            "Plan a trip.",
            schema_of::<Trip>(),
        )])
    };
    let body = build_request_json(&request, &BodyOptions::new("gemini-2.5-flash")).unwrap();
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parameters"],
        gemini::<Trip>()
    );
    let response_schema = &body["generationConfig"]["responseSchema"];
    assert_eq!(
        response_schema["propertyOrdering"],
        json!(["shapes", "next"]),
        "structured output keeps the declared order"
    );
    let text = body.to_string();
    for dropped in [
        "$schema",
        "$defs",
        "$ref",
        "additionalProperties",
        "const",
        "oneOf",
        "uint",
    ] {
        assert!(!text.contains(dropped), "{dropped} is not sent: {text}");
    }
    insta::assert_json_snapshot!("request_schemars_tool_and_response_schema", body);
}
