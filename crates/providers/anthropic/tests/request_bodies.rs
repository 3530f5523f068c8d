//! Request bodies of the canonical conversations (and of those with
//! media): snapshotted, and checked field by field where it matters
//! (caching breakpoints, turn merging, thinking round-trips, the follow-up
//! turn of a recorded exchange, image and document blocks, refusals).
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{ChatRequest, LlmErrorKind, MediaLimits, Message, ResponseFormat, ToolResult, encode_base64};
use agent_provider_anthropic::BodyOptions;
use agent_provider_anthropic::mapper::{DEFAULT_MEDIA_LIMITS, build_request_body, parse_response};
use agent_testing::require_wire;
use common::{MODEL, body_json, canonical_requests};
use serde_json::{Value, json};

#[test]
fn canonical_request_bodies_match_their_snapshots() {
    let requests = canonical_requests();
    assert!(requests.len() >= agent_testing::canonical::NAMES.len() + 3);
    for (name, request, options) in requests {
        insta::assert_json_snapshot!(format!("request_{name}"), body_json(&request, &options));
    }
}

/// The JSON paths of every `cache_control` in a body.
fn breakpoints(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "cache_control" {
                    assert_eq!(child, &json!({"type": "ephemeral"}), "at {path}");
                    found.push(path.to_owned());
                } else {
                    breakpoints(child, &format!("{path}/{key}"), found);
                }
            }
        }
        Value::Array(items) => {
            for (position, child) in items.iter().enumerate() {
                breakpoints(child, &format!("{path}/{position}"), found);
            }
        }
        _ => {}
    }
}

fn breakpoints_of(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    breakpoints(body, "", &mut found);
    found
}

#[test]
fn prompt_caching_marks_the_last_tool_the_system_prompt_and_the_last_message() {
    let request = agent_testing::canonical::prompt_caching_request();
    let body = body_json(&request, &BodyOptions::new(MODEL));
    let last_message = body["messages"].as_array().unwrap().len() - 1;
    assert_eq!(
        breakpoints_of(&body),
        [
            "/system/0".to_owned(),
            format!("/messages/{last_message}/content/0"),
            "/tools/1".to_owned(),
        ]
    );
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are a travel assistant. Use the tools when they help.",
                "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["tools"][1]["name"], "search_flights");
    assert_eq!(
        body["messages"][last_message]["content"],
        json!([{"type": "text", "text": "And should I book a flight to Tokyo for two?",
                "cache_control": {"type": "ephemeral"}}])
    );

    // The same conversation without the flag: no breakpoint anywhere, the
    // system prompt a plain string.
    let plain = body_json(
        &ChatRequest {
            prompt_caching: false,
            ..request
        },
        &BodyOptions::new(MODEL),
    );
    assert!(breakpoints_of(&plain).is_empty());
    assert!(plain["system"].is_string());
}

#[test]
fn no_body_ever_has_more_than_four_breakpoints_and_only_caching_ones_have_any() {
    for (name, request, options) in canonical_requests() {
        let body = body_json(&request, &options);
        let count = breakpoints_of(&body).len();
        assert!(count <= 4, "{name}: {count} breakpoints");
        assert_eq!(request.prompt_caching, count > 0, "{name}");
    }
    // A tool-result turn ends the conversation: its last block is marked.
    let request = ChatRequest {
        prompt_caching: true,
        ..agent_testing::canonical::parallel_calls_request()
    };
    let body = body_json(&request, &BodyOptions::new(MODEL));
    assert_eq!(
        breakpoints_of(&body),
        ["/system/0", "/messages/2/content/1", "/tools/0"]
    );
}

#[test]
fn tool_results_of_one_turn_share_one_user_message_and_errors_are_flagged() {
    let body = body_json(&common::parallel_calls_request(), &BodyOptions::new(MODEL));
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "text", "text": "Checking both cities."},
            {"type": "tool_use", "id": "call_paris", "name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}},
            {"type": "tool_use", "id": "call_tokyo", "name": "get_weather",
             "input": {"_raw_arguments": "{\"city\": \"Tokyo\", \"unit\": celsius}"}}
        ])
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_paris", "content": "{\"temp_c\":18,\"sky\":\"cloudy\"}"},
            {"type": "tool_result", "tool_use_id": "call_tokyo",
             "content": "invalid arguments for `get_weather`: the arguments are not valid JSON", "is_error": true}
        ]})
    );
}

