//! The model client of the configured provider. The facade reads the
//! chosen provider's configuration ([`Settings::provider_config`]: its
//! `[providers.NAME]` table, with `agent.model` (`--model`) and
//! `--base-url` as its `model` and `base_url` keys) and makes the client
//! ([`ProviderConfig::client_with_env`](agentry::ProviderConfig::client_with_env)). What only the app does is here:
//! the local model's download and load with a progress bar, and setup
//! errors as exit statuses.

use std::sync::Arc;

use agent_core::{LlmClient, LlmError, LlmErrorKind};
use agentry::{ProviderConfig, ProviderKind};

use crate::error::{AppError, ConfigError};
use agentry::config::{Env, ModelClient, Settings};

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
/// untrusted: `Settings::load` refuses it, see [`agentry::config::trust`].)
pub async fn build_client(settings: &Settings, env: &Env, progress: Progress) -> Result<Arc<dyn LlmClient>, AppError> {
    Ok(build_model_client(settings, env, progress).await?.client)
}

/// [`build_client`], with the circuit breakers `/readyz` reports: the
/// primary provider's client, then `[agent] fallback`'s, each behind the
/// breaker and rate limiter of its tables ([`Settings::model_client`]).
pub async fn build_model_client(settings: &Settings, env: &Env, progress: Progress) -> Result<ModelClient, AppError> {
    let primary = client_of(settings.provider_config(env)?, env, progress).await?;
    let mut fallbacks = Vec::new();
    for kind in settings.fallback_providers()? {
        let config = settings.fallback_provider_config(kind, env)?;
        fallbacks.push((kind, client_of(config, env, progress).await?));
    }
    Ok(settings.model_client(primary, fallbacks)?)
}

/// The client of one provider's configuration.
#[allow(clippy::unused_async, reason = "only the local model's load awaits")]
async fn client_of(config: ProviderConfig, env: &Env, progress: Progress) -> Result<Arc<dyn LlmClient>, AppError> {
    #[cfg(feature = "llama")]
    if let ProviderConfig::Llama(config) = config {
        return llama::client(config, progress).await;
    }
    let _ = progress;
    let kind = config.kind();
    config
        .client_with_env(|name| env.get(name))
        .map_err(|error| setup_error(kind, error))
}

/// A provider's setup failure as the right error: missing keys, endpoints
/// and the like are configuration (exit 2); anything else is a failure.
fn setup_error(kind: ProviderKind, error: LlmError) -> AppError {
    match error.kind {
        LlmErrorKind::Auth | LlmErrorKind::InvalidRequest => ConfigError::Provider {
            provider: kind.name().to_owned(),
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
        let table = agentry::config::figment::value::Value::from(settings.table_value("providers.llama"));
        let config: agentry::llama::LlamaConfig = serde::Deserialize::deserialize(&table).ok()?;
        return Some(u64::from(config.context_size));
    }
    let _ = (settings, client);
    None
}

#[cfg(feature = "llama")]
mod llama {
    use std::sync::Arc;
    use std::time::Duration;

    use agent_core::LlmClient;
    use agentry::ProviderKind;
    use agentry::llama::models::{FetchProgress, KNOWN_MODELS, ModelStore, known_model};
    use agentry::llama::{LlamaClient, LlamaConfig};
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

    use super::{Progress, setup_error};
    use crate::error::{AppError, ConfigError};

    pub(super) async fn client(config: LlamaConfig, progress: Progress) -> Result<Arc<dyn LlmClient>, AppError> {
        // Before any download or load: a bad number is a configuration error.
        config
            .validate()
            .map_err(|error| setup_error(ProviderKind::Llama, error))?;
        if let Some(path) = &config.model_path {
            if !path.is_file() {
                return Err(ConfigError::Provider {
                    provider: "llama".to_owned(),
                    message: format!(
                        "the model file {} does not exist; fix `model_path` in [providers.llama] (or --model)",
                        path.display()
                    ),
                }
                .into());
            }
        } else {
            fetch(&config, progress).await?;
        }
        let spinner = spinner(progress, format!("loading {}", display_name(&config)));
        let loaded = tokio::task::spawn_blocking(move || LlamaClient::load(config))
            .await
            .map_err(|error| AppError::ModelFetch(format!("the loading thread failed: {error}")))?;
        spinner.finish_and_clear();
        let client = loaded.map_err(|error| setup_error(ProviderKind::Llama, error))?;
        Ok(Arc::new(client))
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

    #[test]
    fn a_provider_of_a_feature_that_is_off_names_the_feature() {
        let message = ConfigError::provider_not_compiled(ProviderKind::Anthropic).to_string();
        assert!(
            message.contains("`anthropic`") && message.contains("--features anthropic"),
            "{message}"
        );
        assert!(message.contains(&ProviderKind::compiled_names()), "{message}");
        let message = ConfigError::provider_not_compiled(ProviderKind::Llama).to_string();
        assert!(message.contains("--features llama"), "{message}");
    }

    #[cfg(feature = "openai")]
    #[test]
    fn a_misspelt_key_in_a_provider_table_is_an_error_naming_it() {
        use agentry::config::{CONFIG_FILE_NAME, Overrides};

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let read = |toml: &str, overrides: &Overrides| {
            std::fs::write(dir.path().join(CONFIG_FILE_NAME), toml).unwrap_or_else(|e| panic!("{e}"));
            let settings = Settings::read(overrides, &Env::default(), dir.path()).unwrap_or_else(|e| panic!("{e}"));
            settings.provider_config(&Env::default())
        };
        let good = "[agent]\nprovider = \"openai\"\n[providers.openai]\nmodel = \"m\"\nmax_retries = 2\n";
        let config = read(good, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        let agentry::ProviderConfig::OpenAi(openai) = &config else {
            panic!("not openai")
        };
        assert_eq!((openai.model.as_str(), openai.http.max_retries), ("m", 2));

        // `--model` and `--base-url` are keys of the table like the others.
        let flags = Overrides {
            model: Some("from-flag".to_owned()),
            base_url: Some("http://127.0.0.1:9/v1".to_owned()),
            ..Overrides::default()
        };
        let config = read(good, &flags).unwrap_or_else(|e| panic!("{e}"));
        let agentry::ProviderConfig::OpenAi(openai) = &config else {
            panic!("not openai")
        };
        assert_eq!(openai.model, "from-flag");
        assert_eq!(openai.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));

        let misspelt = "[agent]\nprovider = \"openai\"\n[providers.openai]\nmodel = \"m\"\nmax_retrys = 2\n";
        let error = read(misspelt, &Overrides::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("unknown key `providers.openai.max_retrys`") && error.contains("annotated agentry.toml"),
            "{error}"
        );
    }
}
