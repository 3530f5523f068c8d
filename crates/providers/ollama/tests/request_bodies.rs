//! Request bodies: the canonical conversations snapshotted, and Ollama's
//! own documented requests rebuilt from `ChatRequest`s and compared.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{
    AssistantMessage, ChatRequest, LlmErrorKind, Message, ToolCall, ToolChoice, ToolDefinition, ToolResult,
};
use agent_provider_ollama::BodyOptions;
use agent_provider_ollama::mapper::build_request_body;
use agent_testing::canonical;
use agent_testing::require_wire;
use common::{body_json, canonical_requests};
use serde_json::{Value, json};

#[test]
fn canonical_request_bodies_match_their_snapshots() {
    let requests = canonical_requests();
    for name in canonical::NAMES {
        assert!(requests.iter().any(|(n, _, _)| n == name), "{name} is snapshotted");
    }
    for (name, request, options) in requests {
        insta::assert_json_snapshot!(format!("request_{name}"), body_json(&request, &options));
    }
}

#[test]
fn multimodal_request_bodies_match_their_snapshots() {
    let options = BodyOptions::new("llama3.2");
    for (name, request) in canonical::multimodal_conversations() {
        let name = format!("request_{name}");
        match build_request_body(&request, &options) {
            Ok(bytes) => {
                let body: Value = serde_json::from_slice(&bytes).unwrap();
                insta::assert_json_snapshot!(name, body);
            }
            Err(error) => {
                assert_eq!(error.kind, LlmErrorKind::UnsupportedInput, "{name}: {error}");
                insta::assert_snapshot!(name, error.to_string());
            }
        }
    }
}

/// The body of the documented `/api/chat` request called `label` in
/// Ollama's OpenAPI spec (a curl example inside the YAML).
fn documented_chat_request(ollama: &agent_testing::wire::Wire, label: &str) -> Value {
    let spec = ollama.text("openapi.yaml");
    let chat = &spec[spec.find("  /api/chat:").unwrap()..];
    let example = &chat[chat.find(&format!("label: {label}\n")).unwrap()..];
    let start = example.find("-d '").unwrap() + 4;
    let end = start + example[start..].find("}'").unwrap() + 1;
    serde_json::from_str(&example[start..end]).unwrap()
}

#[test]
fn the_documented_image_request_is_rebuilt_exactly() {
    let mut example = documented_chat_request(&require_wire!("ollama"), "Images");
    let message = &example["messages"][0];
    let png = agent_core::decode_base64(message["images"][0].as_str().unwrap()).unwrap();
    let image = agent_core::Attachment::from_bytes(png, Some("image/png"), None).unwrap();
    let request = ChatRequest::new(vec![Message::user_with(
        message["content"].as_str().unwrap(),
        vec![image],
    )]);
    let mut body = body_json(&request, &BodyOptions::new(example["model"].as_str().unwrap()));
    // We always write `stream`; the example leaves Ollama's default.
    assert_eq!(body["stream"], false);
    body.as_object_mut().unwrap().remove("stream");
    example.as_object_mut().unwrap().remove("stream");
    assert_eq!(body, example);
}

/// A tool definition taken from a documented request.
fn tool_from(example: &Value, index: usize) -> ToolDefinition {
    let function = &example["tools"][index]["function"];
    ToolDefinition::new(
        function["name"].as_str().unwrap(),
        function["description"].as_str().unwrap(),
        function["parameters"].clone(),
    )
}

#[test]
fn the_documented_tool_history_request_is_rebuilt_exactly() {
    let examples = require_wire!("ollama/docs_examples");
    let example = examples.json("api_md_chat_request_with_history_with_tools.request.json");
    let request = ChatRequest::new(vec![
        Message::user("what is the weather in Toronto?"),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("call_1", "get_weather", json!({"city": "Toronto"}))],
        )),
        Message::tool(ToolResult::success("call_1", "get_weather", "11 degrees celsius")),
    ])
    .with_tools(vec![tool_from(&example, 0)]);
    let mut body = body_json(&request, &BodyOptions::new("llama3.2"));
    // We always write the call's `index` and `type`, as Ollama's
    // tool-calling guide does; the older API example omits them.
    let call = &mut body["messages"][1]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["index"], 0);
    call.as_object_mut().unwrap().remove("type");
    call["function"].as_object_mut().unwrap().remove("index");
    assert_eq!(sorted(body), sorted(example));
}

