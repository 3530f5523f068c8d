//! What a program built on Agentry needs, in one import:
//! `use agentry::prelude::*;`.
//!
//! Besides the agent, tool and message types, it brings `schemars` into
//! scope, so `#[derive(JsonSchema)]` works with no `schemars` dependency of
//! your own, and `StreamExt`, for `stream.next().await` over an agent's
//! events. The clients and configurations of the enabled providers are here
//! too.

pub use crate::schemars::{self, JsonSchema};
pub use agent_core::{
    AgentEvent, AgentRunResult, LlmClient, LlmError, Message, RunEnd, ToolContext, ToolError, ToolOutput, ToolProvider,
};
pub use agent_runner::{Agent, AgentBuilder, AgentConfig, BuildError, RunError};
pub use agent_tools::{Json, NoArgs, Tool, ToolSet, TypedTool};
pub use futures::StreamExt;
pub use serde::{self, Deserialize, Serialize};

#[cfg(feature = "anthropic")]
pub use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
#[cfg(feature = "gemini")]
pub use agent_provider_gemini::{GeminiClient, GeminiConfig};
#[cfg(feature = "llama")]
pub use agent_provider_llama::{LlamaClient, LlamaConfig};
#[cfg(feature = "ollama")]
pub use agent_provider_ollama::{OllamaClient, OllamaConfig};
#[cfg(feature = "openai")]
pub use agent_provider_openai::{OpenAiClient, OpenAiConfig};

pub use crate::{ProviderConfig, ProviderKind};
