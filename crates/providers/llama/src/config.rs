//! The `[providers.llama]` table.

use std::path::PathBuf;

use agent_core::LlmError;
use serde::Deserialize;

use crate::models::DEFAULT_MODEL;

/// The smallest context a chat with a system prompt and tools fits in.
pub const MIN_CONTEXT_SIZE: u32 = 512;

/// The default [`LlamaConfig::call_threshold`], measured on the demo and
/// eval-local (docs/local-models.md).
pub const DEFAULT_CALL_THRESHOLD: f32 = 0.003;

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
    /// applied lazily once the output opens a call (default on, measured in
    /// docs/local-models.md). A call the request requires (`tool_choice`
    /// `required` or a named tool), or one the odds decide
    /// ([`call_threshold`](Self::call_threshold)), is generated under the
    /// grammar whatever this setting.
    pub grammar: bool,
    /// How likely the model must be to start a tool call, at the first
    /// token of its reply to a user message, for that reply to be made a
    /// call (generated under the tool-call grammar); below it the model
    /// writes freely. Small models copy the shape of earlier answers and
    /// start replies with prose even when their own odds of a call are far
    /// above those of a message that needs none (see docs/local-models.md).
    /// Between 0 and 1; 1 leaves the decision to the model's first token.
    pub call_threshold: f32,
    /// Read the odds of a call (see [`call_threshold`](Self::call_threshold))
    /// on the newest user message alone too, with the system prompt and
    /// the tools but none of the conversation's earlier turns, and take
    /// the call when either clears the threshold (default on). Earlier
    /// turns answered without tools otherwise talk a small model out of
    /// the call a new question needs (docs/local-models.md, "The call
    /// decided per message"). Costs the newest message's tokens once more
    /// per reply to a user message.
    pub newest_message_odds: bool,
    /// Keep the model's state for each prompt on disk, so that the next
    /// process whose prompt starts the same way (the system prompt and
    /// tools, a stored session's history) loads it instead of evaluating
    /// it again (default on).
    pub prompt_cache: bool,
    /// Where the prompt cache lives (default `$AGENTRY_HOME/cache/llama`).
    pub prompt_cache_dir: Option<PathBuf>,
    /// The most the prompt cache may hold, in MiB; the least recently used
    /// entries are removed past it.
    pub prompt_cache_mb: u64,
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
            grammar: true,
            call_threshold: DEFAULT_CALL_THRESHOLD,
            newest_message_odds: true,
            prompt_cache: true,
            prompt_cache_dir: None,
            prompt_cache_mb: 1024,
        }
    }
}

impl LlamaConfig {
    /// Checks the numeric options before anything is loaded: a zero thread
    /// count, context, batch or token limit, or a batch larger than the
    /// context, is an invalid-request error naming the key and its range
    /// (llama.cpp would otherwise abort the process on some of them).
    pub fn validate(&self) -> Result<(), LlmError> {
        let invalid = |key: &str, value: String, rule: &str| {
            Err(LlmError::invalid_request(format!(
                "`{key} = {value}` in [providers.llama] is out of range: {rule}"
            ))
            .with_provider("llama"))
        };
        if self.threads == Some(0) {
            return invalid(
                "threads",
                "0".to_owned(),
                "use at least 1, or leave it out for every core",
            );
        }
        if self.context_size < MIN_CONTEXT_SIZE {
            return invalid(
                "context_size",
                self.context_size.to_string(),
                &format!("use at least {MIN_CONTEXT_SIZE} tokens"),
            );
        }
        if self.batch_size == 0 || self.batch_size > self.context_size {
            return invalid(
                "batch_size",
                self.batch_size.to_string(),
                &format!("use 1 to context_size ({})", self.context_size),
            );
        }
        if self.max_tokens == 0 {
            return invalid("max_tokens", "0".to_owned(), "use at least 1");
        }
        if !(self.call_threshold > 0.0 && self.call_threshold <= 1.0) {
            return invalid(
                "call_threshold",
                self.call_threshold.to_string(),
                "use a probability above 0 and at most 1 (1 leaves the decision to the model)",
            );
        }
        if self.prompt_cache_mb == 0 {
            return invalid(
                "prompt_cache_mb",
                "0".to_owned(),
                "use at least 1, or `prompt_cache = false` to keep no prompt on disk",
            );
        }
        Ok(())
    }

    /// The prompt cache's folder: `prompt_cache_dir`, else
    /// `$AGENTRY_HOME/cache/llama`, else the user's cache directory +
    /// `agentry/cache/llama`.
    pub fn prompt_cache_dir(&self) -> PathBuf {
        self.prompt_cache_dir
            .clone()
            .unwrap_or_else(|| crate::models::agentry_dir("cache").join("llama"))
    }

    /// The thread count to use.
    pub fn threads(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_for(config: &LlamaConfig) -> String {
        config.validate().err().map(|error| error.message).unwrap_or_default()
    }

    #[test]
    fn numeric_options_out_of_range_are_errors_naming_the_key() {
        assert!(LlamaConfig::default().validate().is_ok());
        let cases = [
            (
                LlamaConfig {
                    batch_size: 0,
                    ..LlamaConfig::default()
                },
                "`batch_size = 0`",
            ),
            (
                LlamaConfig {
                    batch_size: 9000,
                    ..LlamaConfig::default()
                },
                "`batch_size = 9000`",
            ),
            (
                LlamaConfig {
                    context_size: 0,
                    ..LlamaConfig::default()
                },
                "`context_size = 0`",
            ),
            (
                LlamaConfig {
                    threads: Some(0),
                    ..LlamaConfig::default()
                },
                "`threads = 0`",
            ),
            (
                LlamaConfig {
                    max_tokens: 0,
                    ..LlamaConfig::default()
                },
                "`max_tokens = 0`",
            ),
            (
                LlamaConfig {
                    call_threshold: 0.0,
                    ..LlamaConfig::default()
                },
                "`call_threshold = 0`",
            ),
            (
                LlamaConfig {
                    call_threshold: 1.5,
                    ..LlamaConfig::default()
                },
                "`call_threshold = 1.5`",
            ),
            (
                LlamaConfig {
                    call_threshold: f32::NAN,
                    ..LlamaConfig::default()
                },
                "`call_threshold = NaN`",
            ),
            (
                LlamaConfig {
                    prompt_cache_mb: 0,
                    ..LlamaConfig::default()
                },
                "`prompt_cache_mb = 0`",
            ),
        ];
        for (config, expected) in cases {
            let message = error_for(&config);
            assert!(
                message.contains(expected) && message.contains("[providers.llama]"),
                "{message}"
            );
        }
    }
}
