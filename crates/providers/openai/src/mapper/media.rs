//! Attachments -> Chat Completions content parts.
//!
//! - an image is an `image_url` part: its URL, or a `data:` URL of its
//!   bytes, with `detail` when one is asked for;
//! - a PDF is a `file` part: `file_data` as a `data:` URL and `filename`
//!   (Chat Completions takes no file URL);
//! - a WAV or MP3 recording is an `input_audio` part (`data` in base64,
//!   `format`); other audio formats, and audio by URL, are refused;
//! - a text file (`text/*`) is a `text` part headed by its file name.
//!
//! Tool messages take text only: the media of a round of tool results go in
//! one user message right after that round's tool messages, each tool's
//! files after a line naming the tool and the call.
//!
//! Every attachment is checked before anything is written
//! ([`check_attachments`]): an attachment whose bytes a session store did
//! not load, one larger than the configured limit, or one of a kind or
//! form Chat Completions cannot take is an
//! [`LlmErrorKind::UnsupportedInput`] error and the request is not sent.

use std::fmt;

use agent_core::{
    Attachment, ImageDetail, LlmError, LlmErrorKind, MediaKind, MediaLimits, MediaSource, Message, ToolResult,
    encode_base64, normalise_mime, unsupported_attachment,
};
use serde::Serialize;
use serde::ser::{Error as _, SerializeMap, SerializeSeq, Serializer};

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

/// Refuses the request when one of its attachments cannot be sent: bytes
/// not loaded, too large for `limits`, or a kind or form Chat Completions
/// does not take.
pub(crate) fn check_attachments(messages: &[Message], limits: &MediaLimits, provider: &str) -> Result<(), LlmError> {
    for message in messages {
        let place = match message {
            Message::User { .. } => Place::UserMessage,
            Message::Tool(_) => Place::ToolResult,
            _ => continue,
        };
        for attachment in message.attachments() {
            if let MediaSource::Stored { .. } = attachment.source {
                return Err(not_loaded(attachment, place, provider));
            }
            limits.check(attachment, provider)?;
            part(attachment, place, provider)?;
        }
    }
    Ok(())
}

/// The refusal of an attachment whose bytes are still in a session store.
pub(crate) fn not_loaded(attachment: &Attachment, place: Place, provider: &str) -> LlmError {
    LlmError::new(
        LlmErrorKind::UnsupportedInput,
        format!(
            "{} {} was not sent to {provider}: its bytes were not loaded from the session store",
            attachment.describe(),
            place.as_str()
        ),
    )
}

/// One content part made from an attachment.
pub(crate) enum Part<'a> {
    /// `image_url` with a URL.
    ImageUrl { url: &'a str, detail: Option<ImageDetail> },
    /// `image_url` with a `data:` URL.
    ImageData {
        mime_type: &'a str,
        data: &'a [u8],
        detail: Option<ImageDetail>,
    },
    /// `file`, a PDF as a `data:` URL.
    File {
        mime_type: &'a str,
        data: &'a [u8],
        filename: &'a str,
    },
    /// `input_audio`.
    Audio { data: &'a [u8], format: &'static str },
    /// `text`, a text file headed by its name.
    Text {
        name: Option<&'a str>,
        mime_type: &'a str,
        text: &'a str,
    },
}

/// The part `attachment` becomes, or why it cannot be sent.
pub(crate) fn part<'a>(attachment: &'a Attachment, place: Place, provider: &str) -> Result<Part<'a>, LlmError> {
    let mime_type = attachment.mime_type.as_str();
    let normalised = normalise_mime(mime_type);
    let refuse = |why: &str| {
        let base = unsupported_attachment(attachment, place.as_str(), provider);
        LlmError::new(LlmErrorKind::UnsupportedInput, format!("{}: {why}", base.message))
    };
    let bytes = match &attachment.source {
        MediaSource::Inline { data } => Some(&**data),
        MediaSource::Url { .. } => None,
        MediaSource::Stored { .. } => return Err(not_loaded(attachment, place, provider)),
    };
    match (attachment.kind, bytes) {
        (MediaKind::Image, None) => Ok(Part::ImageUrl {
            url: attachment.url().unwrap_or_default(),
            detail: attachment.detail,
        }),
        (MediaKind::Image, Some(data)) => Ok(Part::ImageData {
            mime_type,
            data,
            detail: attachment.detail,
        }),
        (MediaKind::Document, Some(data)) if normalised == "application/pdf" => Ok(Part::File {
            mime_type,
            data,
            filename: attachment.name.as_deref().unwrap_or("document.pdf"),
        }),
        (MediaKind::Document, Some(data)) if normalised.starts_with("text/") => match std::str::from_utf8(data) {
            Ok(text) => Ok(Part::Text {
                name: attachment.name.as_deref(),
                mime_type,
                text,
            }),
            Err(_) => Err(refuse("its bytes are not UTF-8 text")),
        },
        (MediaKind::Document, Some(_)) => Err(refuse("Chat Completions takes PDF and text documents only")),
        (MediaKind::Document | MediaKind::Audio, None) => Err(refuse(
            "Chat Completions takes documents and audio only as bytes, not by URL, and Agentry does not fetch URLs: \
             attach the file's bytes",
        )),
        (MediaKind::Audio, Some(data)) => match normalised.as_str() {
            "audio/wav" => Ok(Part::Audio { data, format: "wav" }),
            "audio/mpeg" => Ok(Part::Audio { data, format: "mp3" }),
            _ => Err(refuse("Chat Completions takes WAV and MP3 audio only")),
        },
    }
}

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        match self {
            Self::ImageUrl { url, detail } => {
                map.serialize_entry("type", "image_url")?;
                map.serialize_entry("image_url", &ImageUrl { url, detail: *detail })?;
            }
            Self::ImageData {
                mime_type,
                data,
                detail,
            } => {
                map.serialize_entry("type", "image_url")?;
                map.serialize_entry(
                    "image_url",
                    &ImageUrl {
                        url: DataUrl { mime_type, data },
                        detail: *detail,
                    },
                )?;
            }
            Self::File {
                mime_type,
                data,
                filename,
            } => {
                map.serialize_entry("type", "file")?;
                map.serialize_entry(
                    "file",
                    &FileData {
                        filename,
                        file_data: DataUrl { mime_type, data },
                    },
                )?;
            }
            Self::Audio { data, format } => {
                map.serialize_entry("type", "input_audio")?;
                map.serialize_entry(
                    "input_audio",
                    &InputAudio {
                        data: Base64(data),
                        format,
                    },
                )?;
            }
            Self::Text { name, mime_type, text } => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry(
                    "text",
                    &DocumentText {
                        name: *name,
                        mime_type,
                        text,
                    },
                )?;
            }
        }
        map.end()
    }
}

