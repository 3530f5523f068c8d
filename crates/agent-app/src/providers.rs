//! Provider selection: one factory from [`Settings`] to `Arc<dyn LlmClient>`.
//!
//! Each provider crate sits behind a cargo feature of this crate (`llama`,
//! `openai`, `anthropic`, `gemini`, `ollama`), so a build carries only the
//! providers it needs. Adding a provider is one [`ProviderKind`] variant,
//! one feature in `Cargo.toml` and one match arm in [`build_client`].

use std::sync::Arc;

use agent_core::{LlmClient, LlmError, LlmErrorKind};

use crate::config::Settings;
use crate::env::Env;
use crate::error::{AppError, ConfigError};

/// Every provider Agentry knows, compiled into this build or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// In-process llama.cpp with a local GGUF model (the offline default).
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
    /// A local Ollama server.
    Ollama,
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

    /// The name used in configuration (`agent.provider`, `[providers.NAME]`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::OpenAi => "openai",
            Self::AzureOpenAi => "azure-openai",
            Self::OpenAiCompatible => "openai-compatible",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Ollama => "ollama",
        }
    }

    /// The provider called `name` (case-insensitive).
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

    /// The cargo feature of agent-app that brings the provider in.
    pub fn feature(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::OpenAi | Self::AzureOpenAi | Self::OpenAiCompatible => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Ollama => "ollama",
        }
    }

    /// Whether this build has the provider.
    pub fn is_compiled(self) -> bool {
        match self {
            Self::Llama => cfg!(feature = "llama"),
            Self::OpenAi | Self::AzureOpenAi | Self::OpenAiCompatible => cfg!(feature = "openai"),
            Self::Anthropic => cfg!(feature = "anthropic"),
            Self::Gemini => cfg!(feature = "gemini"),
            Self::Ollama => cfg!(feature = "ollama"),
        }
    }

    /// The environment variable a key is read from by default.
    pub fn key_variable(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("OPENAI_API_KEY"),
            Self::AzureOpenAi => Some("AZURE_OPENAI_API_KEY"),
            Self::Anthropic => Some("ANTHROPIC_API_KEY"),
            Self::Gemini => Some("GEMINI_API_KEY"),
            Self::Llama | Self::OpenAiCompatible | Self::Ollama => None,
        }
    }

    /// Whether the model runs in this process, where a streamed reply costs
    /// no more than a whole one (the llama client's `complete` gathers its
    /// own stream) and brings the model's progress (reading the prompt,
    /// writing): a run shown as it goes streams it even without `--stream`.
    pub fn runs_in_process(self) -> bool {
        matches!(self, Self::Llama)
    }

    /// The providers of this build, comma-separated.
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
}

/// Whether to show progress (model download and load) on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Progress bars on a terminal, plain lines otherwise.
    Show,
    /// Nothing.
    Hide,
}

impl Progress {
    /// [`Hide`](Self::Hide) with `--quiet`, else [`Show`](Self::Show).
    pub fn unless_quiet(quiet: bool) -> Self {
        if quiet { Self::Hide } else { Self::Show }
    }
}

/// The client for the configured provider and model. For the local model
/// this fetches it on first use (with a progress bar) and loads it, both on
/// blocking threads. Keys are looked up in `env`. (A working-directory
/// `agentry.toml` that would send the user's key elsewhere never gets here
/// untrusted: [`Settings::load`] refuses it, see [`crate::trust`].)
pub async fn build_client(settings: &Settings, env: &Env, progress: Progress) -> Result<Arc<dyn LlmClient>, AppError> {
    let kind = settings.provider()?;
    match kind {
        #[cfg(feature = "llama")]
        ProviderKind::Llama => llama::client(settings, env, progress).await,
        #[cfg(feature = "openai")]
        ProviderKind::OpenAi | ProviderKind::AzureOpenAi | ProviderKind::OpenAiCompatible => {
            let _ = progress;
            openai::client(kind, settings, env)
        }
        #[cfg(feature = "anthropic")]
        ProviderKind::Anthropic => {
            let _ = progress;
            anthropic::client(settings, env)
        }
        #[cfg(feature = "gemini")]
        ProviderKind::Gemini => {
            let _ = progress;
            gemini::client(settings, env)
        }
        #[cfg(feature = "ollama")]
        ProviderKind::Ollama => {
            let _ = progress;
            ollama::client(settings, env)
        }
        #[allow(unreachable_patterns)]
        other => {
            let _ = (env, progress);
            Err(unavailable(other).into())
        }
    }
}

