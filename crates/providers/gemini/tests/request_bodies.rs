//! Request bodies of the canonical conversations, with and without media
//! (snapshotted and checked where it matters), and the round trip of
//! thought signatures and call ids against Google's own recorded follow-up
//! requests.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{
    AssistantMessage, ChatRequest, LlmErrorKind, MediaLimits, Message, ToolDefinition, ToolResult, encode_base64,
};
use agent_provider_gemini::BodyOptions;
use agent_provider_gemini::mapper::{DEFAULT_MEDIA_LIMITS, build_request_json, parse_response};
use agent_testing::require_wire;
use common::{assemble, body_json, canonical_requests, decode_sse, interaction};
use serde_json::{Value, json};

fn options() -> BodyOptions {
    BodyOptions::new("gemini-2.5-flash")
}

#[test]
fn canonical_request_bodies_match_their_snapshots() {
    let names: Vec<&str> = canonical_requests().iter().map(|(name, _, _)| *name).collect();
    for name in agent_testing::canonical::NAMES {
        assert!(names.contains(&name), "{name} is snapshotted");
    }
    for (name, request, options) in canonical_requests() {
        insta::assert_json_snapshot!(format!("request_{name}"), body_json(&request, &options));
    }
}

#[test]
fn the_parallel_round_goes_back_as_one_model_and_one_user_content() {
    let body = body_json(&common::parallel_calls_request(), &options());
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3);
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"text": "Checking both cities."},
            {"functionCall": {"id": "call_paris", "name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}},
             "thoughtSignature": "context_engineering_is_the_way_to_go"},
            {"functionCall": {"id": "call_tokyo", "name": "get_weather",
                              "args": {"_raw_arguments": "{\"city\": \"Tokyo\", \"unit\": celsius}"}}}
        ]})
    );
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"],
        json!({"id": "call_paris", "name": "get_weather", "response": {"temp_c": 18, "sky": "cloudy"}})
    );
    assert_eq!(
        contents[2]["parts"][1]["functionResponse"]["response"],
        json!({"error": "invalid arguments for `get_weather`: the arguments are not valid JSON"})
    );
}

#[test]
fn a_mid_conversation_system_message_is_marked_user_text_where_it_was_said() {
    let body = body_json(&common::multi_turn_request(), &options());
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "You are a helpful travel assistant."}]})
    );
    let last = body["contents"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last,
        json!({"role": "user", "parts": [
            {"text": "[System instruction] Answer in one sentence from now on."},
            {"text": "And 50 EUR?"}
        ]})
    );
    let text = body.to_string();
    assert!(
        !text.contains("The user wants a conversion."),
        "unsigned reasoning text is not sent back"
    );
}

#[test]
fn tool_choice_and_structured_output_map_to_gemini_fields() {
    let forced = agent_testing::canonical::conversation("tools_nested_schemas").unwrap();
    assert_eq!(
        body_json(&forced, &options())["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["search_flights"]}})
    );
    let required = agent_testing::canonical::conversation("max_tokens_required_tool").unwrap();
    let body = body_json(&required, &options());
    assert_eq!(body["toolConfig"]["functionCallingConfig"], json!({"mode": "ANY"}));
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 512}));
    let none = ChatRequest {
        tool_choice: agent_core::ToolChoice::None,
        ..required
    };
    assert_eq!(
        body_json(&none, &options())["toolConfig"]["functionCallingConfig"],
        json!({"mode": "NONE"})
    );

    let structured = agent_testing::canonical::conversation("json_schema_response_format").unwrap();
    let config = &body_json(&structured, &options())["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(
        config["responseSchema"],
        json!({"type": "OBJECT",
               "properties": {"city": {"type": "STRING"}, "temperature": {"type": "NUMBER"},
                              "units": {"type": "STRING", "enum": ["c", "f"]}},
               "required": ["city", "temperature", "units"],
               "propertyOrdering": ["city", "temperature", "units"]})
    );
}

#[test]
fn the_request_body_holds_no_model_and_no_stream_flag() {
    // Gemini takes both in the URL; the body is the same for both methods.
    let body = body_json(&ChatRequest::new(vec![Message::user("hi")]), &options());
    assert_eq!(body, json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}));
}

/// The user turn of a recorded request, as a Message.
fn first_user_text(request: &Value) -> String {
    request["contents"][0]["parts"][0]["text"].as_str().unwrap().to_owned()
}

