//! The pure half of the provider: [`ChatRequest`](agent_core::ChatRequest) to
//! a Chat Completions body, a response body to a
//! [`ChatResponse`](agent_core::ChatResponse), and stream chunks to
//! [`StreamEvent`](agent_core::StreamEvent)s. No I/O happens here.
//!
//! The request is serialised from borrowing structs straight into bytes and
//! responses are read into typed structs that borrow from the input where
//! they can, so the per-turn cost stays a handful of allocations.

mod media;
mod request;
mod response;
mod stream;
mod wire;

use agent_core::MediaLimits;
use serde::{Deserialize, Deserializer};

/// One mebibyte.
const MIB: u64 = 1024 * 1024;

/// The largest attachments sent by default, from OpenAI's documentation:
/// 20 MB an image (the images and vision guide, which also caps a request's
/// images at 50 MB together), 32 MB of PDF content a request (the file
/// inputs guide), and, for recordings, 25 MB: Chat Completions documents
/// no limit of its own for `input_audio`, so this is the Audio API's upload
/// limit (the figures read as MiB). Each can be changed in the config
/// table (`max_image_bytes`, ...).
pub const DEFAULT_MEDIA_LIMITS: MediaLimits = MediaLimits {
    max_image_bytes: 20 * MIB,
    max_document_bytes: 32 * MIB,
    max_audio_bytes: 25 * MIB,
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

/// The role the system prompt is sent with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemRole {
    /// `system`: understood by every Chat Completions server.
    #[default]
    System,
    /// `developer`: OpenAI's name for instructions to o-series reasoning models.
    Developer,
}

impl SystemRole {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Developer => "developer",
        }
    }
}

/// The body field that carries [`ChatRequest::max_tokens`](agent_core::ChatRequest::max_tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_completion_tokens`: current OpenAI (required by reasoning models).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens`: the older name, still the one many compatible servers know.
    MaxTokens,
}

/// How [`build_request_body`] shapes the body, beyond what the request says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyOptions {
    /// The model, unless [`ChatRequest::model`](agent_core::ChatRequest::model) overrides it.
    pub model: String,
    /// The role of the system prompt (and of system messages in the history).
    pub system_role: SystemRole,
    /// Which field carries the token limit.
    pub max_tokens_field: MaxTokensField,
    /// Ask for a streamed reply (`stream: true`).
    pub stream: bool,
    /// With `stream`, ask for a final usage chunk (`stream_options.include_usage`).
    pub stream_usage: bool,
    /// Echo assistant reasoning text back as `reasoning_content`.
    pub send_reasoning_content: bool,
    /// The largest attachment of each kind sent; a larger one is refused
    /// before anything is sent.
    pub media_limits: MediaLimits,
    /// The provider named in the refusal of an attachment (`openai`,
    /// `azure.ai.openai`, ...).
    pub provider: String,
}

impl BodyOptions {
    /// Options for `model` with the defaults: `system` role,
    /// `max_completion_tokens`, not streamed, [`DEFAULT_MEDIA_LIMITS`],
    /// refusals naming `openai`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system_role: SystemRole::System,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            stream: false,
            stream_usage: true,
            send_reasoning_content: false,
            media_limits: DEFAULT_MEDIA_LIMITS,
            provider: "openai".to_owned(),
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