/// Why `kind` cannot be used by this build: its feature is off.
#[cfg_attr(
    all(
        feature = "llama",
        feature = "openai",
        feature = "anthropic",
        feature = "gemini",
        feature = "ollama"
    ),
    allow(dead_code)
)]
fn unavailable(kind: ProviderKind) -> ConfigError {
    ConfigError::ProviderNotCompiled {
        name: kind.name().to_owned(),
        feature: kind.feature().to_owned(),
        available: ProviderKind::compiled_names(),
    }
}

/// A provider's setup failure as the right error: missing keys, endpoints
/// and the like are configuration (exit 2); anything else is a failure.
#[cfg_attr(
    not(any(
        feature = "llama",
        feature = "openai",
        feature = "anthropic",
        feature = "gemini",
        feature = "ollama"
    )),
    allow(dead_code)
)]
fn setup_error(provider: &str, error: LlmError) -> AppError {
    match error.kind {
        LlmErrorKind::Auth | LlmErrorKind::InvalidRequest => ConfigError::Provider {
            provider: provider.to_owned(),
            message: error.message,
        }
        .into(),
        _ => AppError::Llm(error),
    }
}

/// The context window the configuration gives the model of `client`, when
/// it gives one: the local model's `[providers.llama] context_size` (its
/// `n_ctx`, which no catalog knows). Other models' windows come from the
/// catalog.
pub fn configured_context_window(settings: &Settings, client: &dyn LlmClient) -> Option<u64> {
    #[cfg(feature = "llama")]
    if client.provider() == "llama" {
        return llama::context_size(settings);
    }
    let _ = (settings, client);
    None
}

#[cfg(feature = "openai")]
mod openai {
    use std::sync::Arc;

    use agent_core::LlmClient;
    use agent_provider_openai::{OpenAiClient, OpenAiConfig, Variant};

    use super::{ProviderKind, setup_error};
    use crate::config::Settings;
    use crate::env::Env;
    use crate::error::AppError;

    pub(super) fn client(kind: ProviderKind, settings: &Settings, env: &Env) -> Result<Arc<dyn LlmClient>, AppError> {
        let mut config: OpenAiConfig = settings.provider_table(kind.name())?;
        config.variant = match kind {
            ProviderKind::AzureOpenAi => Variant::Azure,
            ProviderKind::OpenAiCompatible => Variant::Compatible,
            _ => Variant::OpenAi,
        };
        if let Some(model) = &settings.config.agent.model {
            config.model.clone_from(model);
        }
        if let Some(url) = &settings.base_url {
            config.base_url = Some(url.clone());
        }
        let client =
            OpenAiClient::with_env(config, |name| env.get(name)).map_err(|error| setup_error(kind.name(), error))?;
        Ok(Arc::new(client))
    }
}

/// `--model` / `agent.model` and `--base-url`, when given, over the
/// provider table's values.
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "ollama"))]
fn overrides(settings: &Settings, model: &mut String, base_url: &mut Option<String>) {
    if let Some(chosen) = &settings.config.agent.model {
        model.clone_from(chosen);
    }
    if let Some(url) = &settings.base_url {
        *base_url = Some(url.clone());
    }
}

#[cfg(feature = "anthropic")]
mod anthropic {
    use std::sync::Arc;

    use agent_core::LlmClient;
    use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};

    use super::{overrides, setup_error};
    use crate::config::Settings;
    use crate::env::Env;
    use crate::error::AppError;

    pub(super) fn client(settings: &Settings, env: &Env) -> Result<Arc<dyn LlmClient>, AppError> {
        let mut config: AnthropicConfig = settings.provider_table("anthropic")?;
        let mut base_url = None;
        overrides(settings, &mut config.model, &mut base_url);
        if let Some(url) = base_url {
            config.base_url = url;
        }
        let client =
            AnthropicClient::with_env(config, |name| env.get(name)).map_err(|e| setup_error("anthropic", e))?;
        Ok(Arc::new(client))
    }
}

#[cfg(feature = "gemini")]
mod gemini {
    use std::sync::Arc;

    use agent_core::LlmClient;
    use agent_provider_gemini::{GeminiClient, GeminiConfig};

