//! Media in a conversation: images, documents and audio attached to a user
//! message or returned by a tool.
//!
//! An [`Attachment`] is given by URL (the provider fetches it) or by its
//! bytes, with a MIME type and a size. Bytes are checked when the
//! attachment is made ([`Attachment::from_bytes`]): the type is sniffed from
//! them ([`sniff`]) and must match the declared one. They never show in `Debug` (only
//! the type and size do), and serialise as base64; a session store keeps
//! each distinct file once, by its SHA-256 ([`MediaSource::Stored`]).
//!
//! ```
//! use agent_core::{Attachment, MediaKind, Message};
//!
//! // The first bytes of a PNG file.
//! let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89".to_vec();
//! let image = Attachment::from_bytes(png, Some("image/png"), None)?;
//! assert_eq!((image.kind, image.mime_type.as_str(), image.size), (MediaKind::Image, "image/png", 33));
//! assert_eq!(format!("{image:?}"), "Attachment(image/png, 33 bytes, inline)");
//!
//! let message = Message::user_with("What is in this picture?", vec![image]);
//! assert_eq!(message.attachments().len(), 1);
//!
//! // A JPEG declared as a PNG is refused.
//! let jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F', 0];
//! assert!(Attachment::from_bytes(jpeg, Some("image/png"), None).is_err());
//! # Ok::<(), agent_core::MediaError>(())
//! ```

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What an attachment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// A picture (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
    Image,
    /// A document: a PDF, or a text file (`text/plain`, `text/markdown`, ...).
    Document,
    /// A sound recording (`audio/wav`, `audio/mpeg`, ...).
    Audio,
}

impl MediaKind {
    /// The kind of a MIME type; `None` for one that is none of them.
    pub fn of_mime(mime_type: &str) -> Option<Self> {
        let mime_type = mime_type.trim().to_ascii_lowercase();
        if mime_type.starts_with("image/") {
            Some(Self::Image)
        } else if mime_type.starts_with("audio/") {
            Some(Self::Audio)
        } else if mime_type == "application/pdf" || mime_type.starts_with("text/") {
            Some(Self::Document)
        } else {
            None
        }
    }

    /// The snake_case name (`image`, `document`, `audio`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Document => "document",
            Self::Audio => "audio",
        }
    }
}

impl fmt::Display for MediaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an attachment's content is.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum MediaSource {
    /// At a URL the provider fetches itself (Agentry does not).
    Url {
        /// The URL (`https://...`).
        url: String,
    },
    /// The bytes themselves (base64 in JSON).
    Inline {
        /// The content.
        #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
        data: Arc<[u8]>,
    },
    /// Kept by a session store, once per distinct content; the store puts
    /// the bytes back when it loads the conversation.
    Stored {
        /// The content's SHA-256, in lowercase hexadecimal.
        sha256: String,
    },
}

impl fmt::Debug for MediaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A URL may carry a signature in its query: its host only.
            Self::Url { url } => write!(f, "url({})", url_host(url)),
            Self::Inline { .. } => f.write_str("inline"),
            Self::Stored { sha256 } => write!(f, "stored({})", sha256.get(..12).unwrap_or(sha256)),
        }
    }
}

/// The scheme and host of `url`, for display.
fn url_host(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    let end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |at| after_scheme + at);
    &url[..end]
}

/// Which resolution a provider should read an image at (OpenAI's
/// `detail`); providers without the setting ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageDetail {
    /// The provider chooses.
    Auto,
    /// A low-resolution pass (fewer tokens).
    Low,
    /// The full resolution.
    High,
}

/// An image, a document or a recording in a conversation.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// What it is.
    pub kind: MediaKind,
    /// Its MIME type (`image/png`, `application/pdf`, ...).
    pub mime_type: String,
    /// Its size in bytes (0 when given by URL and not known).
    #[serde(default)]
    pub size: u64,
    /// Where its content is.
    #[serde(flatten)]
    pub source: MediaSource,
    /// Its file name, when it has one (documents are shown by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The resolution an image is read at (OpenAI), when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<ImageDetail>,
}

impl fmt::Debug for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Attachment({}, {} bytes, {:?})",
            self.mime_type, self.size, self.source
        )
    }
}

/// An attachment that cannot be made, sent or stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    /// The bytes are of another type than declared.
    #[error("the attachment is declared as {declared} but its content is {sniffed}")]
    TypeMismatch {
        /// The declared MIME type.
        declared: String,
        /// The type its bytes have.
        sniffed: String,
    },
    /// The type is neither an image, a document nor audio, or cannot be told.
    #[error("the attachment's type {0} is not an image, a PDF, a text file or audio")]
    UnsupportedType(String),
    /// The attachment is larger than the provider takes.
    #[error("the {kind} attachment is {size} bytes; {provider} takes at most {max} bytes")]
    TooLarge {
        /// What it is.
        kind: MediaKind,
        /// Its size.
        size: u64,
        /// The provider's limit.
        max: u64,
        /// The provider.
        provider: String,
    },
    /// The provider (or model) cannot take this kind of attachment here.
    #[error("{provider} cannot take {part}")]
    Unsupported {
        /// The part, in words (`an audio attachment in a tool result`).
        part: String,
        /// The provider, and the model when it is the model that cannot.
        provider: String,
    },
}