#[test]
fn the_documented_parallel_tool_results_request_is_rebuilt_exactly() {
    let examples = require_wire!("ollama/docs_examples");
    let example = examples.json("tool_calling_mdx_parallel_tools_followup_with_tool_results.request.json");
    let calls: Vec<ToolCall> = [
        ("get_temperature", "New York"),
        ("get_conditions", "New York"),
        ("get_temperature", "London"),
        ("get_conditions", "London"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (name, city))| ToolCall::new(format!("c{i}"), *name, json!({"city": city})))
    .collect();
    let results = ["22°C", "Partly cloudy", "15°C", "Rainy"];
    let mut messages = vec![
        Message::user("What are the current weather conditions and temperature in New York and London?"),
        Message::Assistant(AssistantMessage::with_tool_calls("", calls.clone())),
    ];
    for (call, result) in calls.iter().zip(results) {
        messages.push(Message::tool(ToolResult::success(&call.id, &call.name, result)));
    }
    let mut body = body_json(&ChatRequest::new(messages), &BodyOptions::new("qwen3"));
    // The guide's assistant turn has no `content`; ours says "" explicitly.
    assert_eq!(body["messages"][1]["content"], "");
    body["messages"][1].as_object_mut().unwrap().remove("content");
    assert_eq!(sorted(body), sorted(example));
}

#[test]
fn the_documented_structured_output_request_is_rebuilt_exactly() {
    let examples = require_wire!("ollama/docs_examples");
    let example = examples.json("api_md_chat_request_structured_outputs.request.json");
    let request = ChatRequest {
        temperature: Some(0.0),
        response_format: Some(agent_core::ResponseFormat {
            name: "person".into(),
            schema: example["format"].clone(),
            strict: true,
        }),
        ..ChatRequest::new(vec![Message::user(example["messages"][0]["content"].as_str().unwrap())])
    };
    let body = body_json(&request, &BodyOptions::new("llama3.1"));
    assert_eq!(sorted(body), sorted(example));
}

#[test]
fn configured_options_are_sent_and_the_request_wins_over_them() {
    let examples = require_wire!("ollama/docs_examples");
    let example = examples.json("api_md_chat_request_reproducible_outputs.request.json");
    let options = BodyOptions {
        extra_options: [("seed".to_owned(), json!(101)), ("temperature".to_owned(), json!(0.9))]
            .into_iter()
            .collect(),
        ..BodyOptions::new("llama3.2").streaming()
    };
    let request = ChatRequest {
        temperature: Some(0.0),
        ..ChatRequest::new(vec![Message::user("Hello!")])
    };
    let body = body_json(&request, &options);
    assert_eq!(body["options"], json!({"temperature": 0.0, "seed": 101}));
    let mut without_stream = body.clone();
    without_stream.as_object_mut().unwrap().remove("stream");
    assert_eq!(sorted(without_stream), sorted(example));
    assert_eq!(
        body["stream"], true,
        "stream is always written: Ollama streams by default"
    );
}

#[test]
fn malformed_arguments_go_back_as_text_inside_an_object() {
    let body = body_json(&canonical::parallel_calls_request(), &BodyOptions::new("m"));
    let calls = &body["messages"][2]["tool_calls"];
    assert_eq!(
        calls[0]["function"]["arguments"],
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert_eq!(
        calls[1]["function"]["arguments"],
        json!({"_raw_arguments": "{\"city\": \"Tokyo\", \"unit\": celsius}"})
    );
    let error = &body["messages"][4];
    assert_eq!(error["role"], "tool");
    assert_eq!(error["tool_name"], "get_weather");
    assert!(
        error["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: invalid arguments")
    );
}

#[test]
fn tool_choice_none_sends_no_tools_and_a_named_tool_only_that_one() {
    let base = canonical::conversation("tools_nested_schemas").unwrap();
    let named = body_json(&base, &BodyOptions::new("m"));
    let names: Vec<&str> = named["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search_flights"]);

    let none = ChatRequest {
        tool_choice: ToolChoice::None,
        ..base.clone()
    };
    assert!(body_json(&none, &BodyOptions::new("m")).get("tools").is_none());

    let unknown = ChatRequest {
        tool_choice: ToolChoice::Tool {
            name: "book_hotel".into(),
        },
        ..base
    };
    let error = build_request_body(&unknown, &BodyOptions::new("m")).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert!(
        error.message.contains("book_hotel") && error.message.contains("search_flights"),
        "{error}"
    );
}

#[test]
fn reasoning_text_goes_back_as_thinking() {
    let body = body_json(&canonical::multi_turn_request(), &BodyOptions::new("m"));
    assert_eq!(body["messages"][4]["thinking"], "The user wants a conversion.");
    assert!(body["messages"][2].get("thinking").is_none());
}

#[test]
fn the_request_model_overrides_the_configured_one_and_nan_is_refused() {
    let request = ChatRequest {
        model: Some("mistral".into()),
        ..ChatRequest::new(vec![Message::user("hi")])
    };
    assert_eq!(body_json(&request, &BodyOptions::new("llama3.2"))["model"], "mistral");
    let nan = ChatRequest {
        temperature: Some(f32::NAN),
        ..ChatRequest::new(vec![Message::user("hi")])
    };
    let error = build_request_body(&nan, &BodyOptions::new("m")).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
}

/// `value` with object keys sorted and numbers as floats, so bodies compare
/// regardless of key order and of `0` versus `0.0`.
fn sorted(value: Value) -> Value {
    match value {
        Value::Number(number) => json!(number.as_f64().unwrap()),
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
