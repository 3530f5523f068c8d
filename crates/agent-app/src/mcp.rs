//! Model Context Protocol in the app: each `[mcp.servers.NAME]` table is a
//! tool domain NAME (enabled like any other, through `[tools] enabled` or
//! `--tools`), and `agentry mcp` serves the enabled tools over stdio.
//!
//! ```toml
//! [tools]
//! enabled = ["math", "everything"]
//!
//! [mcp.servers.everything]       # a stdio server: a command and its arguments
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { LOG_LEVEL = "warn" }   # besides PATH, HOME, ... (see `inherit_env`)
//! cwd = "servers"                # relative to this file
//!
//! [mcp.servers.remote]           # a streamable-HTTP server
//! url = "https://mcp.example.com/mcp"
//! headers = { Authorization = "Bearer ..." }   # never logged
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::ToolProvider;
#[cfg(feature = "mcp")]
use agent_tools_mcp::{McpServer, McpServerConfig, McpToolProvider};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::config::{RawTable, Settings};
use crate::env::Env;
use crate::error::{AppError, ConfigError};
use crate::tools::tool_domain;

/// The `[mcp]` table. `Debug` shows server names and their keys only:
/// `env` and `headers` may hold secrets.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// `[mcp.servers.NAME]`: the MCP servers, each a tool domain NAME.
    pub servers: BTreeMap<String, RawTable>,
}

impl fmt::Debug for McpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.servers.iter()).finish()
    }
}

impl McpSettings {
    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Whether `name` is a configured server.
    pub fn has(&self, name: &str) -> bool {
        self.servers.contains_key(name)
    }
}

fn key(name: &str) -> String {
    format!("mcp.servers.{name}")
}

/// Checks every `[mcp.servers.NAME]` table (without starting anything):
/// the name is usable as a domain and is not a built-in one, and the table
/// is a valid [`McpServerConfig`].
pub(crate) fn validate(settings: &Settings) -> Result<(), ConfigError> {
    for name in settings.config.mcp.servers.keys() {
        let key = key(name);
        let invalid = |message: String| ConfigError::InvalidValue {
            origin: settings.origin(&key),
            key: key.clone(),
            message,
        };
        if tool_domain(name).is_some() {
            return Err(invalid(format!(
                "`{name}` is a built-in tool domain; give the MCP server another name, e.g. [mcp.servers.{name}-mcp]"
            )));
        }
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(invalid(
                "an MCP server name may only have letters, digits, `-` and `_` (it is a tool domain name)".to_owned(),
            ));
        }
        // Without the `mcp` feature the table is checked when the domain is
        // enabled: building it says which feature to build with.
        #[cfg(feature = "mcp")]
        server_config(settings, name)?
            .transport(name)
            .map_err(|error| invalid(error.to_string()))?;
    }
    Ok(())
}

/// The `[mcp.servers.NAME]` table of server `name` (the defaults when there
/// is none), its `cwd` resolved against the file it came from.
#[cfg(feature = "mcp")]
pub fn server_config(settings: &Settings, name: &str) -> Result<McpServerConfig, ConfigError> {
    let key = key(name);
    let mut config: McpServerConfig = settings.table(&key)?.unwrap_or_default();
    if let Some(cwd) = &config.cwd {
        config.cwd = Some(settings.resolve_path(&format!("{key}.cwd"), cwd));
    }
    Ok(config)
}

/// Starts (or connects to) the configured server `name` and lists its
/// tools: the domain `name`. Its connection runs on the current runtime.
#[cfg_attr(
    not(feature = "mcp"),
    expect(clippy::unused_async, reason = "the same signature as the build with MCP")
)]
pub(crate) async fn build_domain(
    name: &str,
    settings: &Settings,
    env: &Env,
) -> Result<Arc<dyn ToolProvider>, AppError> {
    #[cfg(feature = "mcp")]
    {
        let config = server_config(settings, name)?;
        let provider = McpToolProvider::connect(name, &config, |var| env.get(var)).await?;
        Ok(Arc::new(provider))
    }
    #[cfg(not(feature = "mcp"))]
    {
        let _ = (settings, env);
        Err(ConfigError::not_compiled(format!("the MCP server `[{}]`", key(name)), "mcp").into())
    }
}

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

/// Serves the enabled tools over stdio until the client disconnects.
/// Nothing but MCP messages goes to stdout.
#[cfg(feature = "mcp")]
pub(crate) async fn serve(args: &McpArgs, env: &Env, cwd: &Path) -> Result<u8, AppError> {
    use agent_core::ToolRegistry;

    use crate::config::Overrides;
    use crate::tools::ToolBox;

    let overrides = Overrides {
        config: args.config.clone(),
        tools: args.tools.as_ref().map(|tools| {
            tools
                .iter()
                .map(|tool| tool.trim().to_owned())
                .filter(|tool| !tool.is_empty())
                .collect()
        }),
        ..Overrides::default()
    };
    let settings = Settings::load(&overrides, env, cwd)?;
    let tools = ToolBox::from_settings(&settings, env).await?;
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
    Err(ConfigError::not_compiled("`agentry mcp`", "mcp").into())
}
