//! The pure half of the provider: [`ChatRequest`](agent_core::ChatRequest)
//! to a `generateContent` body, a response body to a
//! [`ChatResponse`](agent_core::ChatResponse), stream chunks to
//! [`StreamEvent`](agent_core::StreamEvent)s, and JSON Schema to Gemini's
//! schema subset. No I/O happens here.

pub mod media;
mod request;
mod response;
pub mod schema;
mod stream;
mod wire;

use agent_core::{LlmError, MediaLimits};

/// The trait [`StreamMapper`] is driven through (`push`, `finish`, ...).
pub use agent_http::EventMapper;
pub use media::DEFAULT_MEDIA_LIMITS;
pub use request::{
    MID_CONVERSATION_SYSTEM_MARKER, PLACEHOLDER_THOUGHT_SIGNATURE, build_request_body, build_request_json,
};
pub use response::parse_response;
pub use stream::StreamMapper;
pub use wire::SYNTHETIC_ID_PREFIX;

/// How [`build_request_body`] shapes the body, beyond what the request says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyOptions {
    /// The model, unless [`ChatRequest::model`](agent_core::ChatRequest::model) overrides it
    /// (Gemini takes it in the URL, see [`endpoint_path`]).
    pub model: String,
    /// `generationConfig.thinkingConfig.thinkingBudget`: thinking tokens
    /// (0 turns thinking off on models that allow it, -1 lets the model decide).
    pub thinking_budget: Option<i32>,
    /// `generationConfig.thinkingConfig.thinkingLevel` (Gemini 3: `low`, `high`).
    pub thinking_level: Option<String>,
    /// `generationConfig.thinkingConfig.includeThoughts`: return thought
    /// summaries (they become reasoning blocks, never visible text).
    pub include_thoughts: Option<bool>,
    /// The largest attachment of each kind sent; a larger one is refused
    /// before sending ([`MediaError::TooLarge`](agent_core::MediaError::TooLarge)).
    pub media_limits: MediaLimits,
}

impl Default for BodyOptions {
    /// No model, no thinking settings, Gemini's documented media limits.
    fn default() -> Self {
        Self {
            model: String::new(),
            thinking_budget: None,
            thinking_level: None,
            include_thoughts: None,
            media_limits: DEFAULT_MEDIA_LIMITS,
        }
    }
}

impl BodyOptions {
    /// Options for `model` with no thinking settings and Gemini's
    /// documented media limits ([`DEFAULT_MEDIA_LIMITS`]).
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }
}

/// The path after the base URL: `/{api_version}/models/{model}:generateContent`,
/// or `:streamGenerateContent?alt=sse` when `stream` is set. A `models/`
/// prefix on the model name is accepted (Google's SDKs print names that way).
///
/// ```
/// use agent_provider_gemini::mapper::endpoint_path;
///
/// assert_eq!(
///     endpoint_path("v1beta", "gemini-2.5-flash", true).unwrap(),
///     "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
/// );
/// assert!(endpoint_path("v1beta", "../secret", false).is_err());
/// ```
pub fn endpoint_path(api_version: &str, model: &str, stream: bool) -> Result<String, LlmError> {
    let model = model.trim();
    let model = model.strip_prefix("models/").unwrap_or(model);
    if model.is_empty() || !model.chars().all(is_path_safe) || model.starts_with('.') {
        return Err(LlmError::invalid_request(format!(
            "Gemini model name {model:?} must be non-empty and use only letters, digits, '-', '_' and '.' \
             (e.g. \"gemini-2.5-flash\")"
        )));
    }
    let version = api_version.trim().trim_matches('/');
    if version.is_empty() || !version.chars().all(is_path_safe) {
        return Err(LlmError::invalid_request(format!(
            "Gemini api_version {api_version:?} must look like \"v1beta\" or \"v1\""
        )));
    }
    let method = if stream {
        "streamGenerateContent?alt=sse"
    } else {
        "generateContent"
    };
    Ok(format!("/{version}/models/{model}:{method}"))
}

fn is_path_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// The former name of [`BodyOptions`].
#[deprecated(
    since = "0.2.0",
    note = "renamed `BodyOptions`: the runner's and every provider's options shared the name `RequestOptions`"
)]
pub type RequestOptions = BodyOptions;
