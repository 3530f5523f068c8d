//! # agent-app
//!
//! Agentry's composition root and the `agentry` binary. The factory from
//! configuration to parts is the facade's ([`agentry::ProviderConfig`],
//! [`agentry::ToolDomain`], [`agentry::ToolBox`]); this crate reads
//! `agentry.toml` into it and offers the result on the command line.
//!
//! - [`config`] is the facade's (`agentry::config`): `agentry.toml`, the
//!   environment and the flags, merged with figment, and the trust check of
//!   a working-directory file; [`trust`] is the `agentry trust` command.
//! - [`providers`]: the configured provider's client, through the facade,
//!   plus what only the app does (the local model's download and progress
//!   bar, setup errors as exit statuses).
//! - [`tools`]: the enabled tool domains (`math`, `travel`, `sql`, `web`,
//!   and MCP servers, `[mcp.servers.NAME]`), through the facade;
//!   [`mcp`]: `agentry mcp`, which serves the enabled tools over stdio.
//! - [`output`]: the `run --json` contract.
//! - [`scenes`]: `[scenes]`, named sub-agents the model routes each request to.
//! - [`chat`], [`demo`], [`sessions`]: the interactive parts, on the
//!   terminal side of `agent-console` (its `Console` shows what a run is
//!   doing, its chat loop runs `chat`; `--quiet` turns the progress line
//!   off); the demo's turns, agents and checker are the
//!   `agent-travel-assistant` crate's, [`demo`] renders them.
//! - [`serve`]: `agentry serve`, `agent-server` with `[serve]` and `[store]`.
//! - [`cli`]: the commands (`run` and `resume` live in a module of their own).
//! - `[telemetry]`, OTLP/HTTP export of the GenAI spans and metrics, is the
//!   facade's (`agentry::telemetry`, feature `telemetry`); [`cli`] installs
//!   it as a tracing-opentelemetry layer and a `metrics` recorder.
//!
//! Building an agent from configuration, as the binary does:
//!
//! ```no_run
//! use agent_app::{assemble, config::{Env, Overrides, Settings}, providers, tools::ToolBox};
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

pub mod args;
pub mod assemble;
pub mod chat;
pub mod cli;
#[cfg(feature = "demo")]
pub mod demo;
pub mod error;
pub mod mcp;
pub mod output;
pub mod providers;
mod runs;
pub mod scenes;
pub mod serve;
pub mod sessions;
pub mod tools;
pub mod trust;

/// The configuration: the facade's (`agentry::config`, feature `config`).
pub use agentry::config;

/// The environment snapshot and the variables Agentry reads (defined in
/// [`config`], which reads them).
pub mod env {
    pub use agentry::config::{CONFIG_VAR, Env, HOME_VAR, MODEL_VAR, OVERRIDE_PREFIX, PROVIDER_VAR};
}
