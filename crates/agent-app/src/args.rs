//! The option groups several commands share (clap): the provider and
//! model, the agent's shape, the session it continues.

use std::path::PathBuf;

use chrono::NaiveDate;
use clap::Args;

use agentry::config::Overrides;

/// Options that choose the provider and model (shared by `run`, `chat` and `demo`).
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderOptions {
    /// Configuration file (default: $AGENTRY_CONFIG, else ./agentry.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Provider (the ones this build has are listed in the help text).
    #[arg(long, value_name = "NAME", help = provider_help())]
    pub provider: Option<String>,
    /// Model name (or, for llama, a .gguf file).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Base URL of the chosen provider (e.g. http://localhost:8000/v1).
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,
}

/// The `--provider` help: only the providers compiled into this build.
fn provider_help() -> String {
    format!("Provider: {}", agentry::ProviderKind::compiled_names())
}

impl ProviderOptions {
    /// The flags as configuration overrides.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            config: self.config.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            ..Overrides::default()
        }
    }
}

/// Options that choose and shape the agent (shared by `run`, `chat` and `serve`).
#[derive(Debug, Clone, Default, Args)]
pub struct AgentShape {
    /// Provider and model.
    #[command(flatten)]
    pub provider: ProviderOptions,
    /// Tool domains to enable, comma-separated (replaces [tools] enabled; "" for none).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Model calls that may request tools before the answer is forced.
    #[arg(long = "max-iterations", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,
}

impl AgentShape {
    /// The flags as configuration overrides.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            tools: self.tools.as_deref().map(tool_list),
            max_iterations: self.max_iterations,
            ..self.provider.overrides()
        }
    }
}

/// The agent's options and the stored conversation it continues (`run`, `chat`).
#[derive(Debug, Clone, Default, Args)]
pub struct AgentOptions {
    /// Provider, model, tools and iterations.
    #[command(flatten)]
    pub shape: AgentShape,
    /// Continue the stored conversation NAME, and save it afterwards.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
}

impl AgentOptions {
    /// The flags as configuration overrides.
    pub fn overrides(&self) -> Overrides {
        self.shape.overrides()
    }
}

/// `--tools a,b` as domain names: trimmed, empty entries dropped (so `--tools ""` means none).
pub fn tool_list(tools: &[String]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect()
}

/// `agentry demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Provider and model (default: the configured ones, else the embedded local model).
    #[command(flatten)]
    pub provider: ProviderOptions,
    /// After the ten turns, check each against its expectations (tools
    /// called and not, their arguments, facts in the answer, questions back)
    /// and print a verdict per turn and the score, N/10.
    #[arg(long)]
    pub check: bool,
    /// With --check: exit 1 when fewer than N turns pass.
    #[arg(long, value_name = "N", requires = "check")]
    pub min_pass: Option<usize>,
    /// The date the demo takes as today (YYYY-MM-DD; default: the system
    /// date). The prompts and the tools' data depend on it, so a fixed date
    /// repeats a run.
    #[arg(long, value_name = "DATE")]
    pub today: Option<NaiveDate>,
}
