//! Shared by the integration tests: paths to the official wire examples in
//! ../shared/wire/openai (read in place, never copied) and the canonical
//! conversations whose request bodies are snapshotted and schema-checked.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use agent_core::{
    AssistantMessage, ChatRequest, Message, ReasoningBlock, ResponseFormat, ToolCall, ToolChoice, ToolDefinition,
    ToolResult,
};
use agent_provider_openai::{MaxTokensField, RequestOptions, SystemRole};
use serde_json::{Value, json};

/// The official OpenAI wire examples.
pub const WIRE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../../shared/wire/openai");

pub fn wire_path(relative: &str) -> PathBuf {
    Path::new(WIRE_DIR).join(relative)
}

pub fn read_wire(relative: &str) -> Vec<u8> {
    let path = wire_path(relative);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Files of `dir` (relative to the wire dir) whose names end in `suffix`, sorted.
pub fn wire_files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let path = wire_path(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix))
        })
        .collect();
    files.sort();
    files
}

/// A file name without `suffix`.
pub fn stem(path: &Path, suffix: &str) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.strip_suffix(suffix).unwrap_or(name).to_owned()
}

pub fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "Current weather for a city.",
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\"."},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city"],
            "additionalProperties": false
        }),
    )
}

pub fn flight_tool() -> ToolDefinition {
    ToolDefinition::new(
        "search_flights",
        "Search flights between two airports.",
        json!({
            "type": "object",
            "properties": {
                "route": {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
                        "to": {"type": "string", "pattern": "^[A-Z]{3}$"}
                    },
                    "required": ["from", "to"]
                },
                "passengers": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "age": {"type": "integer", "minimum": 0, "maximum": 120},
                            "cabin": {"type": "string", "enum": ["economy", "business", "first"]}
                        },
                        "required": ["age"]
                    },
                    "minItems": 1
                },
                "flexible_dates": {"type": "boolean"}
            },
            "required": ["route", "passengers"]
        }),
    )
}

/// The canonical conversations: name, request, options.
pub fn canonical_requests() -> Vec<(&'static str, ChatRequest, RequestOptions)> {
    let options = RequestOptions::new("gpt-4o-mini");
    vec![
        (
            "plain_text",
            ChatRequest::new(vec![Message::user("Hello!")]),
            options.clone(),
        ),
        (
            "system_prompt",
            ChatRequest {
                max_tokens: Some(256),
                temperature: Some(0.2),
                stop: vec!["\n\nUser:".into()],
                ..ChatRequest::new(vec![Message::user("Summarise the plot of Hamlet in one line.")])
                    .with_system("You are a terse literary assistant.")
            },
            options.clone(),
        ),
        (
            "tools_nested_schemas",
            ChatRequest {
                tool_choice: ToolChoice::Tool {
                    name: "search_flights".into(),
                },
                parallel_tool_calls: Some(false),
                ..ChatRequest::new(vec![Message::user("Two adults, Paris to Tokyo, business class.")])
                    .with_system("You book travel.")
                    .with_tools(vec![weather_tool(), flight_tool()])
            },
            options.clone(),
        ),
        (
            "parallel_tool_calls_with_results",
            parallel_calls_request(),
            options.clone(),
        ),
        (
            "multi_turn_developer_role",
            multi_turn_request(),
            RequestOptions {
                system_role: SystemRole::Developer,
                ..RequestOptions::new("o3-mini")
            },
        ),
        (
            "json_schema_response_format",
            ChatRequest {
                response_format: Some(ResponseFormat {
                    name: "city_weather".into(),
                    schema: json!({
                        "type": "object",
                        "properties": {
                            "city": {"type": "string"},
                            "temperature": {"type": "number"},
                            "units": {"type": "string", "enum": ["c", "f"]}
                        },
                        "required": ["city", "temperature", "units"],
                        "additionalProperties": false
                    }),
                    strict: true,
                }),
                ..ChatRequest::new(vec![Message::user("What's the weather like in SF?")])
            },
            options.clone(),
        ),
        (
            "streamed_with_usage",
            ChatRequest {
                max_tokens: Some(64),
                ..ChatRequest::new(vec![Message::user("Count to three.")])
            },
            options.clone().streaming(),
        ),
        (
            "compatible_server_max_tokens",
            ChatRequest {
                max_tokens: Some(512),
                tool_choice: ToolChoice::Required,
                ..ChatRequest::new(vec![Message::user("Weather in Oslo?")]).with_tools(vec![weather_tool()])
            },
            RequestOptions {
                max_tokens_field: MaxTokensField::MaxTokens,
                ..RequestOptions::new("qwen2.5-7b-instruct")
            },
        ),
    ]
}

