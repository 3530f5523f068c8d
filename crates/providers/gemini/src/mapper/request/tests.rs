//! Unit tests of the request mapper.

use agent_core::{LlmErrorKind, ReasoningBlock, ToolCall};

use super::*;

fn body(request: &ChatRequest) -> Value {
    build_request_json(request, &BodyOptions::new("gemini-2.5-flash")).unwrap()
}

#[test]
fn consecutive_turns_of_one_role_are_merged() {
    let request = ChatRequest::new(vec![
        Message::user("a"),
        Message::user("b"),
        Message::assistant("c"),
        Message::system("be brief"),
        Message::user("d"),
    ]);
    assert_eq!(
        body(&request)["contents"],
        json!([
            {"role": "user", "parts": [{"text": "a"}, {"text": "b"}]},
            {"role": "model", "parts": [{"text": "c"}]},
            {"role": "user", "parts": [{"text": "[System instruction] be brief"}, {"text": "d"}]}
        ])
    );
}

#[test]
fn opening_system_messages_join_the_system_instruction() {
    let request = ChatRequest::new(vec![Message::system("second"), Message::user("hi")]).with_system("first");
    let body = body(&request);
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "first"}, {"text": "second"}]})
    );
    assert_eq!(body["contents"], json!([{"role": "user", "parts": [{"text": "hi"}]}]));
}

#[test]
fn results_are_wrapped_unless_they_are_objects() {
    let names = HashMap::from([("c1", "lookup")]);
    let wrap = |content: &str, is_error: bool| {
        let result = ToolResult {
            call_id: "c1".into(),
            name: String::new(),
            content: content.into(),
            is_error,
            attachments: Vec::new(),
        };
        function_response(&result, &names, Vec::new())["functionResponse"].clone()
    };
    assert_eq!(
        wrap(r#"{"temp":18}"#, false),
        json!({"id": "c1", "name": "lookup", "response": {"temp": 18}})
    );
    assert_eq!(wrap("42", false)["response"], json!({"result": 42}));
    assert_eq!(wrap("sunny", false)["response"], json!({"result": "sunny"}));
    assert_eq!(wrap("[1,2]", false)["response"], json!({"result": [1, 2]}));
    assert_eq!(wrap("boom", true)["response"], json!({"error": "boom"}));
    assert_eq!(wrap(r#"{"code":7}"#, true)["response"], json!({"error": {"code": 7}}));
}

#[test]
fn synthetic_ids_are_not_sent_and_signatures_go_back_on_their_parts() {
    let call_id = "gemini_synth_r1_0";
    let assistant = AssistantMessage {
        content: "Let me divide.".into(),
        tool_calls: vec![
            ToolCall::new(call_id, "divide", json!({"a": 10, "b": 2})),
            ToolCall::new("given-7", "beep", json!({})),
        ],
        reasoning: vec![
            ReasoningBlock {
                text: "unsigned thoughts".into(),
                ..ReasoningBlock::default()
            },
            super::super::wire::signature_block("function_call", Some(call_id), "", "SIG_CALL"),
            super::super::wire::signature_block("text", None, "", "SIG_TEXT"),
            super::super::wire::signature_block("thought", None, "signed thought", "SIG_THOUGHT"),
            ReasoningBlock {
                provider: Some("anthropic".into()),
                ..super::super::wire::signature_block("thought", None, "Claude's thinking", "ANTHROPIC_SIG")
            },
        ],
    };
    let request = ChatRequest::new(vec![
        Message::user("go"),
        Message::Assistant(assistant),
        Message::tool(ToolResult::success(call_id, "divide", "5")),
        Message::tool(ToolResult::success("given-7", "beep", "{}")),
    ]);
    let body = body(&request);
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"text": "signed thought", "thought": true, "thoughtSignature": "SIG_THOUGHT"},
            {"text": "Let me divide.", "thoughtSignature": "SIG_TEXT"},
            {"functionCall": {"name": "divide", "args": {"a": 10, "b": 2}}, "thoughtSignature": "SIG_CALL"},
            {"functionCall": {"id": "given-7", "name": "beep", "args": {}}}
        ])
    );
    assert_eq!(
        body["contents"][2]["parts"],
        json!([
            {"functionResponse": {"name": "divide", "response": {"result": 5}}},
            {"functionResponse": {"id": "given-7", "name": "beep", "response": {}}}
        ])
    );
}

