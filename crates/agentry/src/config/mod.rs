//! Configuration: `agentry.toml`, environment overrides and command-line
//! flags, merged with figment (defaults < file < environment < flags), read
//! into the types of the crates they configure (feature `config`).
//!
//! The file comes from `--config`, else `$AGENTRY_CONFIG`, else
//! `agentry.toml` in the working directory; without one the defaults apply
//! (the embedded local model with the math and travel tools). Every layer
//! is named after its source (the file's path, `environment variable
//! AGENTRY_MODEL`, `command-line flag --provider`), so an error
//! ([`ConfigError`]) names where the bad value came from and the key it
//! was under.
//!
//! - `[agent]` holds the runner's [`RunConfig`](crate::runner::RunConfig)
//!   and [`ModelSettings`](crate::runner::ModelSettings) (their keys sit
//!   beside `provider` and `model`); [`Settings::agent_config`] gives the
//!   runner's whole configuration.
//! - `[providers.NAME]`, `[tools.NAME]` and `[mcp.servers.NAME]` stay raw
//!   until the factory ([`ProviderConfig::from_table`](crate::ProviderConfig::from_table),
//!   [`ToolDomain::build`](crate::ToolDomain::build)) reads the chosen ones:
//!   [`Settings::provider_config`] gives the chosen provider's
//!   configuration, [`Settings::tool_box`] the enabled tool domains.
//! - `[catalog."model"]` is merged over the shipped model prices
//!   ([`SHIPPED_CATALOG`]).
//! - `[scenes]` is checked and its templates read ([`Settings::scene_specs`]).
//! - `[serve]` and `[store]` belong to the server, which reads them.
//! - Every numeric key has a range ([`NUMERIC_RANGES`]): a value outside it
//!   is [`ConfigError::OutOfRange`], naming the key, its origin and the
//!   range.
//!
//! A working-directory `agentry.toml` that runs programs or sends secrets
//! is refused by [`Settings::load`] until the user trusts it ([`trust`]).
//!
//! ```
//! use agentry::config::{Env, Overrides, Settings};
//!
//! let dir = std::env::temp_dir().join(format!("agentry-config-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! std::fs::write(dir.join("agentry.toml"), "[agent]\nprovider = \"openai\"\nmax_iterations = 4\n")?;
//! let env = Env::from_pairs([("AGENTRY_MODEL", "gpt-4o-mini")]);
//! let settings = Settings::load(&Overrides::default(), &env, &dir)?;
//! assert_eq!(settings.config.agent.model.as_deref(), Some("gpt-4o-mini"));
//! assert_eq!(settings.agent_config().run.max_iterations, 4);
//! assert_eq!(settings.origin("agent.model"), "environment variable AGENTRY_MODEL");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod catalog;
mod env;
mod error;
mod guardrails;
mod key_exposure;
mod parts;
mod ranges;
mod resilience;
mod settings;
mod tables;
pub mod trust;

#[cfg(test)]
mod tests;

pub use crate::{GuardrailSpec, GuardrailTables, PatternSpec};
pub use catalog::{CatalogEntry, SHIPPED_CATALOG, parse_catalog, shipped_entries, to_catalog};
pub use env::Env;
pub use error::ConfigError;
pub use key_exposure::provider_key_routes;
pub use parts::SetupError;
pub use ranges::{KeyRange, NUMERIC_RANGES, Place};
#[cfg(feature = "resilience")]
pub use resilience::ProviderResilience;
use resilience::RESILIENCE_TABLES;
pub use resilience::{ModelClient, ReadinessDetails};
pub use settings::Settings;
pub use tables::{
    AgentSettings, BudgetSettings, Conditions, Config, McpSettings, Overrides, ProviderTables, RawTable, SceneEntry,
    SceneSpec, SceneSpecs, SceneTables, StoreSettings, ToolSettings, default_domains, redact_url,
};
pub use trust::{TrustStore, TrustStoreError, file_digest, sensitive_keys};

/// figment, whose raw values ([`figment::value::Value`], `Dict`) the
/// factory's tables are handed over in.
pub use figment;

pub use crate::telemetry::{TELEMETRY_PROTOCOLS, TelemetryConfig as TelemetrySettings};

/// The file looked for in the working directory.
pub const CONFIG_FILE_NAME: &str = "agentry.toml";

/// The default provider: the embedded local model.
pub const DEFAULT_PROVIDER: &str = "llama";

/// The time a turn on the embedded local model may take by default, in
/// seconds (`[agent] max_turn_secs`).
pub const LLAMA_MAX_TURN_SECS: f64 = 120.0;

/// `$AGENTRY_HOME`: where models and sessions live.
pub const HOME_VAR: &str = "AGENTRY_HOME";
/// `$AGENTRY_CONFIG`: the configuration file when `--config` is not given.
pub const CONFIG_VAR: &str = "AGENTRY_CONFIG";
/// `$AGENTRY_PROVIDER`: overrides `agent.provider`.
pub const PROVIDER_VAR: &str = "AGENTRY_PROVIDER";
/// `$AGENTRY_MODEL`: overrides `agent.model`.
pub const MODEL_VAR: &str = "AGENTRY_MODEL";
/// Prefix of generic overrides: `AGENTRY_AGENT__MAX_TOKENS=512` sets
/// `agent.max_tokens` (`__` separates keys, names are lowercased).
pub const OVERRIDE_PREFIX: &str = "AGENTRY_";
