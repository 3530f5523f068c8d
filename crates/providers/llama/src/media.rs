//! Attachments in the local model's prompt: text only for now.
//!
//! The chat template renders text, so a text file (`text/*`) is inlined
//! after the text of its message, headed by its file name; an image, a PDF
//! or a recording is an [`UnsupportedInput`](agent_core::LlmErrorKind::UnsupportedInput)
//! error naming the part and the provider, and so is a file by URL (Agentry
//! does not fetch URLs) or one whose bytes a session store did not load.
//! Nothing is dropped silently.

use std::borrow::Cow;
use std::fmt::Write as _;

use agent_core::{Attachment, LlmError, LlmErrorKind, MediaKind, MediaSource, normalise_mime, unsupported_attachment};

/// The provider named in refusals.
const PROVIDER: &str = "llama";

/// Where an attachment sits, for errors.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place {
    UserMessage,
    ToolResult,
}

impl Place {
    fn as_str(self) -> &'static str {
        match self {
            Self::UserMessage => "in a user message",
            Self::ToolResult => "in a tool result",
        }
    }
}

/// `text` followed by the text files among `attachments`, each headed by
/// its name; `text` itself, unchanged, without attachments.
///
/// # Errors
///
/// An attachment that is not a text file with its bytes at hand.
pub(crate) fn with_text_files<'a>(
    text: &'a str,
    attachments: &[Attachment],
    place: Place,
) -> Result<Cow<'a, str>, LlmError> {
    if attachments.is_empty() {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::from(text);
    for attachment in attachments {
        let file = text_of(attachment, place)?;
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let _ = match &attachment.name {
            Some(name) => write!(out, "Attached file {name} ({}):\n\n{file}", attachment.mime_type),
            None => write!(out, "Attached file ({}):\n\n{file}", attachment.mime_type),
        };
    }
    Ok(Cow::Owned(out))
}

/// The text of a text-file attachment, or why it cannot be in the prompt.
fn text_of(attachment: &Attachment, place: Place) -> Result<&str, LlmError> {
    let refuse = |why: &str| {
        let base = unsupported_attachment(attachment, place.as_str(), PROVIDER);
        LlmError::new(LlmErrorKind::UnsupportedInput, format!("{}: {why}", base.message))
    };
    let is_text = attachment.kind == MediaKind::Document && normalise_mime(&attachment.mime_type).starts_with("text/");
    if !is_text {
        return Err(refuse(
            "the local model reads text only; text files are inlined, images, PDFs and audio are not read",
        ));
    }
    match &attachment.source {
        MediaSource::Inline { data } => std::str::from_utf8(data).map_err(|_| refuse("its bytes are not UTF-8 text")),
        MediaSource::Url { .. } => Err(refuse(
            "Agentry does not fetch URLs: download the file and attach its bytes",
        )),
        MediaSource::Stored { .. } => Err(LlmError::new(
            LlmErrorKind::UnsupportedInput,
            format!(
                "{} {} was not sent to {PROVIDER}: its bytes were not loaded from the session store",
                attachment.describe(),
                place.as_str()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ChatRequest, Message, ToolCall, ToolResult};
    use agent_testing::media;
    use serde_json::json;

    use super::*;
    use crate::template::ChatTemplate;

    /// A minimal template: each message's role and content.
    const TEMPLATE: &str = "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}";

    fn render(request: &ChatRequest) -> Result<String, LlmError> {
        ChatTemplate::new(TEMPLATE, "", "").and_then(|template| template.render(request))
    }

    fn notes() -> Attachment {
        match Attachment::from_bytes(b"Buy milk.".to_vec(), Some("text/plain"), Some("notes.txt".into())) {
            Ok(notes) => notes,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn an_image_pdf_or_recording_is_refused_naming_the_part_and_the_provider() {
        for (attachment, part) in [
            (media::png(), "an image (image/png)"),
            (media::pdf(), "a document (application/pdf)"),
            (media::wav(), "an audio file (audio/wav)"),
        ] {
            let request = ChatRequest::new(vec![Message::user_with("What is this?", vec![attachment])]);
            let error = render(&request).expect_err("refused");
            assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
            assert!(
                error
                    .message
                    .starts_with(&format!("llama cannot take {part} in a user message")),
                "{error}"
            );
        }
        let tool = ChatRequest::new(vec![
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("c1", "render_chart", json!({}))],
            )),
            Message::tool(ToolResult {
                attachments: vec![media::png()],
                ..ToolResult::success("c1", "render_chart", "Rendered.")
            }),
        ]);
        let error = render(&tool).expect_err("refused");
        assert!(
            error
                .message
                .starts_with("llama cannot take an image (image/png) in a tool result"),
            "{error}"
        );
    }

    #[test]
    fn a_text_file_is_inlined_after_the_text() {
        let request = ChatRequest::new(vec![Message::user_with("Summarise:", vec![notes()])]);
        assert_eq!(
            render(&request).expect("renders"),
            "<user>Summarise:\n\nAttached file notes.txt (text/plain):\n\nBuy milk.</user>"
        );
        let plain = ChatRequest::new(vec![Message::user("hi")]);
        assert_eq!(render(&plain).expect("renders"), "<user>hi</user>");
    }

    #[test]
    fn a_file_by_url_or_not_loaded_is_refused() {
        let mut stored = notes();
        stored.source = MediaSource::Stored { sha256: "0".repeat(64) };
        let error = render(&ChatRequest::new(vec![Message::user_with("", vec![stored])])).expect_err("refused");
        assert!(error.message.contains("bytes were not loaded"), "{error}");
        let by_url = match Attachment::from_url("https://example.com/a.txt", "text/plain") {
            Ok(attachment) => attachment,
            Err(error) => panic!("{error}"),
        };
        let error = render(&ChatRequest::new(vec![Message::user_with("", vec![by_url])])).expect_err("refused");
        assert!(error.message.contains("does not fetch URLs"), "{error}");
    }
}
