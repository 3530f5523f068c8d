//! [`McpError`]: why an MCP server could not be configured, started or served.

/// Why an MCP server could not be used. Every message names the server,
/// and for start failures the command line or the URL (without secrets).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The `[mcp.servers.NAME]` table is invalid.
    #[error("MCP server `{server}`: invalid configuration: {message}")]
    Config {
        /// The server's name.
        server: String,
        /// What to fix.
        message: String,
    },
    /// The server could not be started or did not complete the MCP
    /// handshake or the tool listing.
    #[error("MCP server `{server}` ({target}) could not be started: {message}")]
    Start {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// What went wrong, with the tail of the server's stderr when there is one.
        message: String,
    },
    /// Serving tools over MCP failed.
    #[error("serving MCP failed: {0}")]
    Serve(String),
}