#[test]
fn calls_without_a_gemini_signature_get_the_placeholder_on_their_first_part() {
    let placeholder = json!("context_engineering_is_the_way_to_go");
    // A turn of another provider: its own signed thinking, two parallel calls.
    let foreign = AssistantMessage {
        reasoning: vec![ReasoningBlock {
            text: "Both cities.".into(),
            signature: Some("CLAUDE_SIG".into()),
            data: None,
            provider: Some("anthropic".into()),
        }],
        ..AssistantMessage::with_tool_calls(
            "Checking both.",
            vec![
                ToolCall::new("toolu_1", "weather", json!({"city": "Paris"})),
                ToolCall::new("toolu_2", "weather", json!({"city": "Rome"})),
            ],
        )
    };
    // Gemini's own parallel calls: the first signed, as Gemini signs them.
    let own = AssistantMessage {
        reasoning: vec![ReasoningBlock {
            provider: Some("gcp.gemini".into()),
            ..super::super::wire::signature_block("function_call", Some("gemini_synth_r2_0"), "", "SIG_OWN")
        }],
        ..AssistantMessage::with_tool_calls(
            "",
            vec![
                ToolCall::new("gemini_synth_r2_0", "beep", json!({})),
                ToolCall::new("gemini_synth_r2_1", "beep", json!({})),
            ],
        )
    };
    // A call with no reasoning at all (injected, or from an unsigned model).
    let bare = AssistantMessage::with_tool_calls("", vec![ToolCall::new("c3", "beep", json!({}))]);
    let request = ChatRequest::new(vec![
        Message::user("Weather in Paris and Rome?"),
        Message::Assistant(foreign),
        Message::tool(ToolResult::success("toolu_1", "weather", "18")),
        Message::tool(ToolResult::success("toolu_2", "weather", "24")),
        Message::Assistant(own),
        Message::tool(ToolResult::success("gemini_synth_r2_0", "beep", "{}")),
        Message::tool(ToolResult::success("gemini_synth_r2_1", "beep", "{}")),
        Message::Assistant(bare),
        Message::tool(ToolResult::success("c3", "beep", "{}")),
    ]);
    let sent = body(&request);
    assert_eq!(
        sent["contents"][1]["parts"],
        json!([
            {"text": "Checking both."},
            {"functionCall": {"id": "toolu_1", "name": "weather", "args": {"city": "Paris"}},
             "thoughtSignature": placeholder},
            {"functionCall": {"id": "toolu_2", "name": "weather", "args": {"city": "Rome"}}}
        ])
    );
    assert_eq!(
        sent["contents"][3]["parts"],
        json!([
            {"functionCall": {"name": "beep", "args": {}}, "thoughtSignature": "SIG_OWN"},
            {"functionCall": {"name": "beep", "args": {}}}
        ])
    );
    assert_eq!(
        sent["contents"][5]["parts"],
        json!([{"functionCall": {"id": "c3", "name": "beep", "args": {}}, "thoughtSignature": placeholder}])
    );
    assert!(!sent.to_string().contains("CLAUDE_SIG"));
    // The same for every model: Gemini 3 requires it, older models skip it.
    let gemini_3 = build_request_json(&request, &BodyOptions::new("gemini-3-pro-preview")).unwrap();
    assert_eq!(gemini_3, sent);
    // A text-only turn gets no signature.
    let text = ChatRequest::new(vec![Message::user("hi"), Message::assistant("hello")]);
    assert_eq!(
        body(&text)["contents"][1],
        json!({"role": "model", "parts": [{"text": "hello"}]})
    );
}

