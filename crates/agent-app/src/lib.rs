//! # agent-app
//!
//! Agentry's composition root and the `agentry` binary: the only crate that
//! knows every provider and tool crate. It turns configuration into a model
//! client, a tool registry and an agent, and offers them on the command line.
//!
//! - [`config`]: `agentry.toml` (from `--config`, `$AGENTRY_CONFIG` or the
//!   working directory), environment overrides and flags, merged with
//!   figment; errors name the file, the key and the fix.
//! - [`providers`]: one factory from configuration to `Arc<dyn LlmClient>`,
//!   each provider crate behind a cargo feature (`llama`, `openai`).
//! - [`tools`]: the tool domains (`math`, `travel`, `sql`, `web`).
//! - [`mcp`]: MCP servers as tool domains (`[mcp.servers.NAME]`), and
//!   `agentry mcp`, which serves the enabled tools over stdio.
//! - [`catalog`]: model prices shipped in `data/models.toml`, overridable.
//! - [`output`]: the `run --json` contract.
//! - [`scenes`]: `[scenes]`, named sub-agents the model routes each request to.
//! - [`chat`], [`demo`], [`sessions`], [`console`]: the interactive parts
//!   (the demo's turns, agents and checker are the `agent-travel-assistant`
//!   crate's; [`demo`] renders them); on a terminal, [`console`] also shows
//!   what the run is doing on one line of stderr (loading the model,
//!   waiting for the provider, reading the prompt, writing, running a
//!   tool), which `--quiet` turns off.
//! - [`cli`]: the commands (`run` and `resume` live in a module of their own).
//! - [`trust`]: a working-directory `agentry.toml` that runs programs or
//!   sends secrets is refused until `agentry trust` records it.
//! - [`telemetry`]: `[telemetry]`, OTLP/HTTP export of the GenAI spans and
//!   metrics (tracing-opentelemetry and a `metrics` recorder).
//!
//! Building an agent from configuration, as the binary does:
//!
//! ```no_run
//! use agent_app::{assemble, config::{Overrides, Settings}, env::Env, providers, tools::ToolBox};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), agent_app::error::AppError> {
//! let env = Env::from_process();
//! let settings = Settings::load(&Overrides::default(), &env, &std::env::current_dir().unwrap())?;
//! let tools = ToolBox::from_settings(&settings, &env).await?;
//! let client = providers::build_client(&settings, &env, providers::Progress::Show).await?;
//! let agent = assemble::build_agent(&settings, client, &tools);
//! let result = agent.run("What is 17 * 23?").await;
//! # let _ = result;
//! # Ok(())
//! # }
//! ```

pub mod assemble;
pub mod catalog;
pub mod chat;
pub mod cli;
pub mod config;
pub mod console;
#[cfg(feature = "demo")]
pub mod demo;
pub mod env;
pub mod error;
pub mod key_exposure;
pub mod mcp;
pub mod output;
mod progress;
pub mod providers;
mod runs;
pub mod scenes;
pub mod serve;
pub mod sessions;
#[cfg(feature = "telemetry")]
pub mod telemetry;
pub mod tools;
pub mod trust;
