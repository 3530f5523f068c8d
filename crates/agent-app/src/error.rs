//! Typed errors of the application, each with the exit status it maps to.
//!
//! Messages name what to fix: the file and key of a bad setting, the
//! environment variable of a missing key, the valid values of an enum.

use std::path::PathBuf;

use agent_core::LlmError;

/// Exit status of a successful command.
pub const EXIT_OK: u8 = 0;
/// Exit status of any failure that is not a usage or configuration error.
pub const EXIT_FAILURE: u8 = 1;
/// Exit status of bad usage or configuration.
pub const EXIT_USAGE: u8 = 2;

/// A configuration problem: exit status 2, with a message naming the file
/// (or variable, or flag), the key, and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The configuration file named by `--config` or `$AGENTRY_CONFIG` does not exist.
    #[error("the configuration file {} (from {origin}) does not exist; fix the path or drop the setting", path.display())]
    FileNotFound {
        /// The path.
        path: PathBuf,
        /// `--config` or `$AGENTRY_CONFIG`.
        origin: String,
    },
    /// The file is not valid TOML, or could not be read.
    #[error("{origin}: {message}")]
    Unreadable {
        /// The file.
        origin: String,
        /// What the parser said.
        message: String,
    },
    /// A key has a value of the wrong type or outside its range.
    #[error("{origin}: invalid value for `{key}`: {message}")]
    InvalidValue {
        /// Where the value came from (file, environment variable, flag).
        origin: String,
        /// The dotted key, e.g. `agent.max_iterations`.
        key: String,
        /// What is wrong and what is expected.
        message: String,
    },
    /// A key that does not exist (usually a typo).
    #[error("{origin}: unknown key `{key}`; valid keys here: {expected}")]
    UnknownKey {
        /// Where the key came from.
        origin: String,
        /// The dotted key.
        key: String,
        /// The keys that are valid at this place.
        expected: String,
    },
    /// A required key is absent.
    #[error("{origin}: missing key `{key}`{hint}")]
    MissingKey {
        /// Where the table came from.
        origin: String,
        /// The dotted key.
        key: String,
        /// An example of what to write, starting with `; `.
        hint: String,
    },
    /// `agent.provider` names no provider Agentry knows.
    #[error("{origin}: unknown provider `{name}` in `agent.provider`; valid providers: {valid}")]
    UnknownProvider {
        /// Where the value came from.
        origin: String,
        /// The value.
        name: String,
        /// The valid names.
        valid: String,
    },
    /// A known provider whose cargo feature is off in this build.
    #[error(
        "provider `{name}` is not compiled into this agentry: rebuild agent-app with the cargo feature `{feature}` \
         (e.g. `cargo build -p agent-app --features {feature}`); providers in this build: {available}"
    )]
    ProviderNotCompiled {
        /// The provider.
        name: String,
        /// The cargo feature that brings it in.
        feature: String,
        /// The providers this build has.
        available: String,
    },
    /// A part of agentry (a command, a tool domain, a table) whose cargo
    /// feature is off in this build.
    #[error(
        "{what} is not compiled into this agentry: rebuild agent-app with the cargo feature `{feature}` \
         (e.g. `cargo build -p agent-app --features {feature}`)"
    )]
    FeatureNotCompiled {
        /// What was asked for, e.g. "`agentry serve`" or "tool domain `web`".
        what: String,
        /// The cargo feature that brings it in.
        feature: &'static str,
    },
    /// `tools.enabled` names a domain that does not exist.
    #[error("{origin}: unknown tool domain `{name}` in `tools.enabled`; available domains: {available}")]
    UnknownToolDomain {
        /// Where the list came from.
        origin: String,
        /// The unknown name.
        name: String,
        /// The valid names.
        available: String,
    },
    /// A provider could not be set up from its configuration (missing key,
    /// missing endpoint, model not known). The message says what to set.
    #[error("{provider}: {message}")]
    Provider {
        /// The provider.
        provider: String,
        /// What to set.
        message: String,
    },
    /// A tool domain could not be set up from its table.
    #[error("tool domain `{domain}`: {message}")]
    Tool {
        /// The domain.
        domain: String,
        /// What to fix.
        message: String,
    },
    /// A flag does not apply to the chosen provider.
    #[error("{0}")]
    Unsupported(String),
    /// The working directory's `agentry.toml` sets keys that run programs
    /// or send secrets, and the user has not trusted it (`agentry trust`).
    #[error(
        "{} is not trusted, and it sets keys that run programs or send secrets:\n{}\nnothing was started or sent. \
         Read the file; if you trust it, run `agentry trust{}` (a change to the file withdraws the trust), \
         or name it with --config",
        file.display(),
        keys.iter().map(|key| format!("  - {key}")).collect::<Vec<_>>().join("\n"),
        changed.then_some(" again (the file changed since it was trusted)").unwrap_or_default()
    )]
    Untrusted {
        /// The file.
        file: PathBuf,
        /// Each sensitive key it sets and what it would do.
        keys: Vec<String>,
        /// The file was trusted before, with other contents.
        changed: bool,
    },
}

