//! Attachments as Messages API content blocks: `image` and `document`
//! blocks, each checked before anything is sent.
//!
//! | attachment | block |
//! | --- | --- |
//! | JPEG, PNG, GIF or WebP image, inline | `image`, source `base64` (`media_type`, `data`) |
//! | image by URL | `image`, source `url` |
//! | PDF, inline | `document`, source `base64` with `application/pdf` |
//! | PDF by URL | `document`, source `url` |
//! | text file (`text/*`), inline | `document`, source `text` with `media_type: text/plain` |
//!
//! A document carries `title` when the attachment has a file name. The same
//! blocks go in a user message and inside a `tool_result`'s content.
//! Refused (an [`UnsupportedInput`](agent_core::LlmErrorKind::UnsupportedInput)
//! error naming the part and the provider, the request not sent): audio,
//! other image types, a text file by URL, a text file that is not UTF-8,
//! an attachment larger than the [`MediaLimits`], and one a session store
//! kept by hash whose bytes were not loaded.

use agent_core::{Attachment, LlmError, LlmErrorKind, MediaError, MediaKind, MediaLimits, MediaSource};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::config::PROVIDER_NAME;

/// 1 MiB.
const MIB: u64 = 1024 * 1024;

/// Anthropic's documented limits, as raw bytes:
///
/// - an image: 5 MB, counted on its base64 text, so 3.75 MiB of bytes;
/// - a document: a request is at most 32 MB, so a PDF's base64 text must fit
///   in it: 24 MiB of bytes at most (also at most 100 pages, which only
///   the API counts);
/// - audio: none, Anthropic takes no audio (refused whatever its size).
pub const DEFAULT_MEDIA_LIMITS: MediaLimits = MediaLimits {
    max_image_bytes: 5 * MIB * 3 / 4,
    max_document_bytes: 32 * MIB * 3 / 4,
    max_audio_bytes: 0,
};

/// The image types the Messages API reads.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

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

/// An attachment ready to be written as a block, borrowed from the request.
pub(super) enum MediaBlock<'a> {
    /// `image` with a `base64` source.
    InlineImage { media_type: &'a str, data: &'a [u8] },
    /// `image` with a `url` source.
    UrlImage(&'a str),
    /// `document` with a `base64` PDF source.
    InlinePdf { data: &'a [u8], title: Option<&'a str> },
    /// `document` with a `url` source (a PDF).
    UrlPdf { url: &'a str, title: Option<&'a str> },
    /// `document` with a `text` source.
    Text { text: &'a str, title: Option<&'a str> },
}

/// `attachment` as a block, or the reason Anthropic cannot take it.
pub(super) fn media_block<'a>(
    attachment: &'a Attachment,
    place: Place,
    limits: &MediaLimits,
) -> Result<MediaBlock<'a>, LlmError> {
    if let MediaSource::Stored { .. } = attachment.source {
        return Err(not_loaded(attachment, place));
    }
    let title = attachment.name.as_deref().filter(|name| !name.trim().is_empty());
    let mime = attachment.mime_type.as_str();
    let block = match (attachment.kind, &attachment.source) {
        (MediaKind::Audio, _) => return Err(refuse(attachment, place, "it reads no audio")),
        (MediaKind::Image, _) if !IMAGE_TYPES.contains(&mime) => {
            return Err(refuse(attachment, place, "it reads JPEG, PNG, GIF and WebP images"));
        }
        (MediaKind::Image, MediaSource::Inline { data }) => MediaBlock::InlineImage { media_type: mime, data },
        (MediaKind::Image, MediaSource::Url { url }) => MediaBlock::UrlImage(url),
        (MediaKind::Document, MediaSource::Inline { data }) if mime == "application/pdf" => {
            MediaBlock::InlinePdf { data, title }
        }
        (MediaKind::Document, MediaSource::Url { url }) if mime == "application/pdf" => {
            MediaBlock::UrlPdf { url, title }
        }
        (MediaKind::Document, MediaSource::Url { .. }) => {
            return Err(refuse(
                attachment,
                place,
                "it fetches only PDFs by URL: attach the text file's bytes",
            ));
        }
        (MediaKind::Document, MediaSource::Inline { data }) => match std::str::from_utf8(data) {
            Ok(text) => MediaBlock::Text { text, title },
            Err(_) => return Err(refuse(attachment, place, "the file is not UTF-8 text")),
        },
        (_, MediaSource::Stored { .. }) => return Err(not_loaded(attachment, place)),
    };
    check_size(attachment, limits)?;
    Ok(block)
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

fn refuse(attachment: &Attachment, place: Place, why: &str) -> LlmError {
    let mut error = agent_core::unsupported_attachment(attachment, place.words(), PROVIDER_NAME);
    error.message.push_str(": ");
    error.message.push_str(why);
    error
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

impl MediaBlock<'_> {
    /// Writes the block's keys (`type`, `source`, `title`) into `map`.
    pub(super) fn write<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        let (kind, title) = match self {
            Self::InlineImage { .. } | Self::UrlImage(_) => ("image", None),
            Self::InlinePdf { title, .. } | Self::UrlPdf { title, .. } | Self::Text { title, .. } => {
                ("document", *title)
            }
        };
        map.serialize_entry("type", kind)?;
        map.serialize_entry("source", &Source(self))?;
        if let Some(title) = title {
            map.serialize_entry("title", title)?;
        }
        Ok(())
    }
}

