//! Attachments -> `/api/chat` message fields.
//!
//! Ollama takes images as base64 in a message's `images` (any role, tool
//! results included, per its OpenAPI `ChatMessage`); a text file goes into
//! the message's `content`, after its text, headed by its file name. It
//! takes nothing else:
//!
//! - an image by URL is refused (Ollama reads only the bytes, and Agentry
//!   does not fetch URLs);
//! - a PDF and audio are refused, naming the part and the provider;
//! - an attachment whose bytes a session store did not load, or one larger
//!   than the configured limit, is refused.
//!
//! Every attachment is checked before anything is written
//! ([`check_attachments`]), so the request is never sent half-mapped.

use std::fmt;

use agent_core::{
    Attachment, LlmError, LlmErrorKind, MediaKind, MediaLimits, MediaSource, Message, encode_base64, normalise_mime,
    unsupported_attachment,
};
use serde::Serialize;
use serde::ser::{Error as _, SerializeSeq, Serializer};

/// The provider named in refusals.
const PROVIDER: &str = "ollama";

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

/// Refuses the request when one of its attachments cannot be sent.
pub(crate) fn check_attachments(messages: &[Message], limits: &MediaLimits) -> Result<(), LlmError> {
    for message in messages {
        let place = match message {
            Message::User { .. } => Place::UserMessage,
            Message::Tool(_) => Place::ToolResult,
            _ => continue,
        };
        for attachment in message.attachments() {
            if let MediaSource::Stored { .. } = attachment.source {
                return Err(not_loaded(attachment, place));
            }
            limits.check(attachment, PROVIDER)?;
            classify(attachment, place)?;
        }
    }
    Ok(())
}

fn not_loaded(attachment: &Attachment, place: Place) -> LlmError {
    LlmError::new(
        LlmErrorKind::UnsupportedInput,
        format!(
            "{} {} was not sent to {PROVIDER}: its bytes were not loaded from the session store",
            attachment.describe(),
            place.as_str()
        ),
    )
}

/// What an attachment becomes.
enum Mapped<'a> {
    /// An entry of `images`.
    Image(&'a [u8]),
    /// Text appended to `content`.
    Text {
        name: Option<&'a str>,
        mime_type: &'a str,
        text: &'a str,
    },
}

fn classify(attachment: &Attachment, place: Place) -> Result<Mapped<'_>, LlmError> {
    let refuse = |why: &str| {
        let base = unsupported_attachment(attachment, place.as_str(), PROVIDER);
        LlmError::new(LlmErrorKind::UnsupportedInput, format!("{}: {why}", base.message))
    };
    let is_text = attachment.kind == MediaKind::Document && normalise_mime(&attachment.mime_type).starts_with("text/");
    match attachment.kind {
        MediaKind::Document if !is_text => {
            return Err(refuse(
                "Ollama takes images and text files only; extract the document's text or pages first",
            ));
        }
        MediaKind::Audio => return Err(refuse("Ollama takes images and text files only")),
        _ => {}
    }
    let data = match &attachment.source {
        MediaSource::Inline { data } => &**data,
        MediaSource::Url { .. } => {
            return Err(refuse(
                "Ollama takes files only as bytes, not by URL, and Agentry does not fetch URLs: \
                 download the file and attach its bytes",
            ));
        }
        MediaSource::Stored { .. } => return Err(not_loaded(attachment, place)),
    };
    if !is_text {
        return Ok(Mapped::Image(data));
    }
    match std::str::from_utf8(data) {
        Ok(text) => Ok(Mapped::Text {
            name: attachment.name.as_deref(),
            mime_type: &attachment.mime_type,
            text,
        }),
        Err(_) => Err(refuse("its bytes are not UTF-8 text")),
    }
}

/// A message's text followed by its text files, each headed by its name.
pub(crate) struct ContentWithFiles<'a> {
    /// Start with `Error: ` (a failed tool result that does not say so).
    pub(crate) error_prefix: bool,
    pub(crate) text: &'a str,
    pub(crate) attachments: &'a [Attachment],
    pub(crate) place: Place,
}

impl ContentWithFiles<'_> {
    /// Whether any attachment is a text file (otherwise the text goes alone).
    pub(crate) fn has_files(attachments: &[Attachment]) -> bool {
        attachments
            .iter()
            .any(|attachment| attachment.kind == MediaKind::Document)
    }

    /// Whether any attachment is an image.
    pub(crate) fn has_images(attachments: &[Attachment]) -> bool {
        attachments.iter().any(|attachment| attachment.kind == MediaKind::Image)
    }
}

/// A text file, ready to write.
struct TextFile<'a> {
    name: Option<&'a str>,
    mime_type: &'a str,
    text: &'a str,
}

/// The message's text and its text files, written without failing.
struct Content<'a> {
    error_prefix: bool,
    text: &'a str,
    files: Vec<TextFile<'a>>,
}

impl fmt::Display for Content<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.error_prefix {
            f.write_str("Error: ")?;
        }
        f.write_str(self.text)?;
        let mut written = self.error_prefix || !self.text.is_empty();
        for file in &self.files {
            if written {
                f.write_str("\n\n")?;
            }
            written = true;
            match file.name {
                Some(name) => write!(f, "Attached file {name} ({}):\n\n{}", file.mime_type, file.text)?,
                None => write!(f, "Attached file ({}):\n\n{}", file.mime_type, file.text)?,
            }
        }
        Ok(())
    }
}

impl Serialize for ContentWithFiles<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut files = Vec::new();
        for attachment in self.attachments {
            if let Mapped::Text { name, mime_type, text } =
                classify(attachment, self.place).map_err(S::Error::custom)?
            {
                files.push(TextFile { name, mime_type, text });
            }
        }
        serializer.collect_str(&Content {
            error_prefix: self.error_prefix,
            text: self.text,
            files,
        })
    }
}

/// `images`: the image attachments, base64.
pub(crate) struct Images<'a> {
    pub(crate) attachments: &'a [Attachment],
    pub(crate) place: Place,
}

impl Serialize for Images<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for attachment in self.attachments {
            if let Mapped::Image(data) = classify(attachment, self.place).map_err(S::Error::custom)? {
                seq.serialize_element(&Base64(data))?;
            }
        }
        seq.end()
    }
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
