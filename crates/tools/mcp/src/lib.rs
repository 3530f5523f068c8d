//! # agent-tools-mcp
//!
//! [Model Context Protocol](https://modelcontextprotocol.io) support for
//! Agentry, on the official Rust SDK ([`rmcp`]):
//!
//! - **Client**: [`McpToolProvider`] connects to one MCP server, a child
//!   process speaking MCP on stdio (`command`) or a streamable-HTTP
//!   endpoint (`url`), lists its tools and offers them as a tool domain
//!   named after the server. Calls go through the registry like any other
//!   tool's: arguments validated against the server's schemas, roles
//!   checked, spans recorded. Configured by [`McpServerConfig`] (the
//!   `[mcp.servers.NAME]` table of `agentry.toml`).
//! - **Server**: [`McpServer`] serves a registry's enabled tools to any MCP
//!   client (`agentry mcp` serves them over stdio).
//!
//! Results: text content as it is, other content described in brackets, an
//! `isError` result as a [`ToolError`](agent_core::ToolError) the model
//! reads; transport failures name the server and its command or URL.
//! Header and environment values never appear in `Debug` output or errors.
//!
//! A connection's tasks (its service loop, a child's stderr reader) run on
//! the Tokio runtime that connected it; keep that runtime alive as long as
//! the provider is used.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use agent_core::{ToolContext, ToolRegistry};
//! use agent_tools::ToolBox;
//! use agent_tools_mcp::{McpServerConfig, McpToolProvider};
//! use serde_json::json;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The reference server from npm, started as a child process.
//! let config = McpServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
//! let everything = McpToolProvider::connect("everything", &config, |name| std::env::var(name).ok()).await?;
//!
//! let registry = ToolBox::new();
//! registry.register(Arc::new(everything), true)?;
//! let run = registry.execute("get-sum", &json!({"a": 2, "b": 3}), &ToolContext::new()).await;
//! println!("{}", run.outcome?.to_content()); // The sum of 2 and 3 is 5.
//!
//! // And the other way round: serve the registry's tools over stdio.
//! agent_tools_mcp::McpServer::new(Arc::new(registry)).serve_stdio().await?;
//! # Ok(())
//! # }
//! ```

mod client;
mod config;
mod content;
mod error;
mod server;
mod stderr;

pub use client::McpToolProvider;
pub use config::{DEFAULT_STARTUP_TIMEOUT_SECS, INHERITED_ENV, McpServerConfig, Transport};
pub use error::McpError;
pub use server::McpServer;

/// The MCP SDK this crate is built on, for custom transports and tests.
pub use rmcp;