/// The TypeScript SDK's ToolRunner recording: exchange 2 answers with two
/// parallel `tool_use` blocks, exchange 3 sends both results back. The body
/// built from the mapped reply plus the two results has exactly the
/// recording's messages: both `tool_result` blocks in one user message.
#[test]
fn the_follow_up_turn_matches_the_recorded_tool_runner_request() {
    let anthropic = require_wire!("anthropic");
    let recording = anthropic.json("sdk_recorded/typescript_ToolRunner.nock.json");
    let first = &recording[2];
    let follow_up = &recording[3]["body"];
    let reply = parse_response(first["response"].to_string().as_bytes()).unwrap();
    assert_eq!(reply.message.tool_calls.len(), 2);

    let prompt = first["body"]["messages"][0]["content"].as_str().unwrap();
    let mut history = vec![Message::user(prompt), Message::Assistant(reply.message.clone())];
    for (call, result) in reply.message.tool_calls.iter().zip(["Called with 1", "Called with 2"]) {
        history.push(Message::tool(ToolResult::success(&call.id, &call.name, result)));
    }
    let request = ChatRequest {
        max_tokens: Some(1000),
        ..ChatRequest::new(history)
    };
    let body = body_json(&request, &BodyOptions::new("claude-opus-4-8"));
    assert_eq!(body["messages"], follow_up["messages"]);
    assert_eq!(body["model"], follow_up["model"]);
    assert_eq!(body["max_tokens"], follow_up["max_tokens"]);
}

#[test]
fn a_mid_conversation_system_message_stays_in_place_as_user_text() {
    let body = body_json(
        &agent_testing::canonical::multi_turn_request(),
        &BodyOptions::new(MODEL),
    );
    assert_eq!(body["system"], "You are a helpful travel assistant.");
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user", "assistant", "user"],
        "roles alternate"
    );
    assert_eq!(
        messages[6]["content"],
        json!([
            {"type": "text", "text": "<system>Answer in one sentence from now on.</system>"},
            {"type": "text", "text": "And 50 EUR?"}
        ])
    );
    // The unsigned reasoning block (another provider's) is not sent: the
    // tool-calling turn holds only its tool_use block.
    assert_eq!(
        messages[3]["content"],
        json!([{"type": "tool_use", "id": "call_1", "name": "convert",
                "input": {"amount": 100, "from": "EUR", "to": "JPY"}}])
    );
}

#[test]
fn thinking_blocks_go_back_unchanged_before_the_tool_use() {
    let reply = parse_response(
        json!({"id": "msg_t", "type": "message", "role": "assistant", "model": MODEL,
            "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "EqQBsig1"},
                {"type": "redacted_thinking", "data": "EmwKAhgBredacted"},
                {"type": "thinking", "thinking": "Then answer.", "signature": "EqQBsig2"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Oslo"}}
            ],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 50}})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let request = ChatRequest {
        max_tokens: Some(4000),
        ..ChatRequest::new(vec![
            Message::user("Weather in Oslo?"),
            Message::Assistant(reply.message),
            Message::tool(ToolResult::success("toolu_9", "get_weather", "-3 °C")),
        ])
    };
    let body = body_json(&request, &BodyOptions::new(MODEL).with_thinking(1024));
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "Look it up.", "signature": "EqQBsig1"},
            {"type": "redacted_thinking", "data": "EmwKAhgBredacted"},
            {"type": "thinking", "thinking": "Then answer.", "signature": "EqQBsig2"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Oslo"}}
        ])
    );
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 1024}));
}

#[test]
fn a_response_format_becomes_output_config_like_the_recorded_sdk_request() {
    let anthropic = require_wire!("anthropic");
    let recorded = anthropic.json("sdk_recorded/python_parse_nested_model_sync__c11eefc7.json");
    let recorded = &recorded[0]["request"]["body"];
    let schema = recorded["output_config"]["format"]["schema"].clone();
    let request = ChatRequest {
        max_tokens: Some(1024),
        response_format: Some(ResponseFormat {
            name: "OrderItem".into(),
            schema,
            strict: true,
        }),
        ..ChatRequest::new(vec![Message::user(
            recorded["messages"][0]["content"].as_str().unwrap(),
        )])
    };
    let body = body_json(&request, &BodyOptions::new(MODEL));
    assert_eq!(&body, recorded);
}

#[test]
fn the_request_model_overrides_the_configured_one_and_max_tokens_is_always_sent() {
    let request = ChatRequest {
        model: Some("claude-opus-4-5".into()),
        ..ChatRequest::new(vec![Message::user("hi")])
    };
    let body = body_json(&request, &BodyOptions::new(MODEL));
    assert_eq!(body["model"], "claude-opus-4-5");
    assert_eq!(body["max_tokens"], 4096);
    let options = BodyOptions {
        default_max_tokens: 333,
        ..BodyOptions::new(MODEL)
    };
    assert_eq!(body_json(&request, &options)["max_tokens"], 333);
}