/// The largest attachment of each kind a provider takes, in bytes: each
/// provider's defaults come from its documented limits, and its
/// `[providers.NAME]` table may lower (or raise) them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaLimits {
    /// The largest image.
    pub max_image_bytes: u64,
    /// The largest document (PDF or text file).
    pub max_document_bytes: u64,
    /// The largest recording.
    pub max_audio_bytes: u64,
}

impl MediaLimits {
    /// The limit of `kind`.
    pub fn max_for(&self, kind: MediaKind) -> u64 {
        match kind {
            MediaKind::Image => self.max_image_bytes,
            MediaKind::Document => self.max_document_bytes,
            MediaKind::Audio => self.max_audio_bytes,
        }
    }

    /// Refuses `attachment` when it is larger than `provider` takes
    /// ([`MediaError::TooLarge`]). An attachment given by URL has no known
    /// size: the provider judges it.
    pub fn check(&self, attachment: &Attachment, provider: &str) -> Result<(), MediaError> {
        let max = self.max_for(attachment.kind);
        if attachment.size > max {
            return Err(MediaError::TooLarge {
                kind: attachment.kind,
                size: attachment.size,
                max,
                provider: provider.to_owned(),
            });
        }
        Ok(())
    }
}

impl From<MediaError> for crate::LlmError {
    fn from(error: MediaError) -> Self {
        Self::new(crate::LlmErrorKind::UnsupportedInput, error.to_string())
    }
}

/// The refusal of `attachment` by `provider` where it sits (`where_` is
/// `"in a user message"` or `"in a tool result"`): an
/// [`LlmErrorKind::UnsupportedInput`](crate::LlmErrorKind::UnsupportedInput)
/// naming the part and the provider.
pub fn unsupported_attachment(attachment: &Attachment, where_: &str, provider: &str) -> crate::LlmError {
    MediaError::Unsupported {
        part: format!("{} {where_}", attachment.describe()),
        provider: provider.to_owned(),
    }
    .into()
}

impl Attachment {
    /// An attachment of `bytes`: its type is sniffed from them ([`sniff`]) and must
    /// match `declared_mime` when one is given; a text file (which has no
    /// signature to sniff) must be declared `text/...` and be UTF-8.
    ///
    /// # Errors
    ///
    /// [`MediaError::TypeMismatch`] when the bytes are of another type than
    /// declared, [`MediaError::UnsupportedType`] when the type is none this
    /// module knows.
    pub fn from_bytes(bytes: Vec<u8>, declared_mime: Option<&str>, name: Option<String>) -> Result<Self, MediaError> {
        let declared = declared_mime.map(normalise_mime);
        let sniffed = sniff(&bytes);
        let mime_type = match (sniffed, declared) {
            (Some(sniffed), Some(declared)) if sniffed != declared => {
                return Err(MediaError::TypeMismatch {
                    declared,
                    sniffed: sniffed.to_owned(),
                });
            }
            (Some(sniffed), _) => sniffed.to_owned(),
            (None, Some(declared)) if declared.starts_with("text/") => {
                if std::str::from_utf8(&bytes).is_err() {
                    return Err(MediaError::TypeMismatch {
                        declared,
                        sniffed: "binary data, not UTF-8 text".to_owned(),
                    });
                }
                declared
            }
            (None, Some(declared)) => {
                return Err(MediaError::TypeMismatch {
                    declared,
                    sniffed: "of no known type".to_owned(),
                });
            }
            (None, None) => return Err(MediaError::UnsupportedType("unknown".to_owned())),
        };
        let kind = MediaKind::of_mime(&mime_type).ok_or_else(|| MediaError::UnsupportedType(mime_type.clone()))?;
        Ok(Self {
            kind,
            size: bytes.len() as u64,
            mime_type,
            source: MediaSource::Inline { data: bytes.into() },
            name,
            detail: None,
        })
    }