/// A block's `source` object.
struct Source<'a>(&'a MediaBlock<'a>);

impl Serialize for Source<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        match self.0 {
            MediaBlock::InlineImage { media_type, data } => {
                map.serialize_entry("type", "base64")?;
                map.serialize_entry("media_type", media_type)?;
                map.serialize_entry("data", &agent_core::encode_base64(data))?;
            }
            MediaBlock::InlinePdf { data, .. } => {
                map.serialize_entry("type", "base64")?;
                map.serialize_entry("media_type", "application/pdf")?;
                map.serialize_entry("data", &agent_core::encode_base64(data))?;
            }
            MediaBlock::UrlImage(url) | MediaBlock::UrlPdf { url, .. } => {
                map.serialize_entry("type", "url")?;
                map.serialize_entry("url", url)?;
            }
            MediaBlock::Text { text, .. } => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("media_type", "text/plain")?;
                map.serialize_entry("data", text)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::ImageDetail;
    use agent_testing::media::{PNG, png, wav};
    use serde_json::{Value, json};

    use super::*;

    fn block_json(attachment: &Attachment) -> Value {
        struct Wrapper<'a>(MediaBlock<'a>);
        impl Serialize for Wrapper<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(None)?;
                self.0.write(&mut map)?;
                map.end()
            }
        }
        let block = media_block(attachment, Place::UserMessage, &DEFAULT_MEDIA_LIMITS).unwrap();
        serde_json::to_value(Wrapper(block)).unwrap()
    }

    fn refusal(attachment: &Attachment, place: Place) -> LlmError {
        match media_block(attachment, place, &DEFAULT_MEDIA_LIMITS) {
            Ok(_) => panic!("{attachment:?} was taken"),
            Err(error) => error,
        }
    }

    #[test]
    fn the_defaults_are_anthropics_limits_in_raw_bytes() {
        assert_eq!(DEFAULT_MEDIA_LIMITS.max_image_bytes, 3_932_160);
        assert_eq!(DEFAULT_MEDIA_LIMITS.max_document_bytes, 25_165_824);
        assert_eq!(DEFAULT_MEDIA_LIMITS.max_audio_bytes, 0);
    }

    #[test]
    fn images_documents_and_text_files_become_their_blocks() {
        assert_eq!(
            block_json(&png().with_detail(ImageDetail::Low)),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                   "data": agent_core::encode_base64(PNG)}}),
            "the detail is OpenAI's: not sent"
        );
        let url = Attachment::from_url("https://example.com/a.webp", "image/webp").unwrap();
        assert_eq!(
            block_json(&url),
            json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.webp"}})
        );
        let mut pdf_url = Attachment::from_url("https://example.com/r.pdf", "application/pdf").unwrap();
        pdf_url.name = Some("r.pdf".into());
        assert_eq!(
            block_json(&pdf_url),
            json!({"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}, "title": "r.pdf"})
        );
        let notes = Attachment::from_bytes(b"# Notes\nBuy milk.".to_vec(), Some("text/markdown"), None).unwrap();
        assert_eq!(
            block_json(&notes),
            json!({"type": "document", "source": {"type": "text", "media_type": "text/plain",
                   "data": "# Notes\nBuy milk."}}),
            "no title without a name"
        );
    }

    #[test]
    fn what_anthropic_cannot_take_is_refused_naming_the_part() {
        let error = refusal(&wav(), Place::ToolResult);
        assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
        assert_eq!(
            error.message,
            "anthropic cannot take an audio file (audio/wav) in a tool result: it reads no audio"
        );

        let bmp = Attachment::from_url("https://example.com/a.bmp", "image/bmp").unwrap();
        assert!(
            refusal(&bmp, Place::UserMessage)
                .message
                .contains("JPEG, PNG, GIF and WebP")
        );
        let text_url = Attachment::from_url("https://example.com/a.txt", "text/plain").unwrap();
        assert!(
            refusal(&text_url, Place::UserMessage)
                .message
                .contains("only PDFs by URL")
        );
        let mut binary = Attachment::from_bytes(b"plain".to_vec(), Some("text/plain"), None).unwrap();
        binary.source = MediaSource::Inline {
            data: vec![0xFF, 0xFE, 0x00].into(),
        };
        assert!(refusal(&binary, Place::UserMessage).message.contains("not UTF-8"));

        let mut stored = png();
        stored.source = MediaSource::Stored {
            sha256: "ab".repeat(32),
        };
        let error = refusal(&stored, Place::UserMessage);
        assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
        assert!(error.message.contains("its bytes were not loaded"), "{}", error.message);
    }

    #[test]
    fn an_attachment_over_the_limit_is_too_large_counting_its_real_bytes() {
        let limits = MediaLimits {
            max_image_bytes: 80,
            ..DEFAULT_MEDIA_LIMITS
        };
        let mut image = png();
        assert!(media_block(&image, Place::UserMessage, &limits).is_ok(), "67 bytes fit");
        image.source = MediaSource::Inline {
            data: [PNG, &[0; 20]].concat().into(),
        };
        let Err(error) = media_block(&image, Place::UserMessage, &limits) else {
            panic!("87 bytes are over 80");
        };
        assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
        assert_eq!(
            error.message,
            "the image attachment is 87 bytes; anthropic takes at most 80 bytes"
        );
    }
}
