//! The canonical conversations every provider's request mapper is
//! snapshot-tested on, so the four providers can be compared body by body.
//!
//! Each conversation is a provider-neutral [`ChatRequest`]; a provider's test
//! picks its own request options (model, streaming, ...) for each name and
//! snapshots the body its mapper builds, e.g. `request_plain_text`.
//!
//! ```
//! use agent_testing::canonical;
//!
//! let names: Vec<&str> = canonical::conversations().iter().map(|(name, _)| *name).collect();
//! assert!(names.contains(&"parallel_tool_calls_with_results"));
//! assert!(canonical::conversation("prompt_caching").unwrap().prompt_caching);
//! ```

use agent_core::{
    AssistantMessage, ChatRequest, Message, ReasoningBlock, ResponseFormat, ToolCall, ToolChoice, ToolDefinition,
    ToolResult,
};
use serde_json::json;

/// The names of [`conversations`], in order.
pub const NAMES: [&str; 8] = [
    "plain_text",
    "system_prompt",
    "tools_nested_schemas",
    "parallel_tool_calls_with_results",
    "multi_turn",
    "json_schema_response_format",
    "max_tokens_required_tool",
    "prompt_caching",
];

/// Every canonical conversation with its name (see [`NAMES`]):
///
/// - `plain_text`: one user message, nothing else.
/// - `system_prompt`: system prompt, `max_tokens`, temperature, a stop sequence.
/// - `tools_nested_schemas`: two tools (nested objects, arrays, enums,
///   patterns), one named tool forced, parallel calls off.
/// - `parallel_tool_calls_with_results`: an assistant turn with text and two
///   calls (the second with malformed arguments), both results, the second an error.
/// - `multi_turn`: several turns with a reasoning block, a tool round, a
///   mid-conversation system message and a final user question.
/// - `json_schema_response_format`: a strict JSON-schema reply format.
/// - `max_tokens_required_tool`: a token limit and `tool_choice = required`.
/// - `prompt_caching`: system prompt, tools and a tool round, with
///   [`ChatRequest::prompt_caching`] on.
pub fn conversations() -> Vec<(&'static str, ChatRequest)> {
    vec![
        ("plain_text", ChatRequest::new(vec![Message::user("Hello!")])),
        (
            "system_prompt",
            ChatRequest {
                max_tokens: Some(256),
                temperature: Some(0.2),
                stop: vec!["\n\nUser:".into()],
                ..ChatRequest::new(vec![Message::user("Summarise the plot of Hamlet in one line.")])
                    .with_system("You are a terse literary assistant.")
            },
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
        ),
        ("parallel_tool_calls_with_results", parallel_calls_request()),
        ("multi_turn", multi_turn_request()),
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
        ),
        (
            "max_tokens_required_tool",
            ChatRequest {
                max_tokens: Some(512),
                tool_choice: ToolChoice::Required,
                ..ChatRequest::new(vec![Message::user("Weather in Oslo?")]).with_tools(vec![weather_tool()])
            },
        ),
        ("prompt_caching", prompt_caching_request()),
    ]
}

/// The names of [`multimodal_conversations`], in order.
pub const MULTIMODAL_NAMES: [&str; 4] = [
    "image_in_user_message",
    "pdf_in_user_message",
    "image_from_tool",
    "audio_in_user_message",
];

