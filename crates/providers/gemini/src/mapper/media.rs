//! Attachments as Gemini parts, checked before anything is sent.
//!
//! | attachment | part |
//! | --- | --- |
//! | inline bytes (image, PDF, text file, audio) | `{"inlineData": {"mimeType", "data"}}`, `data` in base64 |
//! | by URL | `{"fileData": {"mimeType", "fileUri"}}` |
//!
//! Gemini reads images, PDFs, text files and audio alike. The URL goes as
//! `fileUri` unchanged: a Files API URI, a public or signed HTTPS URL, or a
//! registered `gs://` object (Gemini fetches it; some older models take
//! only Files API URIs and say so in their error). The request JSON is
//! camelCase like the rest of the body. File names and OpenAI's image
//! `detail` are not sent (the Gemini API's parts have no field for them).
//!
//! Media a tool returned go, on Gemini 3 and later, inside its
//! `functionResponse` (`parts`, Gemini's multimodal function responses)
//! when they are bytes of a type Gemini takes there (PNG, JPEG and WebP
//! images, PDFs, plain text); everything else (other types, URLs), and
//! everything on earlier models (which read only JSON in a function
//! response), goes as ordinary parts of the same user content, right after
//! its function responses.
//!
//! Refused (an [`UnsupportedInput`](agent_core::LlmErrorKind::UnsupportedInput)
//! error, the request not sent): an attachment larger than the
//! [`MediaLimits`], and one a session store kept by hash whose bytes were
//! not loaded.

use agent_core::{Attachment, LlmError, LlmErrorKind, MediaError, MediaLimits, MediaSource};
use serde_json::{Value, json};

use crate::config::PROVIDER_NAME;

/// Gemini's documented limits, as raw bytes: inline data is at most
/// 100 MB per request, counted on its base64 text, so an image or a
/// recording is at most 75 MB of bytes; a PDF at most 50 MB.
pub const DEFAULT_MEDIA_LIMITS: MediaLimits = MediaLimits {
    max_image_bytes: 75_000_000,
    max_document_bytes: 50_000_000,
    max_audio_bytes: 75_000_000,
};

/// The types Gemini takes inside a `functionResponse` (Gemini 3).
const FUNCTION_RESPONSE_TYPES: [&str; 5] = ["image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"];

/// Where an attachment sits, in the words of an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    UserMessage,
    ToolResult,
}

impl Place {
    fn words(self) -> &'static str {
        match self {
            Self::UserMessage => "in a user message",
            Self::ToolResult => "in a tool result",
        }
    }
}

/// `attachments` as `inlineData` / `fileData` parts, in order.
pub(super) fn media_parts(
    attachments: &[Attachment],
    place: Place,
    limits: &MediaLimits,
) -> Result<Vec<Value>, LlmError> {
    attachments
        .iter()
        .map(|attachment| media_part(attachment, place, limits))
        .collect()
}

/// A tool result's attachments: those that go inside its
/// `functionResponse.parts`, and those that follow the turn's function
/// responses as parts of the same user content.
pub(super) fn tool_media(
    attachments: &[Attachment],
    limits: &MediaLimits,
    multimodal_responses: bool,
) -> Result<(Vec<Value>, Vec<Value>), LlmError> {
    let mut nested = Vec::new();
    let mut after = Vec::new();
    for attachment in attachments {
        let part = media_part(attachment, Place::ToolResult, limits)?;
        let inside = multimodal_responses
            && attachment.bytes().is_some()
            && FUNCTION_RESPONSE_TYPES.contains(&attachment.mime_type.as_str());
        if inside {
            nested.push(part);
        } else {
            after.push(part);
        }
    }
    Ok((nested, after))
}

/// Whether `model` takes media inside a `functionResponse`: Gemini 3 and
/// later (`gemini-3-pro-preview`, `gemini-3.1-…`, `models/gemini-4-…`).
pub(super) fn takes_multimodal_function_responses(model: &str) -> bool {
    let model = model.trim();
    let model = model.strip_prefix("models/").unwrap_or(model);
    let Some(version) = model.strip_prefix("gemini-") else {
        return false;
    };
    let major: String = version.chars().take_while(char::is_ascii_digit).collect();
    major.parse::<u32>().is_ok_and(|major| major >= 3)
}

