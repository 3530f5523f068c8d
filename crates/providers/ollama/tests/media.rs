//! Attachments in `/api/chat` requests: images in `images`, text files in
//! `content`, and what is refused before anything is sent.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{
    AssistantMessage, Attachment, ChatRequest, LlmErrorKind, MediaLimits, MediaSource, Message, ToolCall, ToolResult,
};
use agent_provider_ollama::BodyOptions;
use agent_provider_ollama::mapper::build_request_body;
use agent_testing::media;
use common::body_json;
use serde_json::json;

fn user_with(attachments: Vec<Attachment>) -> ChatRequest {
    ChatRequest::new(vec![Message::user_with("What is this?", attachments)])
}

fn refusal(request: &ChatRequest, options: &BodyOptions) -> agent_core::LlmError {
    let error = build_request_body(request, options).unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput, "{error}");
    error
}

fn notes() -> Attachment {
    Attachment::from_bytes(b"Buy milk.".to_vec(), Some("text/markdown"), Some("notes.md".into())).unwrap()
}

#[test]
fn images_go_in_images_and_text_files_in_content() {
    let body = body_json(&user_with(vec![media::png(), notes()]), &BodyOptions::new("m"));
    assert_eq!(
        body["messages"][0],
        json!({
            "role": "user",
            "content": "What is this?\n\nAttached file notes.md (text/markdown):\n\nBuy milk.",
            "images": [agent_core::encode_base64(media::PNG)]
        })
    );
    let text_only = body_json(&ChatRequest::new(vec![Message::user("hi")]), &BodyOptions::new("m"));
    assert_eq!(text_only["messages"][0], json!({"role": "user", "content": "hi"}));
}

#[test]
fn a_tool_result_carries_its_images_and_files() {
    let request = ChatRequest::new(vec![
        Message::user("Chart it."),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("c1", "render_chart", json!({}))],
        )),
        Message::tool(ToolResult {
            attachments: vec![media::png(), notes()],
            ..ToolResult::error("c1", "render_chart", "partly rendered")
        }),
    ]);
    let body = body_json(&request, &BodyOptions::new("m"));
    assert_eq!(
        body["messages"][2],
        json!({
            "role": "tool",
            "content": "Error: partly rendered\n\nAttached file notes.md (text/markdown):\n\nBuy milk.",
            "images": [agent_core::encode_base64(media::PNG)],
            "tool_name": "render_chart"
        })
    );
}

#[test]
fn an_image_by_url_pdf_and_audio_are_refused_naming_the_part() {
    let error = refusal(&user_with(vec![media::png_url()]), &BodyOptions::new("m"));
    assert!(
        error
            .message
            .starts_with("ollama cannot take an image (image/png) in a user message")
            && error.message.contains("Agentry does not fetch URLs"),
        "{error}"
    );
    let error = refusal(&user_with(vec![media::pdf()]), &BodyOptions::new("m"));
    assert!(
        error
            .message
            .starts_with("ollama cannot take a document (application/pdf) in a user message"),
        "{error}"
    );
    let error = refusal(&user_with(vec![media::wav()]), &BodyOptions::new("m"));
    assert!(
        error
            .message
            .starts_with("ollama cannot take an audio file (audio/wav) in a user message"),
        "{error}"
    );
    let tool = ChatRequest::new(vec![Message::tool(ToolResult {
        attachments: vec![media::wav()],
        ..ToolResult::success("c1", "record", "Recorded.")
    })]);
    let error = refusal(&tool, &BodyOptions::new("m"));
    assert!(error.message.contains("in a tool result"), "{error}");
}

#[test]
fn an_oversized_or_unloaded_attachment_is_refused() {
    let tight = BodyOptions {
        media_limits: MediaLimits {
            max_image_bytes: 10,
            max_document_bytes: 10,
            max_audio_bytes: 10,
        },
        ..BodyOptions::new("m")
    };
    let error = refusal(&user_with(vec![media::png()]), &tight);
    assert_eq!(
        error.message,
        "the image attachment is 67 bytes; ollama takes at most 10 bytes"
    );
    let mut stored = media::png();
    stored.source = MediaSource::Stored { sha256: "0".repeat(64) };
    let error = refusal(&user_with(vec![stored]), &BodyOptions::new("m"));
    assert!(error.message.contains("bytes were not loaded"), "{error}");
}