    use super::{overrides, setup_error};
    use crate::config::Settings;
    use crate::env::Env;
    use crate::error::AppError;

    pub(super) fn client(settings: &Settings, env: &Env) -> Result<Arc<dyn LlmClient>, AppError> {
        let mut config: GeminiConfig = settings.provider_table("gemini")?;
        overrides(settings, &mut config.model, &mut config.base_url);
        let client = GeminiClient::with_env(config, |name| env.get(name)).map_err(|e| setup_error("gemini", e))?;
        Ok(Arc::new(client))
    }
}

#[cfg(feature = "ollama")]
mod ollama {
    use std::sync::Arc;

    use agent_core::LlmClient;
    use agent_provider_ollama::{OllamaClient, OllamaConfig};

    use super::{overrides, setup_error};
    use crate::config::Settings;
    use crate::env::Env;
    use crate::error::AppError;

    pub(super) fn client(settings: &Settings, env: &Env) -> Result<Arc<dyn LlmClient>, AppError> {
        let mut config: OllamaConfig = settings.provider_table("ollama")?;
        overrides(settings, &mut config.model, &mut config.base_url);
        let client = OllamaClient::with_env(config, |name| env.get(name)).map_err(|e| setup_error("ollama", e))?;
        Ok(Arc::new(client))
    }
}

#[cfg(feature = "llama")]
mod llama {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::Duration;

    use agent_core::LlmClient;
    use agent_provider_llama::models::{FetchProgress, KNOWN_MODELS, ModelStore, known_model};
    use agent_provider_llama::{LlamaClient, LlamaConfig};
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

    use super::{Progress, setup_error};
    use crate::config::Settings;
    use crate::env::{Env, HOME_VAR};
    use crate::error::{AppError, ConfigError};

    /// `context_size` of the `[providers.llama]` table (its default when unset).
    pub(super) fn context_size(settings: &Settings) -> Option<u64> {
        let config: LlamaConfig = settings.provider_table("llama").ok()?;
        Some(u64::from(config.context_size))
    }

    pub(super) async fn client(
        settings: &Settings,
        env: &Env,
        progress: Progress,
    ) -> Result<Arc<dyn LlmClient>, AppError> {
        if settings.base_url.is_some() {
            return Err(ConfigError::Unsupported(
                "--base-url does not apply to the llama provider, which runs the model in-process; \
                 use --provider openai-compatible --base-url URL for a llama.cpp server"
                    .to_owned(),
            )
            .into());
        }
        let mut config: LlamaConfig = settings.provider_table("llama")?;
        // Before any download or load: a bad number is a configuration error.
        config.validate().map_err(|error| setup_error("llama", error))?;
        if let Some(model) = &settings.config.agent.model {
            if looks_like_a_file(model) {
                config.model_path = Some(PathBuf::from(model));
            } else {
                config.model.clone_from(model);
                config.model_path = None;
            }
        }
        if let Some(path) = config.model_path.take() {
            let resolved = settings.resolve_path("providers.llama.model_path", &path);
            if !resolved.is_file() {
                return Err(ConfigError::Provider {
                    provider: "llama".to_owned(),
                    message: format!(
                        "the model file {} does not exist; fix `model_path` in [providers.llama] (or --model)",
                        resolved.display()
                    ),
                }
                .into());
            }
            config.model_path = Some(resolved);
        } else {
            config.models_dir = match config.models_dir.take() {
                Some(dir) => Some(settings.resolve_path("providers.llama.models_dir", &dir)),
                None => env.get(HOME_VAR).map(|home| PathBuf::from(home).join("models")),
            };
            fetch(&config, progress).await?;
        }
        config.prompt_cache_dir = match config.prompt_cache_dir.take() {
            Some(dir) => Some(settings.resolve_path("providers.llama.prompt_cache_dir", &dir)),
            None => env
                .get(HOME_VAR)
                .map(|home| PathBuf::from(home).join("cache").join("llama")),
        };
        let spinner = spinner(progress, format!("loading {}", display_name(&config)));
        let loaded = tokio::task::spawn_blocking(move || LlamaClient::load(config))
            .await
            .map_err(|error| AppError::ModelFetch(format!("the loading thread failed: {error}")))?;
        spinner.finish_and_clear();
        let client = loaded.map_err(|error| setup_error("llama", error))?;
        Ok(Arc::new(client))
    }

