//! [`ProviderConfig`]: the provider an agent talks to, chosen by
//! configuration.

use std::sync::Arc;

use agent_core::{LlmClient, LlmError};
use serde::Deserialize;

/// A provider and its options, so that switching providers is a change of
/// configuration, not of code. Deserialise it from any serde format: the
/// `provider` key names one of the providers this build has (a cargo
/// feature each), the other keys are that provider's own table, as in
/// `[providers.NAME]` of `agentry.toml` (`variant = "azure-openai"` or
/// `"openai-compatible"` selects the other OpenAI-family services).
///
/// ```
/// # #[cfg(feature = "openai")] {
/// use agentry::ProviderConfig;
///
/// let config: ProviderConfig = serde_json::from_value(serde_json::json!({
///     "provider": "openai",
///     "model": "gpt-4o-mini",
///     "base_url": "http://localhost:8080/v1",
///     "api_key": "sk-example",
/// }))?;
/// assert_eq!(config.name(), "openai");
/// let client = config.client()?; // an Arc<dyn LlmClient> for Agent::builder
/// assert_eq!(client.model(), "gpt-4o-mini");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// One value per program, read once: boxing the variants would only make
// matching on them clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "provider")]
#[non_exhaustive]
pub enum ProviderConfig {
    /// OpenAI, Azure OpenAI or an OpenAI-compatible server.
    #[cfg(feature = "openai")]
    #[serde(rename = "openai")]
    OpenAi(agent_provider_openai::OpenAiConfig),
    /// Anthropic's Messages API.
    #[cfg(feature = "anthropic")]
    #[serde(rename = "anthropic")]
    Anthropic(agent_provider_anthropic::AnthropicConfig),
    /// Google's Gemini API.
    #[cfg(feature = "gemini")]
    #[serde(rename = "gemini")]
    Gemini(agent_provider_gemini::GeminiConfig),
    /// An Ollama server.
    #[cfg(feature = "ollama")]
    #[serde(rename = "ollama")]
    Ollama(agent_provider_ollama::OllamaConfig),
    /// A GGUF model run in-process.
    #[cfg(feature = "llama")]
    #[serde(rename = "llama")]
    Llama(agent_provider_llama::LlamaConfig),
}

impl ProviderConfig {
    /// The provider's name, as the `provider` key spells it.
    pub fn name(&self) -> &'static str {
        match self {
            #[cfg(feature = "openai")]
            Self::OpenAi(_) => "openai",
            #[cfg(feature = "anthropic")]
            Self::Anthropic(_) => "anthropic",
            #[cfg(feature = "gemini")]
            Self::Gemini(_) => "gemini",
            #[cfg(feature = "ollama")]
            Self::Ollama(_) => "ollama",
            #[cfg(feature = "llama")]
            Self::Llama(_) => "llama",
        }
    }

    /// The names the `provider` key accepts in this build.
    pub fn available() -> &'static [&'static str] {
        &[
            #[cfg(feature = "openai")]
            "openai",
            #[cfg(feature = "anthropic")]
            "anthropic",
            #[cfg(feature = "gemini")]
            "gemini",
            #[cfg(feature = "ollama")]
            "ollama",
            #[cfg(feature = "llama")]
            "llama",
        ]
    }

    /// A client of the configured provider. Nothing is sent yet; a missing
    /// API key is reported when the client is made or at the first request,
    /// as the provider does. For `llama` this loads the model, which blocks
    /// for about a second (call it from `tokio::task::spawn_blocking` in
    /// async code) and fails with what to run when the model is not fetched.
    pub fn client(&self) -> Result<Arc<dyn LlmClient>, LlmError> {
        Ok(match self {
            #[cfg(feature = "openai")]
            Self::OpenAi(config) => Arc::new(agent_provider_openai::OpenAiClient::new(config.clone())?),
            #[cfg(feature = "anthropic")]
            Self::Anthropic(config) => Arc::new(agent_provider_anthropic::AnthropicClient::new(config.clone())?),
            #[cfg(feature = "gemini")]
            Self::Gemini(config) => Arc::new(agent_provider_gemini::GeminiClient::new(config.clone())?),
            #[cfg(feature = "ollama")]
            Self::Ollama(config) => Arc::new(agent_provider_ollama::OllamaClient::new(config.clone())?),
            #[cfg(feature = "llama")]
            Self::Llama(config) => Arc::new(agent_provider_llama::LlamaClient::load(config.clone())?),
        })
    }
}