/// Any failure of an `agentry` command.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Bad configuration (exit 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Bad usage of a command (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A model provider failed outside a run (e.g. while loading) (exit 1).
    #[error("{0}")]
    Llm(#[from] LlmError),
    /// The local model could not be fetched (exit 1).
    #[error("could not fetch the model: {0}")]
    ModelFetch(String),
    /// A stored session could not be read, written or found (exit 1).
    #[error("{0}")]
    Session(String),
    /// A run ended with an error (exit 1); its record was already reported.
    #[error("{0}")]
    RunFailed(String),
    /// Reading or writing the terminal or a file failed (exit 1).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// An MCP server could not be started, or serving MCP failed (exit 1;
    /// exit 2 for a bad `[mcp.servers.NAME]` table).
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] agentry::mcp::McpError),
}

impl ConfigError {
    /// `what` needs the cargo feature `feature`, which this build lacks.
    pub fn not_compiled(what: impl Into<String>, feature: &'static str) -> Self {
        Self::FeatureNotCompiled {
            what: what.into(),
            feature,
        }
    }
}

impl From<agentry::NotCompiled> for ConfigError {
    fn from(error: agentry::NotCompiled) -> Self {
        Self::not_compiled(error.what, error.feature)
    }
}

impl AppError {
    /// The process exit status for this error: 2 for usage and
    /// configuration errors, 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::Usage(_) => EXIT_USAGE,
            #[cfg(feature = "mcp")]
            Self::Mcp(agentry::mcp::McpError::Config { .. }) => EXIT_USAGE,
            #[cfg(feature = "mcp")]
            Self::Mcp(_) => EXIT_FAILURE,
            Self::Llm(_) | Self::ModelFetch(_) | Self::Session(_) | Self::RunFailed(_) | Self::Io { .. } => {
                EXIT_FAILURE
            }
        }
    }

    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_contract() {
        let config = AppError::from(ConfigError::Unsupported("x".into()));
        assert_eq!(config.exit_code(), EXIT_USAGE);
        assert_eq!(AppError::Usage("x".into()).exit_code(), EXIT_USAGE);
        assert_eq!(AppError::RunFailed("x".into()).exit_code(), EXIT_FAILURE);
        assert_eq!(AppError::from(LlmError::auth("no")).exit_code(), EXIT_FAILURE);
    }

    #[test]
    fn a_part_left_out_of_the_build_names_its_feature_and_is_a_usage_error() {
        let error = AppError::from(ConfigError::not_compiled("`agentry serve`", "serve"));
        assert_eq!(error.exit_code(), EXIT_USAGE);
        assert_eq!(
            error.to_string(),
            "`agentry serve` is not compiled into this agentry: rebuild agent-app with the cargo feature `serve` \
             (e.g. `cargo build -p agent-app --features serve`)"
        );
    }

    #[test]
    fn messages_name_the_origin_key_and_fix() {
        let error = ConfigError::InvalidValue {
            origin: "/etc/agentry.toml".into(),
            key: "agent.max_iterations".into(),
            message: "invalid type: found string \"ten\", expected u32".into(),
        };
        assert_eq!(
            error.to_string(),
            "/etc/agentry.toml: invalid value for `agent.max_iterations`: invalid type: found string \"ten\", expected u32"
        );
    }
}