    fn looks_like_a_file(model: &str) -> bool {
        let path = Path::new(model);
        path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"))
            || model.contains(std::path::MAIN_SEPARATOR)
    }

    fn display_name(config: &LlamaConfig) -> String {
        config
            .model_path
            .as_ref()
            .map_or_else(|| config.model.clone(), |path| path.display().to_string())
    }

    /// Downloads the configured known model unless it is in the store.
    async fn fetch(config: &LlamaConfig, progress: Progress) -> Result<(), AppError> {
        let Some(model) = known_model(&config.model) else {
            return Err(ConfigError::Provider {
                provider: "llama".to_owned(),
                message: format!(
                    "unknown local model `{}`; known models: {}; or set `model_path` in [providers.llama] to any GGUF file",
                    config.model,
                    KNOWN_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
                ),
            }
            .into());
        };
        let store = config
            .models_dir
            .clone()
            .map_or_else(ModelStore::default_location, ModelStore::new);
        if store.is_ready(model) {
            return Ok(());
        }
        let bar = match progress {
            Progress::Show => ProgressBar::with_draw_target(Some(model.size), ProgressDrawTarget::stderr()),
            Progress::Hide => ProgressBar::hidden(),
        };
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({elapsed})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        let plain = progress == Progress::Show && bar.is_hidden();
        let announce = format!(
            "fetching the local model {} ({}) into {}; this happens once",
            model.name,
            model.description,
            store.dir().display()
        );
        if progress == Progress::Show {
            bar.suspend(|| eprintln!("{announce}"));
        }
        let name = model.name;
        let worker_bar = bar.clone();
        let result = tokio::task::spawn_blocking(move || {
            store.fetch(name, &mut |step| match step {
                FetchProgress::Downloading { part, parts } => {
                    worker_bar.set_message(format!("downloading part {part}/{parts}"));
                    if plain {
                        eprintln!("  downloading part {part}/{parts}");
                    }
                }
                FetchProgress::Assembling { done, total } => {
                    worker_bar.set_message("assembling and verifying");
                    worker_bar.set_length(total);
                    worker_bar.set_position(done);
                }
            })
        })
        .await
        .map_err(|error| AppError::ModelFetch(format!("the download thread failed: {error}")))?;
        bar.finish_and_clear();
        result
            .map(|_| ())
            .map_err(|error| AppError::ModelFetch(error.to_string()))
    }

    fn spinner(progress: Progress, message: String) -> ProgressBar {
        let spinner = match progress {
            Progress::Show => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            Progress::Hide => ProgressBar::hidden(),
        };
        // A bar without a length is drawn as an empty bar unless styled as a spinner.
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            spinner.set_style(style);
        }
        spinner.set_message(message);
        spinner.enable_steady_tick(Duration::from_millis(120));
        spinner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(
        feature = "llama",
        feature = "openai",
        feature = "anthropic",
        feature = "gemini",
        feature = "ollama"
    ))]
    #[test]
    fn names_round_trip_and_features_are_named() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.name()), Some(kind));
            assert!(!kind.feature().is_empty());
            // The default build has every provider.
            assert!(kind.is_compiled(), "{}", kind.name());
        }
        assert_eq!(ProviderKind::parse(" OpenAI "), Some(ProviderKind::OpenAi));
        assert_eq!(ProviderKind::parse("openia"), None);
        assert_eq!(ProviderKind::OpenAi.key_variable(), Some("OPENAI_API_KEY"));
        assert_eq!(ProviderKind::Anthropic.key_variable(), Some("ANTHROPIC_API_KEY"));
    }

    #[test]
    fn the_build_knows_which_providers_it_has() {
        assert_eq!(ProviderKind::Llama.is_compiled(), cfg!(feature = "llama"));
        assert_eq!(ProviderKind::AzureOpenAi.is_compiled(), cfg!(feature = "openai"));
        assert_eq!(ProviderKind::Gemini.is_compiled(), cfg!(feature = "gemini"));
    }

    #[test]
    fn a_provider_of_a_feature_that_is_off_names_the_feature() {
        let message = unavailable(ProviderKind::Anthropic).to_string();
        assert!(
            message.contains("`anthropic`") && message.contains("--features anthropic"),
            "{message}"
        );
        assert!(message.contains(&ProviderKind::compiled_names()), "{message}");
        let message = unavailable(ProviderKind::Llama).to_string();
        assert!(message.contains("--features llama"), "{message}");
    }
}