#[derive(Serialize)]
struct ImageUrl<U> {
    url: U,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<ImageDetail>,
}

#[derive(Serialize)]
struct FileData<'a> {
    filename: &'a str,
    file_data: DataUrl<'a>,
}

#[derive(Serialize)]
struct InputAudio<'a> {
    data: Base64<'a>,
    format: &'a str,
}

/// Bytes in standard base64, written in pieces so that no copy of the
/// whole encoding is held besides the body.
struct Base64<'a>(&'a [u8]);

/// Bytes per encoded piece: a multiple of 3, so that only the last piece pads.
const PIECE: usize = 3 * 16 * 1024;

impl fmt::Display for Base64<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in self.0.chunks(PIECE) {
            f.write_str(&encode_base64(piece))?;
        }
        Ok(())
    }
}

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `data:{mime};base64,{bytes}`.
struct DataUrl<'a> {
    mime_type: &'a str,
    data: &'a [u8],
}

impl fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "data:{};base64,{}", self.mime_type, Base64(self.data))
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A text file's content under a line naming it.
struct DocumentText<'a> {
    name: Option<&'a str>,
    mime_type: &'a str,
    text: &'a str,
}

impl fmt::Display for DocumentText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "Attached file {name} ({}):\n\n{}", self.mime_type, self.text),
            None => write!(f, "Attached file ({}):\n\n{}", self.mime_type, self.text),
        }
    }
}

impl Serialize for DocumentText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A plain `text` part.
#[derive(Serialize)]
struct TextPart<T: fmt::Display> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(serialize_with = "display")]
    text: T,
}

fn display<S: Serializer, T: fmt::Display>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

fn text_part<T: fmt::Display>(text: T) -> TextPart<T> {
    TextPart { kind: "text", text }
}

/// A user message with attachments: its text part, then one part each.
pub(crate) struct UserWithMedia<'a> {
    pub(crate) content: &'a str,
    pub(crate) attachments: &'a [Attachment],
    pub(crate) provider: &'a str,
}

impl Serialize for UserWithMedia<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &UserParts(self))?;
        map.end()
    }
}

struct UserParts<'a>(&'a UserWithMedia<'a>);

impl Serialize for UserParts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let message = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        if !message.content.is_empty() {
            seq.serialize_element(&text_part(message.content))?;
        }
        for attachment in message.attachments {
            let part = part(attachment, Place::UserMessage, message.provider).map_err(S::Error::custom)?;
            seq.serialize_element(&part)?;
        }
        seq.end()
    }
}

/// The user message after a round of tool messages that carries the media
/// of its results (tool messages take text only).
pub(crate) struct ToolMedia<'a> {
    pub(crate) round: &'a [Message],
    pub(crate) provider: &'a str,
}

impl ToolMedia<'_> {
    /// The tool results of the round that carry attachments.
    fn results(&self) -> impl Iterator<Item = &ToolResult> {
        self.round.iter().filter_map(|message| match message {
            Message::Tool(result) if !result.attachments.is_empty() => Some(result),
            _ => None,
        })
    }

    /// Whether any result of the round carries attachments.
    pub(crate) fn has_media(round: &[Message]) -> bool {
        round
            .iter()
            .any(|message| matches!(message, Message::Tool(result) if !result.attachments.is_empty()))
    }
}

impl Serialize for ToolMedia<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &ToolMediaParts(self))?;
        map.end()
    }
}

struct ToolMediaParts<'a>(&'a ToolMedia<'a>);

impl Serialize for ToolMediaParts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let media = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        for result in media.results() {
            seq.serialize_element(&text_part(format_args!(
                "The result of the tool call {} ({}) came with these files:",
                result.call_id, result.name
            )))?;
            for attachment in &result.attachments {
                let part = part(attachment, Place::ToolResult, media.provider).map_err(S::Error::custom)?;
                seq.serialize_element(&part)?;
            }
        }
        seq.end()
    }
}
