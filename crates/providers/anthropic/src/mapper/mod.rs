//! The pure half of the provider: [`ChatRequest`](agent_core::ChatRequest) to
//! a Messages API body, a response body to a
//! [`ChatResponse`](agent_core::ChatResponse), and stream events to
//! [`StreamEvent`](agent_core::StreamEvent)s. No I/O happens here.
//!
//! The request is serialised from borrowing structs straight into bytes;
//! stream events are read into typed structs that borrow from the input.

pub mod media;
mod request;
mod response;
mod stream;
mod turns;
mod wire;

use agent_core::MediaLimits;

/// The trait [`StreamMapper`] is driven through (`push`, `finish`, ...).
pub use agent_http::EventMapper;
pub use media::DEFAULT_MEDIA_LIMITS;
pub use request::{RAW_ARGUMENTS_KEY, build_request_body};
pub use response::parse_response;
pub use stream::StreamMapper;

/// The `max_tokens` sent when a request sets none (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// How [`build_request_body`] shapes the body, beyond what the request says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyOptions {
    /// The model, unless [`ChatRequest::model`](agent_core::ChatRequest::model) overrides it.
    pub model: String,
    /// `max_tokens` when [`ChatRequest::max_tokens`](agent_core::ChatRequest::max_tokens) is unset.
    pub default_max_tokens: u32,
    /// Extended thinking with this token budget (`thinking.budget_tokens`).
    pub thinking_budget: Option<u32>,
    /// Ask for a streamed reply (`stream: true`).
    pub stream: bool,
    /// The largest attachment of each kind sent; a larger one is refused
    /// before sending ([`MediaError::TooLarge`](agent_core::MediaError::TooLarge)).
    pub media_limits: MediaLimits,
}

impl BodyOptions {
    /// Options for `model`: `max_tokens` 4096 by default, no extended
    /// thinking, not streamed, Anthropic's documented media limits
    /// ([`DEFAULT_MEDIA_LIMITS`]).
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            default_max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            stream: false,
            media_limits: DEFAULT_MEDIA_LIMITS,
        }
    }

    /// The same options with extended thinking on, `budget_tokens` of them.
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
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
