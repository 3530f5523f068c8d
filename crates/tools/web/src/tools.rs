//! [`WebTools`]: the `web` provider and its tools.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Attachment, ToolContext, ToolError};
use agent_tools::{Json, ToolSet, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{ApiKey, SearchConfig, WebConfig};
use crate::fetch::{Fetcher, Limits, Page};
use crate::policy::UrlPolicy;
use crate::search::{BraveBackend, SearchBackend, SearchClient, SearchResult, SearxngBackend};

/// The provider's name, used to enable or disable it.
pub const PROVIDER_NAME: &str = "web";

/// Why the web tools could not be set up from their configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    /// A setting is invalid; the message names it.
    #[error("invalid [tools.web] configuration: {0}")]
    Config(String),
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
}

/// `message` with the query of `address` (its part after `?`) elided.
fn without_query(message: &str, address: &str) -> String {
    match address.split_once('?') {
        Some((_, query)) => {
            let query = query.split('#').next().unwrap_or_default();
            if query.is_empty() {
                message.to_owned()
            } else {
                message.replace(query, "…")
            }
        }
        None => message.to_owned(),
    }
}

/// Arguments of `web_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to search for, as you would type it into a search engine, e.g. "rust async book".
    pub query: String,
    /// How many results to return, 1 to 20 (default 5).
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = 20))]
    pub max_results: usize,
}

fn default_max_results() -> usize {
    5
}

/// What `web_search` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchResults {
    /// The query searched for.
    pub query: String,
    /// The results, best first.
    pub results: Vec<SearchResult>,
    /// How many results there are.
    pub count: usize,
}

/// Arguments of `fetch_url`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// The page's full `http` or `https` URL.
    #[schemars(description = "The full http or https URL of the page, e.g. \"https://www.rust-lang.org/learn\".")]
    pub url: String,
}

/// Web search and page fetching. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WebTools {
    fetcher: Fetcher,
    search: Option<Arc<dyn SearchBackend>>,
    limits: Limits,
}

