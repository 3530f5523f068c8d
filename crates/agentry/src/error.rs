//! The errors of the factories: a part this build does not have, a table
//! that does not deserialise, a domain that cannot be set up.

/// A provider or tool domain whose cargo feature is off in this build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} is not compiled into this build: it needs the cargo feature `{feature}`")]
pub struct NotCompiled {
    /// What was asked for, e.g. "the provider `anthropic`".
    pub what: String,
    /// The cargo feature that brings it in (of `agentry`, and of the
    /// applications that forward it under the same name).
    pub feature: &'static str,
}

/// Why a provider's configuration could not be read from its table.
#[derive(Debug, thiserror::Error)]
pub enum TableError<E> {
    /// The provider is not in this build.
    #[error(transparent)]
    NotCompiled(NotCompiled),
    /// The table does not deserialise: the deserializer's own error, which
    /// names the key (with a deserializer that tracks paths).
    #[error(transparent)]
    Invalid(E),
}

/// Why a tool domain could not be built from its table.
#[derive(Debug, thiserror::Error)]
pub enum DomainError<E> {
    /// The domain is not in this build.
    #[error(transparent)]
    NotCompiled(NotCompiled),
    /// The table does not deserialise (the deserializer's error).
    #[error(transparent)]
    Invalid(E),
    /// The table is valid but the domain cannot start with it (a database
    /// that does not open, a search backend without its key, ...).
    #[error("tool domain `{domain}`: {message}")]
    Setup {
        /// The domain.
        domain: String,
        /// What went wrong, and what to fix.
        message: String,
    },
    /// An MCP server could not be started or reached.
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(agent_tools_mcp::McpError),
}