fn media_part(attachment: &Attachment, place: Place, limits: &MediaLimits) -> Result<Value, LlmError> {
    if let MediaSource::Stored { .. } = attachment.source {
        return Err(not_loaded(attachment, place));
    }
    // Before encoding: an oversized file is refused without being copied.
    check_size(attachment, limits)?;
    Ok(match &attachment.source {
        MediaSource::Url { url } => json!({"fileData": {"mimeType": attachment.mime_type, "fileUri": url}}),
        MediaSource::Inline { data } => {
            json!({"inlineData": {"mimeType": attachment.mime_type, "data": agent_core::encode_base64(data)}})
        }
        MediaSource::Stored { .. } => return Err(not_loaded(attachment, place)),
    })
}

/// Refuses an attachment larger than `limits` allow for its kind, counting
/// the bytes it really holds (its `size` field may be stale).
fn check_size(attachment: &Attachment, limits: &MediaLimits) -> Result<(), LlmError> {
    let size = attachment
        .bytes()
        .map_or(attachment.size, |bytes| attachment.size.max(bytes.len() as u64));
    let max = limits.max_for(attachment.kind);
    if size > max {
        return Err(MediaError::TooLarge {
            kind: attachment.kind,
            size,
            max,
            provider: PROVIDER_NAME.to_owned(),
        }
        .into());
    }
    Ok(())
}

fn not_loaded(attachment: &Attachment, place: Place) -> LlmError {
    LlmError::new(
        LlmErrorKind::UnsupportedInput,
        format!(
            "{} {} is kept by a session store and its bytes were not loaded: load the conversation through \
             its store before sending it to {PROVIDER_NAME}",
            attachment.describe(),
            place.words()
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::ImageDetail;
    use agent_testing::media::{PNG, png, png_url, wav};

    use super::*;

    #[test]
    fn the_defaults_are_geminis_limits_in_raw_bytes() {
        assert_eq!(DEFAULT_MEDIA_LIMITS.max_image_bytes, 75_000_000);
        assert_eq!(DEFAULT_MEDIA_LIMITS.max_document_bytes, 50_000_000);
        assert_eq!(DEFAULT_MEDIA_LIMITS.max_audio_bytes, 75_000_000);
    }

    #[test]
    fn inline_bytes_are_inline_data_and_urls_file_data() {
        let parts = media_parts(
            &[png().with_detail(ImageDetail::High), png_url(), wav()],
            Place::UserMessage,
            &DEFAULT_MEDIA_LIMITS,
        )
        .unwrap();
        assert_eq!(
            parts,
            [
                json!({"inlineData": {"mimeType": "image/png", "data": agent_core::encode_base64(PNG)}}),
                json!({"fileData": {"mimeType": "image/png", "fileUri": "https://images.example.com/cat.png"}}),
                json!({"inlineData": {"mimeType": "audio/wav", "data": wav().base64().unwrap()}}),
            ]
        );
    }

    #[test]
    fn gemini_3_and_later_take_media_in_function_responses() {
        for model in [
            "gemini-3-pro-preview",
            "models/gemini-3.1-flash",
            "gemini-4-ultra",
            " gemini-10-x ",
        ] {
            assert!(takes_multimodal_function_responses(model), "{model}");
        }
        for model in [
            "gemini-2.5-flash",
            "gemini-2.0-flash",
            "gemini-pro",
            "gemma-3-27b",
            "learnlm-2.0",
            "",
        ] {
            assert!(!takes_multimodal_function_responses(model), "{model}");
        }
        let (nested, after) = tool_media(&[png(), wav(), png_url()], &DEFAULT_MEDIA_LIMITS, true).unwrap();
        assert_eq!(
            (nested.len(), after.len()),
            (1, 2),
            "audio and URLs are not taken inside"
        );
        assert_eq!(after[0]["inlineData"]["mimeType"], "audio/wav");
        assert!(after[1].get("fileData").is_some());
        let (nested, after) = tool_media(&[png(), wav()], &DEFAULT_MEDIA_LIMITS, false).unwrap();
        assert_eq!((nested.len(), after.len()), (0, 2));
    }

    #[test]
    fn oversized_and_unloaded_attachments_are_refused() {
        let limits = MediaLimits {
            max_audio_bytes: 10,
            ..DEFAULT_MEDIA_LIMITS
        };
        let error = media_parts(&[png(), wav()], Place::UserMessage, &limits).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
        assert_eq!(
            error.message,
            "the audio attachment is 44 bytes; gcp.gemini takes at most 10 bytes"
        );
        let mut stored = png();
        stored.source = MediaSource::Stored {
            sha256: "cd".repeat(32),
        };
        let error = tool_media(&[stored], &DEFAULT_MEDIA_LIMITS, true).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
        assert!(
            error
                .message
                .starts_with("an image (image/png) in a tool result is kept by a session store"),
            "{}",
            error.message
        );
    }
}
