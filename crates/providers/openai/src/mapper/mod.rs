//! The pure half of the provider: [`ChatRequest`](agent_core::ChatRequest) to
//! a Chat Completions body, a response body to a
//! [`ChatResponse`](agent_core::ChatResponse), and stream chunks to
//! [`StreamEvent`](agent_core::StreamEvent)s. No I/O happens here.
//!
//! The request is serialised from borrowing structs straight into bytes and
//! responses are read into typed structs that borrow from the input where
//! they can, so the per-turn cost stays a handful of allocations.

mod request;
mod response;
mod stream;
mod wire;

use serde::Deserialize;

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
}

impl BodyOptions {
    /// Options for `model` with the defaults: `system` role,
    /// `max_completion_tokens`, not streamed.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system_role: SystemRole::System,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            stream: false,
            stream_usage: true,
            send_reasoning_content: false,
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
