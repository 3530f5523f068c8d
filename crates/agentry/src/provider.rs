//! The provider factory: [`ProviderKind`] names every provider Agentry
//! knows, [`ProviderConfig`] is one of them configured from its table, and
//! [`ProviderConfig::client_with_env`] makes its client.
//!
//! This file is the one place a provider is added (see the crate
//! documentation, "Adding a provider").

use std::fmt;
use std::sync::Arc;

use agent_core::{LlmClient, LlmError};
use serde::{Deserialize, Deserializer};

use crate::error::{NotCompiled, TableError};

/// Every provider Agentry knows, whether this build has it or not (a cargo
/// feature each), so that naming one of another build says which feature
/// to build with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderKind {
    /// In-process llama.cpp with a local GGUF model.
    Llama,
    /// OpenAI's Chat Completions API.
    OpenAi,
    /// Azure OpenAI.
    AzureOpenAi,
    /// Any OpenAI-compatible server (vLLM, llama.cpp server, LM Studio, ...).
    OpenAiCompatible,
    /// Anthropic's Messages API.
    Anthropic,
    /// Google's Gemini API.
    Gemini,
    /// An Ollama server.
    Ollama,
}

/// What Agentry knows of a provider besides its crate.
struct Spec {
    name: &'static str,
    feature: &'static str,
    compiled: bool,
    key_variable: Option<&'static str>,
    key_hosts: &'static [&'static str],
    in_process: bool,
}

/// The row of a provider reached over the network.
const fn remote(
    name: &'static str,
    feature: &'static str,
    compiled: bool,
    key_variable: Option<&'static str>,
    key_hosts: &'static [&'static str],
) -> Spec {
    Spec {
        name,
        feature,
        compiled,
        key_variable,
        key_hosts,
        in_process: false,
    }
}

impl ProviderKind {
    /// All providers, in the order they are listed to users.
    pub const ALL: [ProviderKind; 7] = [
        Self::Llama,
        Self::OpenAi,
        Self::AzureOpenAi,
        Self::OpenAiCompatible,
        Self::Anthropic,
        Self::Gemini,
        Self::Ollama,
    ];

    /// The one row per provider: its name, feature, key and hosts.
    const fn spec(self) -> Spec {
        const OPENAI: &str = "openai";
        match self {
            Self::Llama => Spec {
                name: "llama",
                feature: "llama",
                compiled: cfg!(feature = "llama"),
                key_variable: None,
                key_hosts: &[],
                in_process: true,
            },
            Self::OpenAi => remote(
                "openai",
                OPENAI,
                cfg!(feature = "openai"),
                Some("OPENAI_API_KEY"),
                &["api.openai.com"],
            ),
            Self::AzureOpenAi => remote(
                "azure-openai",
                OPENAI,
                cfg!(feature = "openai"),
                Some("AZURE_OPENAI_API_KEY"),
                &[".openai.azure.com", ".cognitiveservices.azure.com"],
            ),
            Self::OpenAiCompatible => remote("openai-compatible", OPENAI, cfg!(feature = "openai"), None, &[]),
            Self::Anthropic => remote(
                "anthropic",
                "anthropic",
                cfg!(feature = "anthropic"),
                Some("ANTHROPIC_API_KEY"),
                &["api.anthropic.com"],
            ),
            Self::Gemini => remote(
                "gemini",
                "gemini",
                cfg!(feature = "gemini"),
                Some("GEMINI_API_KEY"),
                &["generativelanguage.googleapis.com"],
            ),
            Self::Ollama => remote(
                "ollama",
                "ollama",
                cfg!(feature = "ollama"),
                None,
                &["localhost", "127.0.0.1", "::1"],
            ),
        }
    }

