//! Attachments in requests: what is refused before anything is sent (bytes
//! not loaded, too large, a kind or form Chat Completions does not take),
//! and where tool results' media go.
#![allow(clippy::unwrap_used)]

mod common;

use agent_core::{
    AssistantMessage, Attachment, ChatRequest, LlmErrorKind, MediaLimits, MediaSource, Message, ToolCall, ToolResult,
};
use agent_provider_openai::BodyOptions;
use agent_provider_openai::mapper::build_request_body;
use agent_testing::media;
use common::body_json;
use serde_json::{Value, json};

fn refusal(request: &ChatRequest, options: &BodyOptions) -> agent_core::LlmError {
    build_request_body(request, options).unwrap_err()
}

fn user_with(attachment: Attachment) -> ChatRequest {
    ChatRequest::new(vec![Message::user_with("What is this?", vec![attachment])])
}

#[test]
fn a_message_without_attachments_keeps_its_string_content() {
    let body = body_json(&ChatRequest::new(vec![Message::user("hi")]), &BodyOptions::new("m"));
    assert_eq!(body["messages"][0], json!({"role": "user", "content": "hi"}));
}

#[test]
fn an_oversized_attachment_is_refused_before_sending() {
    let options = BodyOptions {
        media_limits: MediaLimits {
            max_image_bytes: 66,
            max_document_bytes: 1 << 20,
            max_audio_bytes: 1 << 20,
        },
        ..BodyOptions::new("gpt-4o-mini")
    };
    let error = refusal(&user_with(media::png()), &options);
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert_eq!(
        error.message,
        "the image attachment is 67 bytes; openai takes at most 66 bytes"
    );
    // A tool's image is held to the same limit.
    let error = refusal(&tool_round(vec![media::png()]), &options);
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert!(error.message.contains("67 bytes"), "{error}");
    // The default limits take it.
    assert!(build_request_body(&user_with(media::png()), &BodyOptions::new("m")).is_ok());
}

#[test]
fn an_attachment_whose_bytes_were_not_loaded_is_refused() {
    let mut stored = media::png();
    stored.source = MediaSource::Stored {
        sha256: "ab".repeat(32),
    };
    let error = refusal(&user_with(stored), &BodyOptions::new("m"));
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert!(error.message.contains("bytes were not loaded"), "{error}");
    assert!(
        error.message.contains("an image (image/png) in a user message"),
        "{error}"
    );
}

#[test]
fn audio_other_than_wav_or_mp3_and_files_by_url_are_refused() {
    let mut flac = media::wav();
    flac.mime_type = "audio/flac".into();
    let error = refusal(&user_with(flac), &BodyOptions::new("m"));
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert!(
        error.message.contains("audio file (audio/flac)") && error.message.contains("WAV and MP3"),
        "{error}"
    );

    let pdf_url = Attachment::from_url("https://example.com/report.pdf", "application/pdf").unwrap();
    let error = refusal(&user_with(pdf_url), &BodyOptions::new("m"));
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert!(error.message.contains("does not fetch URLs"), "{error}");
}

#[test]
fn mp3_detail_and_text_documents_are_mapped() {
    let mut mp3 = media::wav();
    mp3.mime_type = "audio/mp3".into();
    let low = media::png_url().with_detail(agent_core::ImageDetail::Low);
    let notes = Attachment::from_bytes(b"Buy milk.".to_vec(), Some("text/plain"), Some("notes.txt".into())).unwrap();
    let request = ChatRequest::new(vec![Message::user_with("", vec![mp3, low, notes])]);
    let body = body_json(&request, &BodyOptions::new("m"));
    let parts = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(parts.len(), 3, "no text part for empty text: {parts:?}");
    assert_eq!(parts[0]["input_audio"]["format"], "mp3");
    assert_eq!(
        parts[1],
        json!({"type": "image_url", "image_url": {"url": "https://images.example.com/cat.png", "detail": "low"}})
    );
    assert_eq!(
        parts[2],
        json!({"type": "text", "text": "Attached file notes.txt (text/plain):\n\nBuy milk."})
    );
}

/// A round of two tool results, the first with `attachments`, then a question.
fn tool_round(attachments: Vec<Attachment>) -> ChatRequest {
    ChatRequest::new(vec![
        Message::user("Chart sales and costs."),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![
                ToolCall::new("call_a", "render_chart", json!({"metric": "sales"})),
                ToolCall::new("call_b", "render_chart", json!({"metric": "costs"})),
            ],
        )),
        Message::tool(ToolResult {
            attachments,
            ..ToolResult::success("call_a", "render_chart", "Rendered sales.")
        }),
        Message::tool(ToolResult::success("call_b", "render_chart", "No cost data.")),
        Message::user("Which is higher?"),
    ])
}

#[test]
fn tool_media_go_in_a_user_message_after_the_round() {
    let body = body_json(&tool_round(vec![media::png()]), &BodyOptions::new("m"));
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "user", "user"]);
    assert_eq!(messages[2]["content"], "Rendered sales.", "tool messages stay text");
    let parts = messages[4]["content"].as_array().unwrap();
    assert_eq!(
        parts[0],
        json!({"type": "text", "text": "The result of the tool call call_a (render_chart) came with these files:"})
    );
    assert_eq!(parts[1]["type"], "image_url");
    assert!(
        parts[1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,iVBORw0KGgo")
    );
    assert_eq!(messages[5], json!({"role": "user", "content": "Which is higher?"}));

    let plain = body_json(&tool_round(Vec::new()), &BodyOptions::new("m"));
    assert_eq!(
        plain["messages"].as_array().unwrap().len(),
        5,
        "no media, no extra message"
    );
}

#[test]
fn media_bytes_never_show_in_errors_or_debug() {
    let error = refusal(
        &user_with(media::png()),
        &BodyOptions {
            media_limits: MediaLimits {
                max_image_bytes: 1,
                max_document_bytes: 1,
                max_audio_bytes: 1,
            },
            ..BodyOptions::new("m")
        },
    );
    let base64 = agent_core::encode_base64(media::PNG);
    assert!(!error.to_string().contains(&base64[..12]), "{error}");
    let request = user_with(media::png());
    assert!(!format!("{request:?}").contains(&base64[..12]));
    let _: Value = body_json(&request, &BodyOptions::new("m"));
}