/// An assistant turn with two parallel calls (the second with malformed
/// arguments, kept raw) and their results, the second an error.
pub fn parallel_calls_request() -> ChatRequest {
    let calls = vec![
        ToolCall::new("call_paris", "get_weather", json!({"city": "Paris", "unit": "celsius"})),
        ToolCall::from_argument_text("call_tokyo", "get_weather", "{\"city\": \"Tokyo\", \"unit\": celsius}"),
    ];
    ChatRequest::new(vec![
        Message::user("Weather in Paris and Tokyo?"),
        Message::Assistant(AssistantMessage::with_tool_calls("Checking both cities.", calls)),
        Message::tool(ToolResult::success(
            "call_paris",
            "get_weather",
            r#"{"temp_c":18,"sky":"cloudy"}"#,
        )),
        Message::tool(ToolResult::error(
            "call_tokyo",
            "get_weather",
            "invalid arguments for `get_weather`: the arguments are not valid JSON",
        )),
    ])
    .with_system("You are a travel assistant.")
    .with_tools(vec![weather_tool()])
}

pub fn multi_turn_request() -> ChatRequest {
    let reasoning = AssistantMessage {
        reasoning: vec![ReasoningBlock {
            text: "The user wants a conversion.".into(),
            ..ReasoningBlock::default()
        }],
        ..AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new(
                "call_1",
                "convert",
                json!({"amount": 100, "from": "EUR", "to": "JPY"}),
            )],
        )
    };
    ChatRequest::new(vec![
        Message::user("Hi, I'm going to Japan."),
        Message::assistant("Great! How can I help you plan?"),
        Message::user("How much is 100 EUR in yen?"),
        Message::Assistant(reasoning),
        Message::tool(ToolResult::success("call_1", "convert", "16250 JPY")),
        Message::assistant("100 EUR is about 16,250 JPY."),
        Message::system("Answer in one sentence from now on."),
        Message::user("And 50 EUR?"),
    ])
    .with_system("You are a helpful travel assistant.")
    .with_tools(vec![ToolDefinition::new(
        "convert",
        "Convert between currencies.",
        json!({"type": "object", "properties": {"amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}}, "required": ["amount", "from", "to"]}),
    )])
}

/// The body as JSON (keys in wire order).
pub fn body_json(request: &ChatRequest, options: &RequestOptions) -> Value {
    let bytes = agent_provider_openai::mapper::build_request_body(request, options).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Decodes a whole SSE body, fed in the given pieces, through the SSE
/// framing and the [`StreamMapper`](agent_provider_openai::mapper::StreamMapper).
pub fn decode_sse(pieces: &[&[u8]]) -> Result<Vec<agent_core::StreamEvent>, agent_core::LlmError> {
    let mut decoder = agent_http::sse::SseDecoder::new();
    let mut mapper = agent_provider_openai::mapper::StreamMapper::new();
    let mut frames = Vec::new();
    let mut events = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut frames);
        for frame in frames.drain(..) {
            mapper.push(&frame.data, &mut events)?;
        }
    }
    decoder.finish(&mut frames);
    for frame in frames.drain(..) {
        mapper.push(&frame.data, &mut events)?;
    }
    mapper.finish(&mut events)?;
    Ok(events)
}

/// Assembles events into a response.
pub fn assemble(events: &[agent_core::StreamEvent]) -> Result<agent_core::ChatResponse, agent_core::LlmError> {
    let mut accumulator = agent_core::StreamAccumulator::new();
    for event in events {
        accumulator.push(event.clone())?;
    }
    accumulator.finish()
}
