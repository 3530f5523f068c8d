//! `agentry mcp`: the enabled tools served as an MCP server over stdio.
//! (The other direction, each `[mcp.servers.NAME]` table a tool domain
//! NAME, is the facade's factory: see [`crate::tools`] and
//! [`agentry::config::McpSettings`].)

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::AppError;
use agentry::config::Env;

/// `agentry mcp`.
#[derive(Debug, Clone, Default, Args)]
pub struct McpArgs {
    /// Configuration file (default: $AGENTRY_CONFIG, else ./agentry.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Tool domains to serve, comma-separated (replaces [tools] enabled).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
}

/// The `[mcp.servers.NAME]` table of server `name` (the defaults when there
/// is none), its `cwd` resolved against the file it came from.
#[cfg(feature = "mcp")]
pub fn server_config(
    settings: &agentry::config::Settings,
    name: &str,
) -> Result<agentry::mcp::McpServerConfig, crate::error::ConfigError> {
    settings.mcp_server(name)
}

/// Serves the enabled tools over stdio until the client disconnects.
/// Nothing but MCP messages goes to stdout.
#[cfg(feature = "mcp")]
pub(crate) async fn serve(args: &McpArgs, env: &Env, cwd: &Path) -> Result<u8, AppError> {
    use std::sync::Arc;

    use agent_core::ToolRegistry;
    use agentry::mcp::McpServer;

    use agentry::config::{Overrides, Settings};

    let overrides = Overrides {
        config: args.config.clone(),
        tools: args.tools.as_deref().map(crate::args::tool_list),
        ..Overrides::default()
    };
    let settings = Settings::load(&overrides, env, cwd)?;
    let tools = crate::tools::ToolBox::from_settings(&settings, env).await?;
    tracing::info!(domains = ?tools.domains(), "serving the enabled tools over MCP (stdio)");
    let registry: Arc<dyn ToolRegistry> = tools.registry();
    McpServer::new(registry)
        .with_implementation("agentry", env!("CARGO_PKG_VERSION"))
        .serve_stdio()
        .await?;
    Ok(crate::error::EXIT_OK)
}

/// `agentry mcp` in a build without the `mcp` feature.
#[cfg(not(feature = "mcp"))]
#[expect(clippy::unused_async, reason = "the same signature as the build with MCP")]
pub(crate) async fn serve(_: &McpArgs, _: &Env, _: &Path) -> Result<u8, AppError> {
    Err(crate::error::ConfigError::not_compiled("`agentry mcp`", "mcp").into())
}
