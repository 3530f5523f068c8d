//! Request bodies of the canonical conversations: snapshotted, checked field
//! by field where it matters, and validated against the official OpenAPI
//! schema of `CreateChatCompletionRequest`.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{ChatRequest, Message, ToolChoice};
use agent_provider_openai::BodyOptions;
use agent_provider_openai::mapper::build_request_body;
use agent_testing::require_wire;
use common::{body_json, canonical_requests, parallel_calls_request, request_validator, schema_errors, weather_tool};
use serde_json::{Value, json};

#[test]
fn canonical_request_bodies_match_their_snapshots() {
    for (name, request, options) in canonical_requests() {
        insta::assert_json_snapshot!(format!("request_{name}"), body_json(&request, &options));
    }
}

#[test]
fn tool_calls_carry_string_arguments_and_raw_text_unchanged() {
    let body = body_json(&parallel_calls_request(), &BodyOptions::new("gpt-4o-mini"));
    let calls = &body["messages"][2]["tool_calls"];
    assert_eq!(
        calls[0]["function"]["arguments"],
        r#"{"city":"Paris","unit":"celsius"}"#
    );
    assert_eq!(
        calls[1]["function"]["arguments"], r#"{"city": "Tokyo", "unit": celsius}"#,
        "malformed arguments go back exactly as the model wrote them"
    );
    assert_eq!(calls[1]["type"], "function");
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_paris", "content": r#"{"temp_c":18,"sky":"cloudy"}"#})
    );
    assert_eq!(body["messages"][4]["tool_call_id"], "call_tokyo");
    let error = body["messages"][4]["content"].as_str().unwrap();
    assert!(error.starts_with("Error: invalid arguments"), "{error}");
}

#[test]
fn an_error_result_that_already_says_so_is_not_prefixed_twice() {
    let request = ChatRequest::new(vec![Message::tool(agent_core::ToolResult::error(
        "c",
        "t",
        "Error: boom",
    ))]);
    let body = body_json(&request, &BodyOptions::new("m"));
    assert_eq!(body["messages"][0]["content"], "Error: boom");
}

#[test]
fn tool_choice_and_parallel_flag_are_omitted_without_tools() {
    let request = ChatRequest {
        tool_choice: ToolChoice::Required,
        parallel_tool_calls: Some(true),
        ..ChatRequest::new(vec![Message::user("hi")])
    };
    let body = body_json(&request, &BodyOptions::new("m"));
    let object = body.as_object().unwrap();
    assert_eq!(object.keys().collect::<Vec<_>>(), ["model", "messages"]);

    let with_tools = ChatRequest {
        tool_choice: ToolChoice::None,
        parallel_tool_calls: Some(true),
        ..ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![weather_tool()])
    };
    let body = body_json(&with_tools, &BodyOptions::new("m"));
    assert_eq!(body["tool_choice"], "none");
    assert_eq!(body["parallel_tool_calls"], true);
}

#[test]
fn the_request_model_overrides_the_configured_one() {
    let request = ChatRequest {
        model: Some("gpt-4.1".into()),
        ..ChatRequest::new(vec![Message::user("hi")])
    };
    assert_eq!(
        body_json(&request, &BodyOptions::new("gpt-4o-mini"))["model"],
        "gpt-4.1"
    );
}

#[test]
fn reasoning_is_echoed_only_when_asked() {
    let request = common::multi_turn_request();
    let plain = body_json(&request, &BodyOptions::new("m"));
    assert!(plain["messages"][4].get("reasoning_content").is_none());
    let echo = body_json(
        &request,
        &BodyOptions {
            send_reasoning_content: true,
            ..BodyOptions::new("m")
        },
    );
    assert_eq!(echo["messages"][4]["reasoning_content"], "The user wants a conversion.");
}

#[test]
fn a_non_finite_temperature_is_refused() {
    let request = ChatRequest {
        temperature: Some(f32::NAN),
        ..ChatRequest::new(vec![Message::user("hi")])
    };
    let error = build_request_body(&request, &BodyOptions::new("m")).unwrap_err();
    assert_eq!(error.kind, agent_core::LlmErrorKind::InvalidRequest);
}

#[test]
fn every_canonical_body_validates_against_the_official_schema() {
    let validator = request_validator(&require_wire!("openai"));
    for (name, request, options) in canonical_requests() {
        let body = body_json(&request, &options);
        let errors = schema_errors(&validator, &body);
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn the_schema_check_does_reject_invalid_bodies() {
    let validator = request_validator(&require_wire!("openai"));
    let bad_bodies = [
        json!({"model": "m", "messages": []}),
        json!({"model": "m", "messages": [{"role": "robot", "content": "hi"}]}),
        json!({"model": "m", "messages": [{"role": "tool", "content": "42"}]}),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "sometimes"}),
        json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}]}),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema"}}),
        // Content parts: audio only as wav or mp3, tool messages text only, no empty arrays.
        json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AA==", "format": "flac"}}]}]}),
        json!({"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": [{"type": "image_url", "image_url": {"url": "https://a/b.png"}}]}]}),
        json!({"model": "m", "messages": [{"role": "user", "content": []}]}),
    ];
    for body in bad_bodies {
        assert!(!schema_errors(&validator, &body).is_empty(), "accepted {body}");
    }
}

#[test]
fn the_official_reference_requests_validate_too() {
    // A sanity check of the validator against OpenAI's own examples.
    let openai = require_wire!("openai");
    let validator = request_validator(&openai);
    for path in openai.files("reference_examples", ".request.json") {
        let body: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let errors = schema_errors(&validator, &body);
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    }
}

/// The multimodal conversations as OpenAI sends them: snapshot name
/// (`request_` and the conversation's), and the body or the refusal.
fn multimodal_bodies() -> Vec<(String, Result<Value, agent_core::LlmError>)> {
    let options = BodyOptions::new("gpt-4o-mini");
    agent_testing::canonical::multimodal_conversations()
        .into_iter()
        .map(|(name, request)| {
            let body = build_request_body(&request, &options).map(|bytes| serde_json::from_slice(&bytes).unwrap());
            (format!("request_{name}"), body)
        })
        .collect()
}

#[test]
fn multimodal_request_bodies_match_their_snapshots() {
    let bodies = multimodal_bodies();
    assert_eq!(bodies.len(), agent_testing::canonical::MULTIMODAL_NAMES.len());
    for (name, body) in bodies {
        match body {
            Ok(body) => insta::assert_json_snapshot!(name, body),
            Err(error) => insta::assert_snapshot!(name, error.to_string()),
        }
    }
}

#[test]
fn every_multimodal_body_validates_against_the_official_schema() {
    let validator = request_validator(&require_wire!("openai"));
    for (name, body) in multimodal_bodies() {
        let body = body.unwrap_or_else(|error| panic!("{name}: {error}"));
        let errors = schema_errors(&validator, &body);
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn the_official_image_input_example_is_rebuilt_exactly() {
    let openai = require_wire!("openai");
    let example = openai.json("reference_examples/image_input.request.json");
    let part = &example["messages"][0]["content"];
    let image = agent_core::Attachment::from_url(part[1]["image_url"]["url"].as_str().unwrap(), "image/jpeg").unwrap();
    let request = ChatRequest {
        max_tokens: Some(300),
        ..ChatRequest::new(vec![Message::user_with(part[0]["text"].as_str().unwrap(), vec![image])])
    };
    let options = BodyOptions {
        max_tokens_field: agent_provider_openai::MaxTokensField::MaxTokens,
        ..BodyOptions::new(example["model"].as_str().unwrap())
    };
    assert_eq!(body_json(&request, &options), example);
}