/// Replays a recorded tool round through the mappers: the recorded reply is
/// mapped to a `ChatResponse`, the tools "run" with the results Google's
/// SDK sent, and the next request is built. Its `contents` must equal the
/// recorded follow-up request's: the thought signature back on the first
/// call's part, no made-up ids, one user content of function responses.
fn replay(reply: &agent_core::ChatResponse, first: &Value, follow_up: &Value) -> Value {
    let recorded_results = follow_up["contents"][2]["parts"].as_array().unwrap();
    let mut messages = vec![
        Message::user(first_user_text(first)),
        Message::Assistant(reply.message.clone()),
    ];
    for (call, part) in reply.message.tool_calls.iter().zip(recorded_results) {
        let response = &part["functionResponse"];
        assert_eq!(response["name"], call.name.as_str());
        messages.push(Message::tool(ToolResult::success(
            &call.id,
            &call.name,
            response["response"].to_string(),
        )));
    }
    let tools = vec![ToolDefinition::new(
        "any",
        "",
        json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    )];
    let request = ChatRequest::new(messages).with_tools(tools);
    let body = body_json(&request, &options());
    assert_eq!(
        body["contents"], follow_up["contents"],
        "the rebuilt history equals the SDK's follow-up request"
    );
    body["contents"].clone()
}

#[test]
fn thought_signatures_round_trip_like_the_recorded_follow_up_requests() {
    let gemini = require_wire!("gemini");
    let name = "MCP_related_client_Tests_generateContent_ML_Dev_Multiple_CallableTool_with_MCPClients_and_conduct_automated_function_calling";
    let first = interaction(&gemini, &format!("{name}_0"));
    let second = interaction(&gemini, &format!("{name}_1"));
    let reply = parse_response(&first.body()).unwrap();
    assert_eq!(reply.message.tool_calls.len(), 2);
    assert!(reply.message.tool_calls[0].id.starts_with("gemini_synth_"));
    let contents = replay(&reply, &first.request, &second.request);
    let signature = first.segments[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"].clone();
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], signature);
    assert!(contents[1]["parts"][1].get("thoughtSignature").is_none());
    insta::assert_json_snapshot!("request_thought_signature_round_trip", contents);

    // The same through a stream (gemini-2.5-flash, AFC with max calls).
    let name = "AFC_Streaming_Tests_chat_stream_AFC_enabled_AFC_max_calls_exceeded_Google_AI_can_continue_after_max_calls_exceeded";
    let first = interaction(&gemini, &format!("{name}_0"));
    let second = interaction(&gemini, &format!("{name}_1"));
    let reply = assemble(&decode_sse(&[&first.sse()]).unwrap()).unwrap();
    replay(&reply, &first.request, &second.request);
}

#[test]
fn calls_without_a_gemini_signature_go_back_with_the_placeholder_signature() {
    let gemini = require_wire!("gemini");
    let placeholder = json!("context_engineering_is_the_way_to_go");
    // gemini-2.0-flash signs nothing: the SDK's follow-up sends the call
    // bare; Agentry sends it with the placeholder, and nothing else differs.
    let name = "non-streaming_Tests_generateContent_afc_enabled_Google_AI_AFC_enabled";
    let first = interaction(&gemini, &format!("{name}_0"));
    let second = interaction(&gemini, &format!("{name}_1"));
    let reply = parse_response(&first.body()).unwrap();
    assert!(reply.message.reasoning.is_empty());
    let mut expected = second.request.clone();
    expected["contents"][1]["parts"][0]["thoughtSignature"] = placeholder.clone();
    replay(&reply, &first.request, &expected);

    // A signed reply whose signatures belong to another provider (a
    // conversation moved to Gemini): its signature stays home, the
    // placeholder goes on the first call only.
    let name = "MCP_related_client_Tests_generateContent_ML_Dev_Multiple_CallableTool_with_MCPClients_and_conduct_automated_function_calling";
    let first = interaction(&gemini, &format!("{name}_0"));
    let second = interaction(&gemini, &format!("{name}_1"));
    let mut reply = parse_response(&first.body()).unwrap();
    for block in &mut reply.message.reasoning {
        block.provider = Some("anthropic".into());
    }
    let mut expected = second.request.clone();
    expected["contents"][1]["parts"][0]["thoughtSignature"] = placeholder;
    let contents = replay(&reply, &first.request, &expected);
    assert!(contents[1]["parts"][1].get("thoughtSignature").is_none());
}