    /// [`from_bytes`](Self::from_bytes) of a file called `name`: its
    /// extension declares the type ([`mime_of_name`]), which the bytes must
    /// have (a file of no known extension is sniffed).
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes).
    pub fn from_named_bytes(bytes: Vec<u8>, name: Option<String>) -> Result<Self, MediaError> {
        let declared = name.as_deref().and_then(mime_of_name);
        Self::from_bytes(bytes, declared, name)
    }

    /// An attachment at `url`, of `mime_type`, which the provider fetches.
    ///
    /// # Errors
    ///
    /// [`MediaError::UnsupportedType`] when `mime_type` is not an image, a
    /// document or audio.
    pub fn from_url(url: impl Into<String>, mime_type: &str) -> Result<Self, MediaError> {
        let mime_type = normalise_mime(mime_type);
        let kind = MediaKind::of_mime(&mime_type).ok_or_else(|| MediaError::UnsupportedType(mime_type.clone()))?;
        Ok(Self {
            kind,
            mime_type,
            size: 0,
            source: MediaSource::Url { url: url.into() },
            name: None,
            detail: None,
        })
    }

    /// The same attachment, read at `detail` (OpenAI's image resolution).
    pub fn with_detail(mut self, detail: ImageDetail) -> Self {
        self.detail = Some(detail);
        self
    }

    /// Its bytes, when they are inline.
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.source {
            MediaSource::Inline { data } => Some(data),
            _ => None,
        }
    }

    /// Its URL, when it is given by one.
    pub fn url(&self) -> Option<&str> {
        match &self.source {
            MediaSource::Url { url } => Some(url),
            _ => None,
        }
    }

    /// Its bytes as base64 (standard alphabet, padded), when inline.
    pub fn base64(&self) -> Option<String> {
        self.bytes().map(encode_base64)
    }

    /// A `data:` URL of its bytes, when inline.
    pub fn data_url(&self) -> Option<String> {
        self.base64()
            .map(|data| format!("data:{};base64,{data}", self.mime_type))
    }

    /// The part in words, for errors: `an image (image/png)`.
    pub fn describe(&self) -> String {
        let article = if self.kind == MediaKind::Image { "an" } else { "a" };
        let kind = match self.kind {
            MediaKind::Image => "image",
            MediaKind::Document => "document",
            MediaKind::Audio => "audio file",
        };
        let article = if self.kind == MediaKind::Audio { "an" } else { article };
        format!("{article} {kind} ({})", self.mime_type)
    }
}

/// `image/JPG; charset=x` as `image/jpeg`: lowercase, parameters dropped,
/// common aliases mapped to the registered names.
pub fn normalise_mime(mime_type: &str) -> String {
    let bare = mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match bare.as_str() {
        "image/jpg" | "image/pjpeg" => "image/jpeg".to_owned(),
        "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "audio/wav".to_owned(),
        "audio/mp3" | "audio/x-mp3" => "audio/mpeg".to_owned(),
        "audio/x-flac" => "audio/flac".to_owned(),
        "audio/x-m4a" | "audio/mp4a-latm" => "audio/m4a".to_owned(),
        _ => bare,
    }
}

/// The MIME type a file name's (or URL path's) extension declares, for the
/// kinds a model reads: `photo.JPG` is `image/jpeg`; `None` for others.
pub fn mime_of_name(name: &str) -> Option<&'static str> {
    let path = name.split(['?', '#']).next().unwrap_or_default();
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    if extension.contains('/') {
        return None;
    }
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "text" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "m4a" => "audio/m4a",
        "flac" => "audio/flac",
        "ogg" | "oga" => "audio/ogg",
        _ => return None,
    })
}

/// The MIME type the bytes have, by their signature, for the kinds a model
/// reads (and a few it does not, so that they are named when refused); in
/// [`normalise_mime`]'s names. Written here rather than taken from a crate:
/// the dozen signatures Agentry needs are shorter than a dependency.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, signature: &[u8]| bytes.get(offset..offset + signature.len()) == Some(signature);
    let found = if at(0, b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if at(0, &[0xFF, 0xD8, 0xFF]) {
        "image/jpeg"
    } else if at(0, b"GIF87a") || at(0, b"GIF89a") {
        "image/gif"
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        "image/webp"
    } else if at(0, b"RIFF") && at(8, b"WAVE") {
        "audio/wav"
    } else if at(0, b"%PDF-") {
        "application/pdf"
    } else if at(0, b"ID3") || (bytes.len() > 1 && bytes[0] == 0xFF && matches!(bytes[1], 0xFB | 0xF3 | 0xF2)) {
        "audio/mpeg"
    } else if at(0, b"OggS") {
        "audio/ogg"
    } else if at(0, b"fLaC") {
        "audio/flac"
    } else if at(4, b"ftypM4A") {
        "audio/m4a"
    } else if at(4, b"ftyp") {
        "video/mp4"
    } else if at(0, b"PK\x03\x04") {
        "application/zip"
    } else if at(0, b"\x7fELF") || at(0, b"MZ") {
        "application/x-executable"
    } else {
        return None;
    };
    Some(found)
}

/// `bytes` in standard, padded base64.
pub fn encode_base64(bytes: &[u8]) -> String {
    BASE64_STANDARD.encode(bytes)
}

/// Standard base64 (padded or not) as bytes; `None` when it is not base64.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    BASE64_STANDARD
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text.trim_end_matches('=')))
        .ok()
}

fn to_base64<S: Serializer>(data: &Arc<[u8]>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&encode_base64(data))
}

fn from_base64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Arc<[u8]>, D::Error> {
    let text = String::deserialize(deserializer)?;
    decode_base64(&text)
        .map(Into::into)
        .ok_or_else(|| serde::de::Error::custom("the attachment's data is not base64"))
}

#[cfg(test)]
mod tests;