#[test]
fn malformed_and_non_object_arguments_are_wrapped() {
    let assistant = AssistantMessage::with_tool_calls(
        "",
        vec![
            ToolCall::from_argument_text("a", "f", "{oops"),
            ToolCall::new("b", "f", json!([1])),
            ToolCall::new("c", "f", Value::Null),
        ],
    );
    let request = ChatRequest::new(vec![Message::user("x"), Message::Assistant(assistant)]);
    let parts = &body(&request)["contents"][1]["parts"];
    assert_eq!(parts[0]["functionCall"]["args"], json!({"_raw_arguments": "{oops"}));
    assert_eq!(parts[1]["functionCall"]["args"], json!({"value": [1]}));
    assert_eq!(parts[2]["functionCall"]["args"], json!({}));
}

#[test]
fn invalid_requests_are_refused_with_a_reason() {
    let options = BodyOptions::new("m");
    let empty = ChatRequest::new(vec![Message::system("only instructions")]);
    let error = build_request_json(&empty, &options).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert!(error.message.contains("at least one user or assistant message"));

    let nan = ChatRequest {
        temperature: Some(f32::NAN),
        ..ChatRequest::new(vec![Message::user("x")])
    };
    assert!(build_request_json(&nan, &options).is_err());

    let forced = ChatRequest {
        tool_choice: ToolChoice::Tool { name: "ghost".into() },
        ..ChatRequest::new(vec![Message::user("x")]).with_tools(vec![ToolDefinition::new(
            "real",
            "",
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        )])
    };
    let error = build_request_json(&forced, &options).unwrap_err();
    assert!(error.message.contains("`ghost`"), "{}", error.message);

    let recursive = ChatRequest::new(vec![Message::user("x")]).with_tools(vec![ToolDefinition::new(
        "tree",
        "",
        json!({"$defs": {"N": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/N"}}}}},
               "$ref": "#/$defs/N"}),
    )]);
    let error = build_request_json(&recursive, &options).unwrap_err();
    assert!(error.message.starts_with("tool `tree`"), "{}", error.message);
    assert!(error.message.contains("recursive"), "{}", error.message);
}

#[test]
fn parameterless_tools_have_no_parameters() {
    let request = ChatRequest::new(vec![Message::user("x")]).with_tools(vec![
        ToolDefinition::new("now", "The time.", json!({"type": "object", "properties": {}})),
        ToolDefinition::new("beep", "", Value::Null),
    ]);
    assert_eq!(
        body(&request)["tools"],
        json!([{"functionDeclarations": [{"name": "now", "description": "The time."}, {"name": "beep"}]}])
    );
}

#[test]
fn tool_media_waits_until_every_function_response_of_the_turn_is_sent() {
    let png = agent_testing::media::png();
    let image = json!({"inlineData": {"mimeType": "image/png", "data": png.base64().unwrap()}});
    let with_image = |id: &str| ToolResult {
        attachments: vec![png.clone()],
        ..ToolResult::success(id, "shot", "{}")
    };
    let request = ChatRequest::new(vec![
        Message::user("Two screenshots?"),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![
                ToolCall::new("a", "shot", json!({})),
                ToolCall::new("b", "shot", json!({})),
            ],
        )),
        Message::tool(with_image("a")),
        Message::tool(with_image("b")),
        Message::user_with("", vec![png.clone()]),
        Message::user("Compare them."),
    ]);
    let response = |id: &str| json!({"functionResponse": {"id": id, "name": "shot", "response": {}}});
    assert_eq!(
        body(&request)["contents"][2],
        json!({"role": "user", "parts": [
            response("a"), response("b"), image, image,
            image, {"text": "Compare them."}
        ]}),
        "a user message with only an attachment has no empty text part"
    );
    // A conversation that ends with the tool round still sends the media.
    let ends = ChatRequest::new(request.messages[..4].to_vec());
    assert_eq!(body(&ends)["contents"][2]["parts"].as_array().unwrap().len(), 4);
}