#[test]
fn a_signature_on_a_text_part_and_signed_thoughts_go_back_on_their_parts() {
    let gemini = require_wire!("gemini");
    // The third reply of the AFC recording carries a signature on its text.
    let name = "AFC_Streaming_Tests_chat_stream_AFC_enabled_AFC_max_calls_exceeded_Google_AI_can_continue_after_max_calls_exceeded_2";
    let recorded = interaction(&gemini, name);
    let reply = assemble(&decode_sse(&[&recorded.sse()]).unwrap()).unwrap();
    let request = ChatRequest::new(vec![
        Message::user("Divide"),
        Message::Assistant(reply.message.clone()),
        Message::user("Thanks"),
    ]);
    let body = body_json(&request, &options());
    let part = &recorded.segments[0]["candidates"][0]["content"]["parts"][0];
    assert_eq!(body["contents"][1]["parts"], json!([part]));

    let thinking = AssistantMessage {
        reasoning: vec![agent_core::ReasoningBlock {
            text: "Plan the division.".into(),
            signature: Some("SIG_T".into()),
            data: Some(json!({"gemini_part": "thought"})),
            provider: Some("gcp.gemini".into()),
        }],
        ..AssistantMessage::text("5")
    };
    let request = ChatRequest::new(vec![Message::user("10/2?"), Message::Assistant(thinking)]);
    assert_eq!(
        body_json(&request, &options())["contents"][1]["parts"],
        json!([{"text": "Plan the division.", "thought": true, "thoughtSignature": "SIG_T"}, {"text": "5"}])
    );
}

/// The canonical conversations with media, each body snapshotted (Gemini
/// takes them all), plus the tool image on Gemini 3, where it goes inside
/// the function response.
#[test]
fn multimodal_request_bodies_match_their_snapshots() {
    let conversations = agent_testing::canonical::multimodal_conversations();
    assert_eq!(conversations.len(), agent_testing::canonical::MULTIMODAL_NAMES.len());
    for (name, request) in conversations {
        insta::assert_json_snapshot!(format!("request_{name}"), body_json(&request, &options()));
    }
    let request = agent_testing::canonical::multimodal_conversation("image_from_tool").unwrap();
    insta::assert_json_snapshot!(
        "request_image_from_tool_gemini_3",
        body_json(&request, &BodyOptions::new("gemini-3-pro-preview"))
    );
}

fn png_part() -> Value {
    json!({"inlineData": {"mimeType": "image/png", "data": encode_base64(agent_testing::media::PNG)}})
}

#[test]
fn user_attachments_are_inline_data_or_file_data_parts_before_the_text() {
    let request = agent_testing::canonical::multimodal_conversation("image_in_user_message").unwrap();
    assert_eq!(
        body_json(&request, &options())["contents"],
        json!([{"role": "user", "parts": [
            png_part(),
            {"fileData": {"mimeType": "image/png", "fileUri": "https://images.example.com/cat.png"}},
            {"text": "What is the difference between these two pictures?"}
        ]}])
    );
    for (name, mime, bytes) in [
        ("pdf_in_user_message", "application/pdf", agent_testing::media::PDF),
        ("audio_in_user_message", "audio/wav", agent_testing::media::WAV),
    ] {
        let request = agent_testing::canonical::multimodal_conversation(name).unwrap();
        assert_eq!(
            body_json(&request, &options())["contents"][0]["parts"][0],
            json!({"inlineData": {"mimeType": mime, "data": encode_base64(bytes)}}),
            "{name}"
        );
    }
}

#[test]
fn a_tools_image_follows_the_function_responses_before_gemini_3_and_goes_inside_from_it() {
    let request = agent_testing::canonical::multimodal_conversation("image_from_tool").unwrap();
    let response = json!({"functionResponse": {"id": "call_chart", "name": "render_chart",
                          "response": {"result": "Rendered the sales chart (1 image)."}}});
    assert_eq!(
        body_json(&request, &options())["contents"][2],
        json!({"role": "user", "parts": [response, png_part()]})
    );
    let body = body_json(&request, &BodyOptions::new("gemini-3-pro-preview"));
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"id": "call_chart", "name": "render_chart",
            "response": {"result": "Rendered the sales chart (1 image)."}, "parts": [png_part()]}}]})
    );
    // The request's own model decides, as it decides the URL.
    let override_model = ChatRequest {
        model: Some("gemini-3-flash-preview".into()),
        ..request
    };
    assert_eq!(body_json(&override_model, &options())["contents"], body["contents"]);
}

#[test]
fn an_oversized_attachment_is_refused_before_any_body_is_built() {
    let request = agent_testing::canonical::multimodal_conversation("audio_in_user_message").unwrap();
    let options = BodyOptions {
        media_limits: MediaLimits {
            max_audio_bytes: 16,
            ..DEFAULT_MEDIA_LIMITS
        },
        ..options()
    };
    let error = build_request_json(&request, &options).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert_eq!(
        error.message,
        format!(
            "the audio attachment is {} bytes; gcp.gemini takes at most 16 bytes",
            agent_testing::media::WAV.len()
        )
    );
}