impl WebTools {
    /// Tools configured by `config`. A Brave backend without `api_key`
    /// reads the key from the environment variable `api_key_env`
    /// (`BRAVE_API_KEY`).
    pub fn new(config: &WebConfig) -> Result<Self, WebError> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// Like [`new`](Self::new), reading environment variables through `env`.
    pub fn with_env(config: &WebConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self, WebError> {
        if config.max_bytes == 0
            || config.max_text_chars == 0
            || config.timeout_secs == 0
            || config.max_attachment_bytes == 0
        {
            return Err(WebError::Config(
                "max_bytes, max_text_chars, max_attachment_bytes and timeout_secs must be greater than 0".to_owned(),
            ));
        }
        let policy = UrlPolicy::from_config(config)?;
        let limits = Limits {
            max_bytes: config.max_bytes,
            max_attachment_bytes: config.max_attachment_bytes,
            max_text_chars: config.max_text_chars,
            max_redirects: config.max_redirects,
            timeout: Duration::from_secs(config.timeout_secs),
        };
        let client_error = |error: reqwest::Error| WebError::Client(error.to_string());
        let fetcher = Fetcher::new(policy, limits, &config.user_agent).map_err(client_error)?;
        let bad_url = |error: url::ParseError| WebError::Config(format!("search base_url: {error}"));
        let search: Option<Arc<dyn SearchBackend>> = match &config.search {
            SearchConfig::None => None,
            SearchConfig::Searxng { base_url } => {
                let client = SearchClient::new(limits.timeout, &config.user_agent)
                    .map_err(client_error)?
                    .with_max_bytes(config.max_bytes);
                Some(Arc::new(SearxngBackend::new(client, base_url).map_err(bad_url)?))
            }
            SearchConfig::Brave {
                api_key,
                api_key_env,
                base_url,
            } => {
                if !is_brave_variable(api_key_env) {
                    return Err(WebError::Config(format!(
                        "search.api_key_env must name a Brave Search variable (BRAVE_API_KEY or another \
                         starting with BRAVE_), not {api_key_env}: no other secret is sent to the search service"
                    )));
                }
                let key = api_key
                    .clone()
                    .or_else(|| env(api_key_env).filter(|key| !key.trim().is_empty()).map(ApiKey::new))
                    .ok_or_else(|| {
                        WebError::Config(format!(
                            "Brave Search needs an API key: set search.api_key or the {api_key_env} environment variable"
                        ))
                    })?;
                let client = SearchClient::new(limits.timeout, &config.user_agent)
                    .map_err(client_error)?
                    .with_max_bytes(config.max_bytes);
                let base_url = base_url.as_deref().unwrap_or(BraveBackend::DEFAULT_BASE_URL);
                Some(Arc::new(BraveBackend::new(client, base_url, key).map_err(bad_url)?))
            }
        };
        Ok(Self {
            fetcher,
            search,
            limits,
        })
    }

    /// The attachment `attachment` points to, downloaded: its URL fetched
    /// under the policy (every redirect checked, at most
    /// `max_attachment_bytes`), its type sniffed from the bytes and checked
    /// against the declared one (a declared `image/*`, from a URL without
    /// an extension, takes the sniffed image type). An attachment that
    /// holds its bytes already is returned as it is.
    ///
    /// # Errors
    ///
    /// Why it cannot be downloaded, or why the bytes are not what it says.
    pub async fn download_attachment(&self, attachment: &Attachment) -> Result<Attachment, ToolError> {
        let Some(address) = attachment.url() else {
            return Ok(attachment.clone());
        };
        // A URL's query may be a signature: errors show it elided.
        let hide_query = |error: ToolError| ToolError::failed(without_query(&error.to_string(), address));
        let download = self
            .fetcher
            .fetch_bytes(address, self.limits.max_attachment_bytes)
            .await
            .map_err(hide_query)?;
        let declared = (attachment.mime_type != "image/*").then_some(attachment.mime_type.as_str());
        let shown = without_query(download.url.as_str(), address);
        let mut fetched = Attachment::from_bytes(download.body, declared, attachment.name.clone())
            .map_err(|error| ToolError::failed(format!("{shown}: {error}")))?;
        if fetched.kind != attachment.kind {
            return Err(ToolError::failed(format!(
                "{shown} is {}, not {}",
                fetched.describe(),
                attachment.describe()
            )));
        }
        fetched.detail = attachment.detail;
        Ok(fetched)
    }

    /// Uses `backend` for `web_search`, replacing the configured one.
    pub fn with_search_backend(mut self, backend: Arc<dyn SearchBackend>) -> Self {
        self.search = Some(backend);
        self
    }

    /// The search backend, if any.
    pub fn search_backend(&self) -> Option<&Arc<dyn SearchBackend>> {
        self.search.as_ref()
    }

    /// Runs a search.
    pub async fn search(&self, query: &str, max_results: usize) -> Result<SearchResults, ToolError> {
        let Some(backend) = &self.search else {
            return Err(ToolError::failed("web search is not configured"));
        };
        let query = query.trim();
        if query.is_empty() {
            return Err(ToolError::failed("query must not be empty; say what to search for"));
        }
        let results = tokio::time::timeout(self.limits.timeout, backend.search(query, max_results.clamp(1, 20)))
            .await
            .map_err(|_| {
                ToolError::failed(format!(
                    "the search took longer than {} s; try again or rephrase",
                    self.limits.timeout.as_secs()
                ))
            })?
            .map_err(|error| ToolError::failed(error.to_string()))?;
        Ok(SearchResults {
            query: query.to_owned(),
            count: results.len(),
            results,
        })
    }

    /// Fetches a page as text.
    pub async fn fetch(&self, url: &str) -> Result<Page, ToolError> {
        self.fetcher.fetch(url).await
    }

    /// The `web` provider: `web_search` (only when a search backend is
    /// configured) and `fetch_url`.
    pub fn tool_set(&self) -> ToolSet {
        let mut set = ToolSet::new(PROVIDER_NAME, "Search the web and read web pages.");
        if self.search.is_some() {
            let tools = self.clone();
            set = set.tool(TypedTool::new(
                "web_search",
                "Searches the web and returns the top results, each with a title, URL and snippet. \
                 Use it for current events or facts you are unsure of, then read promising pages with \
                 fetch_url. Example: {\"query\": \"tokio spawn_blocking docs\", \"max_results\": 5}.",
                move |args: SearchArgs, _context: ToolContext| {
                    let tools = tools.clone();
                    async move { tools.search(&args.query, args.max_results).await.map(Json) }
                },
            ));
        }
        let tools = self.clone();
        set.tool(TypedTool::new(
            "fetch_url",
            format!(
                "Downloads a public web page and returns its title and readable text (HTML converted to \
                 text, links as numbered footnotes). Only http and https URLs on the public internet; \
                 at most {} KB are read and {} characters returned, with truncated = true when cut. \
                 Example: {{\"url\": \"https://en.wikipedia.org/wiki/Rust_(programming_language)\"}}.",
                self.limits.max_bytes / 1024,
                self.limits.max_text_chars
            ),
            move |args: FetchArgs, _context: ToolContext| {
                let tools = tools.clone();
                async move { tools.fetch(&args.url).await.map(Json) }
            },
        ))
    }
}

/// Whether `name` is a variable of Brave Search's own (`BRAVE_...`): the
/// only ones whose value may be sent to it as the key.
fn is_brave_variable(name: &str) -> bool {
    name.strip_prefix("BRAVE_").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}
