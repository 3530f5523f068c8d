//! # agent-tools-web
//!
//! Web tools for Agentry agents, in the provider `web`:
//!
//! - `web_search(query, max_results = 5)`: results (title, URL, snippet)
//!   from a pluggable [`SearchBackend`]: a SearXNG instance's JSON API
//!   ([`SearxngBackend`]) or the Brave Search API ([`BraveBackend`], key
//!   from configuration or `BRAVE_API_KEY`, never shown in `Debug` output
//!   or errors). Offered only when a backend is configured. Backends send
//!   through a [`SearchClient`], which follows redirects only within the
//!   origin of the request: the key never goes to another host.
//! - `fetch_url(url)`: downloads a page and returns its title and readable
//!   text (HTML converted with `html2text`; scripts and styles dropped).
//!
//! `fetch_url` is guarded against server-side request forgery: only
//! `http` and `https`; optional host allow- and denylists; addresses that
//! are loopback, private, link-local, unique-local, multicast or otherwise
//! not global (IPv4 and IPv6, IPv4-mapped and IPv4-translated included,
//! and IPv6 outside `2000::/3`) are refused unless explicitly allowed. The addresses a host resolves to are checked, both
//! before the request and in the client's DNS resolver at connect time;
//! redirects are followed by hand (up to `max_redirects`) and every hop is
//! checked again. The body is streamed and cut at `max_bytes`
//! (`truncated: true`), and the whole fetch has a time limit.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{ToolContext, ToolRegistry};
//! use agent_tools::ToolBox;
//! use agent_tools_web::{WebConfig, WebTools};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = WebTools::new(&WebConfig::default())?;
//! let registry = ToolBox::new();
//! registry.register(Arc::new(tools.tool_set()), true)?;
//!
//! // Without a search backend only fetch_url is offered.
//! assert_eq!(registry.definitions()[0].name, "fetch_url");
//!
//! // Cloud metadata endpoints and other private addresses are refused.
//! let context = ToolContext::new();
//! let arguments = json!({"url": "http://169.254.169.254/latest/meta-data/"});
//! let run = registry.execute("fetch_url", &arguments, &context).await;
//! let error = run.outcome.unwrap_err().to_string();
//! assert!(error.starts_with("refused: 169.254.169.254 is a link-local address"), "{error}");
//! # Ok(())
//! # }
//! ```

mod attachments;
mod config;
mod fetch;
mod policy;
#[cfg(test)]
mod policy_proptest;
mod redirect;
mod search;
mod text;
mod tools;

pub use attachments::AttachmentDownloads;
pub use config::{ApiKey, SearchConfig, WebConfig};
pub use fetch::Page;
pub use policy::{Refusal, UrlPolicy};
pub use search::{BraveBackend, SearchBackend, SearchClient, SearchError, SearchResult, SearxngBackend};
pub use tools::{FetchArgs, PROVIDER_NAME, SearchArgs, SearchResults, WebError, WebTools};