    /// The name in configuration (`agent.provider`, `[providers.NAME]`).
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// The provider called `name` (case-insensitive, surrounding blanks ignored).
    pub fn parse(name: &str) -> Option<Self> {
        let name = name.trim();
        Self::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(name))
    }

    /// Every name, comma-separated.
    pub fn all_names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// The cargo feature that brings the provider in.
    pub const fn feature(self) -> &'static str {
        self.spec().feature
    }

    /// Whether this build has the provider.
    pub const fn is_compiled(self) -> bool {
        self.spec().compiled
    }

    /// The environment variable the API key is read from by default.
    pub const fn key_variable(self) -> Option<&'static str> {
        self.spec().key_variable
    }

    /// The hosts (or, starting with `.`, host suffixes) the provider's key
    /// is meant for; empty where any host is expected.
    pub const fn key_hosts(self) -> &'static [&'static str] {
        self.spec().key_hosts
    }

    /// Whether the model runs in this process, where a streamed reply costs
    /// no more than a whole one and reports the model's progress.
    pub const fn runs_in_process(self) -> bool {
        self.spec().in_process
    }

    /// The providers of this build, comma-separated (`(none)` without any).
    pub fn compiled_names() -> String {
        let names: Vec<&str> = Self::ALL
            .into_iter()
            .filter(|kind| kind.is_compiled())
            .map(Self::name)
            .collect();
        if names.is_empty() {
            "(none)".to_owned()
        } else {
            names.join(", ")
        }
    }

    /// Why the provider cannot be used by this build: its feature is off.
    pub fn not_compiled(self) -> NotCompiled {
        NotCompiled {
            what: format!("the provider `{}`", self.name()),
            feature: self.feature(),
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A provider and its options, so that switching providers is a change of
/// configuration, not of code. Deserialise it from any serde format: the
/// `provider` key names one of the providers this build has (a cargo
/// feature each), the other keys are that provider's own table, as in
/// `[providers.NAME]` of `agentry.toml` (`variant = "azure-openai"` or
/// `"openai-compatible"` selects the other OpenAI-family services). Or read
/// it from a table named by a [`ProviderKind`] with
/// [`from_table`](Self::from_table).
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
    /// The configuration of `kind` from its table (`[providers.NAME]` of
    /// `agentry.toml`, in any serde format). Every option is a key of the
    /// table, `model` and `base_url` too: an application that takes them
    /// from elsewhere (a `--model` flag) puts them in the table first. With
    /// a deserializer that tracks paths (figment's, `serde_path_to_error`),
    /// an error names the key at fault.
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use agentry::{ProviderConfig, ProviderKind};
    ///
    /// let table = serde_json::json!({"model": "my-model", "base_url": "http://localhost:8000/v1"});
    /// let config = ProviderConfig::from_table(ProviderKind::OpenAiCompatible, table)?;
    /// assert_eq!(config.kind(), ProviderKind::OpenAiCompatible);
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_table<'de, D: Deserializer<'de>>(kind: ProviderKind, table: D) -> Result<Self, TableError<D::Error>> {
        match kind {
            #[cfg(feature = "openai")]
            ProviderKind::OpenAi | ProviderKind::AzureOpenAi | ProviderKind::OpenAiCompatible => {
                use agent_provider_openai::Variant;
                let mut config =
                    agent_provider_openai::OpenAiConfig::deserialize(table).map_err(TableError::Invalid)?;
                config.variant = match kind {
                    ProviderKind::AzureOpenAi => Variant::Azure,
                    ProviderKind::OpenAiCompatible => Variant::Compatible,
                    _ => Variant::OpenAi,
                };
                Ok(Self::OpenAi(config))
            }
            #[cfg(feature = "anthropic")]
            ProviderKind::Anthropic => Deserialize::deserialize(table)
                .map(Self::Anthropic)
                .map_err(TableError::Invalid),
            #[cfg(feature = "gemini")]
            ProviderKind::Gemini => Deserialize::deserialize(table)
                .map(Self::Gemini)
                .map_err(TableError::Invalid),
            #[cfg(feature = "ollama")]
            ProviderKind::Ollama => Deserialize::deserialize(table)
                .map(Self::Ollama)
                .map_err(TableError::Invalid),
            #[cfg(feature = "llama")]
            ProviderKind::Llama => Deserialize::deserialize(table)
                .map(Self::Llama)
                .map_err(TableError::Invalid),
            #[allow(unreachable_patterns)]
            other => {
                drop(table);
                Err(TableError::NotCompiled(other.not_compiled()))
            }
        }
    }

    /// The provider, as configured (an OpenAI configuration's variant says
    /// which of the OpenAI family it is).
    pub fn kind(&self) -> ProviderKind {
        match *self {
            #[cfg(feature = "openai")]
            Self::OpenAi(ref config) => match config.variant {
                agent_provider_openai::Variant::OpenAi => ProviderKind::OpenAi,
                agent_provider_openai::Variant::Azure => ProviderKind::AzureOpenAi,
                agent_provider_openai::Variant::Compatible => ProviderKind::OpenAiCompatible,
            },
            #[cfg(feature = "anthropic")]
            Self::Anthropic(_) => ProviderKind::Anthropic,
            #[cfg(feature = "gemini")]
            Self::Gemini(_) => ProviderKind::Gemini,
            #[cfg(feature = "ollama")]
            Self::Ollama(_) => ProviderKind::Ollama,
            #[cfg(feature = "llama")]
            Self::Llama(_) => ProviderKind::Llama,
        }
    }

    /// The provider's name, as the `provider` key spells it (`openai` for
    /// the whole OpenAI family; [`kind`](Self::kind) tells them apart).
    pub fn name(&self) -> &'static str {
        match *self {
            #[cfg(feature = "openai")]
            Self::OpenAi(_) => "openai",
            #[allow(unreachable_patterns)]
            _ => self.kind().name(),
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

    /// A client of the configured provider, its API key looked up in the
    /// process environment. Nothing is sent yet; a missing API key is
    /// reported when the client is made or at the first request, as the
    /// provider does. For `llama` this loads the model, which blocks for
    /// about a second (call it from `tokio::task::spawn_blocking` in async
    /// code) and fails with what to run when the model is not fetched.
    pub fn client(&self) -> Result<Arc<dyn LlmClient>, LlmError> {
        self.client_with_env(|name| std::env::var(name).ok())
    }

    /// [`client`](Self::client), with environment variables (the API key's)
    /// looked up by `env` instead of in the process environment.
    pub fn client_with_env(&self, env: impl Fn(&str) -> Option<String>) -> Result<Arc<dyn LlmClient>, LlmError> {
        let _ = &env;
        match *self {
            #[cfg(feature = "openai")]
            Self::OpenAi(ref config) => Ok(Arc::new(agent_provider_openai::OpenAiClient::with_env(
                config.clone(),
                env,
            )?)),
            #[cfg(feature = "anthropic")]
            Self::Anthropic(ref config) => Ok(Arc::new(agent_provider_anthropic::AnthropicClient::with_env(
                config.clone(),
                env,
            )?)),
            #[cfg(feature = "gemini")]
            Self::Gemini(ref config) => Ok(Arc::new(agent_provider_gemini::GeminiClient::with_env(
                config.clone(),
                env,
            )?)),
            #[cfg(feature = "ollama")]
            Self::Ollama(ref config) => Ok(Arc::new(agent_provider_ollama::OllamaClient::with_env(
                config.clone(),
                env,
            )?)),
            #[cfg(feature = "llama")]
            Self::Llama(ref config) => Ok(Arc::new(agent_provider_llama::LlamaClient::load(config.clone())?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_build_knows_its_providers() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.name()), Some(kind));
            assert!(!kind.feature().is_empty());
        }
        assert_eq!(ProviderKind::parse(" OpenAI "), Some(ProviderKind::OpenAi));
        assert_eq!(ProviderKind::parse("openia"), None);
        assert_eq!(ProviderKind::OpenAi.key_variable(), Some("OPENAI_API_KEY"));
        assert_eq!(ProviderKind::Anthropic.key_variable(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(ProviderKind::Llama.is_compiled(), cfg!(feature = "llama"));
        assert_eq!(ProviderKind::AzureOpenAi.is_compiled(), cfg!(feature = "openai"));
        assert_eq!(ProviderKind::Gemini.is_compiled(), cfg!(feature = "gemini"));
        assert!(ProviderKind::Llama.runs_in_process() && !ProviderKind::Ollama.runs_in_process());
    }

    #[test]
    fn a_provider_of_another_build_names_its_feature() {
        let table = serde_json::json!({});
        for kind in ProviderKind::ALL {
            match ProviderConfig::from_table(kind, &table) {
                Err(TableError::NotCompiled(error)) => {
                    assert!(!kind.is_compiled());
                    assert_eq!(error.feature, kind.feature());
                    assert!(error.to_string().contains(&format!("`{}`", kind.feature())), "{error}");
                }
                // The llama provider is configured without loading anything.
                Ok(config) => assert_eq!(config.kind(), kind),
                Err(TableError::Invalid(error)) => panic!("{kind}: {error}"),
            }
        }
    }

    #[cfg(feature = "openai")]
    #[test]
    fn model_and_base_url_are_keys_of_the_table() {
        let table = serde_json::json!({"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk"});
        let config = ProviderConfig::from_table(ProviderKind::AzureOpenAi, &table).unwrap_or_else(|e| panic!("{e}"));
        #[allow(irrefutable_let_patterns, reason = "OpenAI may be the only provider of the build")]
        let ProviderConfig::OpenAi(openai) = &config else {
            panic!("not openai")
        };
        assert_eq!(
            (openai.model.as_str(), openai.base_url.as_deref()),
            ("m", Some("http://127.0.0.1:9/v1"))
        );
        assert_eq!(config.kind(), ProviderKind::AzureOpenAi);
        let client = config.client_with_env(|_| None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(client.model(), "m");
        let misspelt = serde_json::json!({"modle": "m"});
        assert!(matches!(
            ProviderConfig::from_table(ProviderKind::OpenAi, &misspelt),
            Err(TableError::Invalid(_))
        ));
    }
}