/// The canonical conversations with media: each body snapshotted, and a
/// refusal (audio: Anthropic reads none) snapshotted as its error message.
#[test]
fn multimodal_request_bodies_match_their_snapshots() {
    let conversations = agent_testing::canonical::multimodal_conversations();
    assert_eq!(conversations.len(), agent_testing::canonical::MULTIMODAL_NAMES.len());
    for (name, request) in conversations {
        match build_request_body(&request, &BodyOptions::new(MODEL)) {
            Ok(bytes) => {
                let body: Value = serde_json::from_slice(&bytes).unwrap();
                insta::assert_json_snapshot!(format!("request_{name}"), body);
            }
            Err(error) => {
                assert_eq!(error.kind, LlmErrorKind::UnsupportedInput, "{name}");
                insta::assert_snapshot!(format!("request_{name}"), error.to_string());
            }
        }
    }
}

#[test]
fn a_question_about_two_images_sends_both_before_the_text() {
    let request = agent_testing::canonical::multimodal_conversation("image_in_user_message").unwrap();
    let body = body_json(&request, &BodyOptions::new(MODEL));
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": encode_base64(agent_testing::media::PNG)}},
            {"type": "image", "source": {"type": "url", "url": "https://images.example.com/cat.png"}},
            {"type": "text", "text": "What is the difference between these two pictures?"}
        ]}])
    );
    let pdf = agent_testing::canonical::multimodal_conversation("pdf_in_user_message").unwrap();
    assert_eq!(
        body_json(&pdf, &BodyOptions::new(MODEL))["messages"][0]["content"][0],
        json!({"type": "document", "title": "report.pdf",
               "source": {"type": "base64", "media_type": "application/pdf",
                          "data": encode_base64(agent_testing::media::PDF)}})
    );
}

#[test]
fn an_image_returned_by_a_tool_goes_inside_its_tool_result() {
    let request = agent_testing::canonical::multimodal_conversation("image_from_tool").unwrap();
    let body = body_json(&request, &BodyOptions::new(MODEL));
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_chart", "content": [
            {"type": "text", "text": "Rendered the sales chart (1 image)."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": encode_base64(agent_testing::media::PNG)}}
        ]}]})
    );
}

/// Prompt caching with media: the breakpoint stays on the last block of
/// the last message (the question's text, or the `tool_result` holding the
/// image), never inside a tool result's content; at most three.
#[test]
fn prompt_caching_marks_the_last_block_when_there_is_media() {
    let cached = |name: &str| {
        let request = ChatRequest {
            prompt_caching: true,
            ..agent_testing::canonical::multimodal_conversation(name).unwrap()
        };
        breakpoints_of(&body_json(&request, &BodyOptions::new(MODEL)))
    };
    assert_eq!(cached("image_in_user_message"), ["/messages/0/content/2"]);
    assert_eq!(cached("pdf_in_user_message"), ["/messages/0/content/1"]);
    assert_eq!(cached("image_from_tool"), ["/messages/2/content/0", "/tools/0"]);
    // A question that is only an image: the image itself is the breakpoint.
    let request = ChatRequest {
        prompt_caching: true,
        ..ChatRequest::new(vec![Message::user_with(" ", vec![agent_testing::media::png()])])
    };
    let body = body_json(&request, &BodyOptions::new(MODEL));
    assert_eq!(breakpoints_of(&body), ["/messages/0/content/0"]);
    assert_eq!(body["messages"][0]["content"][0]["type"], "image");
}

#[test]
fn an_oversized_attachment_is_refused_before_any_body_is_built() {
    let request = agent_testing::canonical::multimodal_conversation("pdf_in_user_message").unwrap();
    let options = BodyOptions {
        media_limits: MediaLimits {
            max_document_bytes: 100,
            ..DEFAULT_MEDIA_LIMITS
        },
        ..BodyOptions::new(MODEL)
    };
    let error = build_request_body(&request, &options).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    let size = agent_testing::media::PDF.len();
    assert_eq!(
        error.message,
        format!("the document attachment is {size} bytes; anthropic takes at most 100 bytes")
    );
    // The same in a tool result, against the default image limit.
    let big = agent_core::Attachment {
        source: agent_core::MediaSource::Inline {
            data: vec![0; 4 * 1024 * 1024].into(),
        },
        size: 4 * 1024 * 1024,
        ..agent_testing::media::png()
    };
    let mut request = agent_testing::canonical::multimodal_conversation("image_from_tool").unwrap();
    if let Some(Message::Tool(result)) = request.messages.last_mut() {
        result.attachments = vec![big];
    }
    let error = build_request_body(&request, &BodyOptions::new(MODEL)).unwrap_err();
    assert!(
        error
            .message
            .contains("is 4194304 bytes; anthropic takes at most 3932160 bytes"),
        "{error}"
    );
}