/// The canonical conversations with media (see [`MULTIMODAL_NAMES`]):
///
/// - `image_in_user_message`: a question with two images, one inline (a
///   PNG, read at high detail) and one by URL.
/// - `pdf_in_user_message`: a question about an attached PDF.
/// - `image_from_tool`: a tool that returned a chart image with its text,
///   then a question about it.
/// - `audio_in_user_message`: a question about a WAV recording (which
///   most providers refuse).
pub fn multimodal_conversations() -> Vec<(&'static str, ChatRequest)> {
    use crate::media;

    let image_result = ToolResult {
        attachments: vec![media::png()],
        ..ToolResult::success("call_chart", "render_chart", "Rendered the sales chart (1 image).")
    };
    vec![
        (
            "image_in_user_message",
            ChatRequest::new(vec![Message::user_with(
                "What is the difference between these two pictures?",
                vec![
                    media::png().with_detail(agent_core::ImageDetail::High),
                    media::png_url(),
                ],
            )]),
        ),
        (
            "pdf_in_user_message",
            ChatRequest::new(vec![Message::user_with(
                "Summarise this report in one line.",
                vec![media::pdf()],
            )]),
        ),
        (
            "image_from_tool",
            ChatRequest::new(vec![
                Message::user("Show me the sales chart and describe it."),
                Message::Assistant(AssistantMessage::with_tool_calls(
                    "",
                    vec![ToolCall::new("call_chart", "render_chart", json!({"metric": "sales"}))],
                )),
                Message::tool(image_result),
            ])
            .with_tools(vec![ToolDefinition::new(
                "render_chart",
                "Render a chart of a metric as an image.",
                json!({"type": "object", "properties": {"metric": {"type": "string"}}, "required": ["metric"]}),
            )]),
        ),
        (
            "audio_in_user_message",
            ChatRequest::new(vec![Message::user_with(
                "What is said in this recording?",
                vec![media::wav()],
            )]),
        ),
    ]
}

/// The canonical conversation with media called `name`, if there is one.
pub fn multimodal_conversation(name: &str) -> Option<ChatRequest> {
    multimodal_conversations()
        .into_iter()
        .find_map(|(candidate, request)| (candidate == name).then_some(request))
}

/// The canonical conversation called `name`, if there is one.
pub fn conversation(name: &str) -> Option<ChatRequest> {
    conversations()
        .into_iter()
        .find_map(|(candidate, request)| (candidate == name).then_some(request))
}

/// A weather tool with an enum and `additionalProperties: false`.
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

/// A flight-search tool with a nested object, an array of objects, enums,
/// a pattern and numeric bounds.
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

/// A currency-conversion tool (used by [`multi_turn_request`]).
pub fn convert_tool() -> ToolDefinition {
    ToolDefinition::new(
        "convert",
        "Convert between currencies.",
        json!({"type": "object", "properties": {"amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}}, "required": ["amount", "from", "to"]}),
    )
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

/// Several turns: small talk, a tool round preceded by a reasoning block (no
/// signature), an answer, a mid-conversation system message, a new question.
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
    .with_tools(vec![convert_tool()])
}

/// System prompt, two tools and a finished tool round, with prompt caching
/// asked for: a provider with explicit caching marks the tools, the system
/// prompt and the last message.
pub fn prompt_caching_request() -> ChatRequest {
    ChatRequest {
        prompt_caching: true,
        ..ChatRequest::new(vec![
            Message::user("Weather in Paris?"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("call_1", "get_weather", json!({"city": "Paris"}))],
            )),
            Message::tool(ToolResult::success("call_1", "get_weather", r#"{"temp_c":18}"#)),
            Message::assistant("It is 18 °C in Paris."),
            Message::user("And should I book a flight to Tokyo for two?"),
        ])
        .with_system("You are a travel assistant. Use the tools when they help.")
        .with_tools(vec![weather_tool(), flight_tool()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_list_every_conversation_in_order() {
        let names: Vec<&str> = conversations().iter().map(|(name, _)| *name).collect();
        assert_eq!(names, NAMES);
    }

    #[test]
    fn every_conversation_is_sendable() {
        for (name, request) in conversations() {
            assert!(!request.messages.is_empty(), "{name}");
            let calls: Vec<&str> = request
                .messages
                .iter()
                .filter_map(Message::as_assistant)
                .flat_map(|message| message.tool_calls.iter().map(|call| call.id.as_str()))
                .collect();
            let results: Vec<&str> = request
                .messages
                .iter()
                .filter_map(Message::as_tool_result)
                .map(|result| result.call_id.as_str())
                .collect();
            assert_eq!(calls, results, "{name}: every call has its result, in order");
        }
    }
}
