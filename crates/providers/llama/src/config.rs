//! The `[providers.llama]` table.

use std::path::PathBuf;

use serde::Deserialize;

use crate::models::DEFAULT_MODEL;

/// How to find, load and run the local model.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlamaConfig {
    /// A model Agentry can fetch by name (default `qwen2.5-coder-0.5b`).
    pub model: String,
    /// Any GGUF file; overrides `model`.
    pub model_path: Option<PathBuf>,
    /// Where fetched models are stored (default `$AGENTRY_HOME/models`).
    pub models_dir: Option<PathBuf>,
    /// CPU threads (default: every available core).
    pub threads: Option<usize>,
    /// Context size in tokens.
    pub context_size: u32,
    /// Tokens evaluated per batch while reading the prompt.
    pub batch_size: u32,
    /// Seed for sampling at temperature above 0.
    pub seed: u32,
    /// Tokens generated per request unless the request says otherwise.
    pub max_tokens: u32,
    /// Constrain tool calls with a grammar built from the tools' schemas,
    /// applied lazily from the first `<tool_call>` tag. (A call the request
    /// requires, `tool_choice` `required` or a named tool, is always
    /// generated under the grammar.)
    pub grammar: bool,
}

impl Default for LlamaConfig {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.to_owned(),
            model_path: None,
            models_dir: None,
            threads: None,
            context_size: 8192,
            batch_size: 512,
            seed: 42,
            max_tokens: 1024,
            grammar: false,
        }
    }
}

impl LlamaConfig {
    /// The thread count to use.
    pub fn threads(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
    }
}
