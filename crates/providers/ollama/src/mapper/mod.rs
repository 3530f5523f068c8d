//! The pure half of the provider: [`ChatRequest`](agent_core::ChatRequest)
//! to an `/api/chat` body, a response body to a
//! [`ChatResponse`](agent_core::ChatResponse), and NDJSON stream lines to
//! [`StreamEvent`](agent_core::StreamEvent)s. No I/O happens here.

mod media;
mod request;
mod response;
mod stream;
mod wire;

use std::collections::BTreeMap;

use agent_core::MediaLimits;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One mebibyte.
const MIB: u64 = 1024 * 1024;

/// The largest attachments sent by default. Ollama documents no limit of
/// its own (an image is decoded and resized by the model's projector, a
/// text file becomes prompt text), so these are Agentry's choice: 20 MB an
/// image (OpenAI's documented per-image limit, far more than a local
/// vision model reads), 20 MB a text file (beyond any local context
/// window already) and, for recordings, which Ollama refuses anyway,
/// 20 MB (MiB, all three). Each can be changed in the config table
/// (`max_image_bytes`, ...).
pub const DEFAULT_MEDIA_LIMITS: MediaLimits = MediaLimits {
    max_image_bytes: 20 * MIB,
    max_document_bytes: 20 * MIB,
    max_audio_bytes: 20 * MIB,
};

/// The media limit keys of a config table (`max_image_bytes`, ...), each
/// defaulting to [`DEFAULT_MEDIA_LIMITS`].
pub(crate) fn deserialize_media_limits<'de, D: Deserializer<'de>>(deserializer: D) -> Result<MediaLimits, D::Error> {
    #[derive(Deserialize)]
    struct Keys {
        #[serde(rename = "max_image_bytes")]
        image: Option<u64>,
        #[serde(rename = "max_document_bytes")]
        document: Option<u64>,
        #[serde(rename = "max_audio_bytes")]
        audio: Option<u64>,
    }
    let keys = Keys::deserialize(deserializer)?;
    Ok(MediaLimits {
        max_image_bytes: keys.image.unwrap_or(DEFAULT_MEDIA_LIMITS.max_image_bytes),
        max_document_bytes: keys.document.unwrap_or(DEFAULT_MEDIA_LIMITS.max_document_bytes),
        max_audio_bytes: keys.audio.unwrap_or(DEFAULT_MEDIA_LIMITS.max_audio_bytes),
    })
}

/// The trait [`StreamMapper`] is driven through (`push`, `finish`, ...).
pub use agent_http::EventMapper;
pub use request::build_request_body;
pub use response::parse_response;
pub use stream::StreamMapper;

/// How long Ollama keeps the model loaded after a request (`keep_alive`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KeepAlive {
    /// Seconds (`0` unloads at once, a negative number keeps it loaded).
    Seconds(i64),
    /// A duration such as `"5m"` or `"1h"`.
    Duration(String),
}

/// Whether (and how hard) a thinking model thinks (`think`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Think {
    /// On or off.
    Enabled(bool),
    /// A level: `"low"`, `"medium"`, `"high"` or `"max"`, for models that have levels.
    Level(String),
}

/// How [`build_request_body`] shapes the body, beyond what the request says.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyOptions {
    /// The model, unless [`ChatRequest::model`](agent_core::ChatRequest::model) overrides it.
    pub model: String,
    /// Ask for a streamed (NDJSON) reply. Always sent, since Ollama streams by default.
    pub stream: bool,
    /// `options.num_ctx`: the context window Ollama allocates.
    pub num_ctx: Option<u32>,
    /// `keep_alive`.
    pub keep_alive: Option<KeepAlive>,
    /// `think`.
    pub think: Option<Think>,
    /// Further `options` entries; the request's own values win over these.
    pub extra_options: BTreeMap<String, Value>,
    /// The largest attachment of each kind sent; a larger one is refused
    /// before anything is sent.
    pub media_limits: MediaLimits,
}

impl BodyOptions {
    /// Options for `model`: not streamed, [`DEFAULT_MEDIA_LIMITS`], nothing else set.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            stream: false,
            num_ctx: None,
            keep_alive: None,
            think: None,
            extra_options: BTreeMap::new(),
            media_limits: DEFAULT_MEDIA_LIMITS,
        }
    }

    /// The same options for a streamed request.
    pub fn streaming(mut self) -> Self {
        self.stream = true;
        self
    }
}

/// The former name of [`BodyOptions`].
#[deprecated(
    since = "0.2.0",
    note = "renamed `BodyOptions`: the runner's and every provider's options shared the name `RequestOptions`"
)]
pub type RequestOptions = BodyOptions;
