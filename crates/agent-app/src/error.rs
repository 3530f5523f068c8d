//! Typed errors of the application, each with the exit status it maps to.
//!
//! Messages name what to fix: the file and key of a bad setting, the
//! environment variable of a missing key, the valid values of an enum.

use agent_core::LlmError;

/// Exit status of a successful command.
pub const EXIT_OK: u8 = 0;
/// Exit status of any failure that is not a usage or configuration error.
pub const EXIT_FAILURE: u8 = 1;
/// Exit status of bad usage or configuration.
pub const EXIT_USAGE: u8 = 2;
/// Exit status of a run cancelled by an interrupt (Ctrl-C, SIGINT): the
/// shell's 128 + 2, so a script tells the user's interrupt from a failure.
pub const EXIT_INTERRUPTED: u8 = 130;

/// A configuration problem (exit status 2): the facade's.
pub use agentry::config::ConfigError;

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
    /// A run was cancelled by an interrupt before it had a record to print
    /// (exit 130).
    #[error("{0}")]
    Interrupted(String),
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

impl From<agent_console::ChatError> for AppError {
    fn from(error: agent_console::ChatError) -> Self {
        match error {
            agent_console::ChatError::Terminal { context, source } => Self::io(context, source),
            agent_console::ChatError::Sink(error) => match error.downcast::<Self>() {
                Ok(error) => *error,
                Err(other) => Self::Session(other.to_string()),
            },
        }
    }
}

impl From<agentry::config::SetupError> for AppError {
    fn from(error: agentry::config::SetupError) -> Self {
        match error {
            agentry::config::SetupError::Config(error) => Self::Config(error),
            #[cfg(feature = "mcp")]
            agentry::config::SetupError::Mcp(error) => Self::Mcp(error),
        }
    }
}

impl From<agentry::config::TrustStoreError> for AppError {
    fn from(error: agentry::config::TrustStoreError) -> Self {
        match error {
            agentry::config::TrustStoreError::Io { context, source } => Self::Io { context, source },
            damaged @ agentry::config::TrustStoreError::Damaged { .. } => Self::Usage(damaged.to_string()),
        }
    }
}

impl AppError {
    /// The process exit status for this error: 2 for usage and
    /// configuration errors, 130 for an interrupted run, 1 for everything
    /// else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::Usage(_) => EXIT_USAGE,
            Self::Interrupted(_) => EXIT_INTERRUPTED,
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
        assert_eq!(AppError::Interrupted("x".into()).exit_code(), EXIT_INTERRUPTED);
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
