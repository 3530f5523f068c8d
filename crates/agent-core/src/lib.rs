//! # agent-core
//!
//! The ports of Agentry: plain data types for conversations, requests and
//! replies, the [`LlmClient`] trait every provider implements, the tool traits
//! ([`ToolProvider`], [`ToolRegistry`]), run events and records, the
//! [`ModelCatalog`] that prices [`Usage`], and the [`ConversationStore`] port
//! (implemented by `agent-store`'s `InMemoryStore`, `agent-store-sqlite` and
//! `agent-store-postgres`). Data and contracts only: no I/O and no
//! algorithms (those live in the crates that use them).
//!
//! ```
//! use agent_core::{ChatRequest, Message, ModelCatalog, ModelInfo, Pricing, Usage};
//!
//! let request = ChatRequest::new(vec![Message::user("What is 2 + 2?")])
//!     .with_system("You are terse.");
//! assert_eq!(request.messages.len(), 1);
//!
//! let mut catalog = ModelCatalog::new();
//! catalog.insert("gpt-4o-mini", ModelInfo {
//!     provider: "openai".into(),
//!     context_window: Some(128_000),
//!     pricing: Pricing { input_per_million: 0.15, output_per_million: 0.6, ..Pricing::default() },
//!     inputs: None,
//! });
//! let cost = catalog.cost("gpt-4o-mini-2024-07-18", &Usage::new(1_000_000, 0));
//! assert_eq!(cost, Some(0.15));
//! ```

mod answered;
mod approval;
mod catalog;
mod client;
mod delegated;
mod error;
mod event;
mod grounding;
mod guardrail;
mod media;
mod message;
mod request;
mod route;
mod run;
mod store;
mod stream;
mod tool;
mod usage;

pub use answered::AnsweredCalls;
pub use approval::{ApprovalDecision, ToolApprover};
pub use catalog::{ModelCatalog, ModelInfo, Pricing};
pub use client::{Capabilities, EventStream, IntoLlmClient, LlmClient};
pub use delegated::{DelegatedUsage, UsageSink};
pub use error::{LlmError, LlmErrorKind};
pub use event::AgentEvent;
pub use grounding::{GroundingAction, GroundingFault, GroundingRecord};
pub use guardrail::{GuardrailStage, GuardrailTrip};
pub use media::{
    Attachment, ImageDetail, MediaError, MediaKind, MediaLimits, MediaSource, decode_base64, encode_base64,
    mime_of_name, normalise_mime, sniff, unsupported_attachment,
};
pub use message::{AssistantMessage, Message, ReasoningBlock, Role, ToolCall, ToolResult};
pub use request::{ChatRequest, ChatResponse, ResponseFormat, StopReason, ToolChoice};
pub use route::{ProviderAttempt, Route};
pub use run::{
    AgentRunResult, CallPurpose, CompactionRecord, CompactionTrigger, ModelCallRecord, RunEnd, ToolCallRecord,
};
/// The former name of [`RunEnd`] (too close to the model's
/// [`StopReason`]).
#[deprecated(
    since = "0.2.0",
    note = "renamed `RunEnd`: `StopCause` was too close to the model's `StopReason`"
)]
pub type StopCause = RunEnd;
pub use store::{
    Conversation, ConversationMeta, ConversationStore, LOST_RESULT, MAX_CONVERSATION_NAME_LEN, StoreError, TurnMeta,
    validate_conversation_name,
};
pub use stream::{ModelProgress, StreamAccumulator, StreamEvent, response_to_events};
pub use tool::{
    CachePolicy, RegistryError, ToolContext, ToolDefinition, ToolError, ToolExecution, ToolOutput, ToolProvider,
    ToolRegistry,
};
pub use usage::Usage;

/// Re-exported so implementors need not depend on tokio-util themselves.
pub use tokio_util::sync::CancellationToken;
