//! Web search: the [`SearchBackend`] port and two adapters, SearXNG's JSON
//! API and the Brave Search API.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::config::ApiKey;
use crate::redirect::{RedirectRefused, refusal_in, same_origin_only};
use crate::text::snippet_text;

/// One search hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The page title.
    pub title: String,
    /// The page address.
    pub url: String,
    /// A short extract, as plain text.
    pub snippet: String,
}

/// Why a search failed. Messages never contain API keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The service could not be reached.
    #[error("the search service could not be reached: {0}")]
    Transport(String),
    /// The service answered with an error status.
    #[error("the search service answered HTTP {status}: {message}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// What it means.
        message: String,
    },
    /// The answer was not the expected JSON.
    #[error("the search service's answer could not be read: {0}")]
    Decode(String),
    /// The service redirected to another origin (host, port or scheme); the
    /// redirect was not followed, so the API key and the query stayed with
    /// the configured service.
    #[error(
        "the search service at {from} redirected to {to}, another origin; not followed, so the API key \
         stays with the configured service (set base_url to {to} if that service is intended)"
    )]
    Redirect {
        /// The configured service's origin.
        from: String,
        /// The origin it redirected to (no path or query).
        to: String,
    },
    /// The answer is larger than the client's `max_bytes`.
    #[error("the search service's answer is larger than the {limit}-byte limit (max_bytes); not read further")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The service redirected too many times within its own origin.
    #[error("the search service redirected too many times: {0}")]
    TooManyRedirects(String),
}

/// A web search service.
#[async_trait]
pub trait SearchBackend: Send + Sync + fmt::Debug {
    /// A short name for results and logs (`searxng`, `brave`).
    fn name(&self) -> &str;

    /// Up to `max_results` results for `query`, best first.
    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchResult>, SearchError>;
}

/// The HTTP client the search backends use: a time limit, a User-Agent,
/// and redirects followed only within the origin of the request (at most
/// 3). A redirect to another host, port or scheme fails with
/// [`SearchError::Redirect`], so an API key sent in a header (Brave's
/// `X-Subscription-Token`) never reaches another server. The backends take
/// only this client, so they cannot be given one that follows redirects
/// elsewhere.
#[derive(Debug, Clone)]
pub struct SearchClient {
    client: reqwest::Client,
    max_bytes: usize,
}

impl SearchClient {
    /// The most bytes of one search answer read by default: 1 MiB, far
    /// above a page of results.
    pub const DEFAULT_MAX_BYTES: usize = 1024 * 1024;

    /// A client whose requests take at most `timeout`, sending
    /// `user_agent`, reading answers of up to [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES).
    pub fn new(timeout: Duration, user_agent: &str) -> Result<Self, reqwest::Error> {
        reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(user_agent)
            .redirect(same_origin_only())
            .build()
            .map(|client| Self {
                client,
                max_bytes: Self::DEFAULT_MAX_BYTES,
            })
    }

    /// Reads answers of up to `max_bytes`; a larger one is
    /// [`SearchError::TooLarge`], and is not read further.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// A SearXNG instance's JSON API: `GET {base}/search?q=...&format=json`.
/// The instance must allow the `json` format in its settings.
#[derive(Debug, Clone)]
pub struct SearxngBackend {
    client: SearchClient,
    endpoint: Url,
}

impl SearxngBackend {
    /// A backend for the instance at `base_url`, e.g. `http://localhost:8888`.
    pub fn new(client: SearchClient, base_url: &str) -> Result<Self, url::ParseError> {
        Ok(Self {
            client,
            endpoint: endpoint(base_url, "search")?,
        })
    }
}

#[derive(Deserialize)]
struct SearxngResponse {
    #[serde(default)]
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: Option<String>,
}

#[async_trait]
impl SearchBackend for SearxngBackend {
    fn name(&self) -> &'static str {
        "searxng"
    }

    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchResult>, SearchError> {
        let request = self
            .client
            .client
            .get(self.endpoint.clone())
            .query(&[("q", query), ("format", "json")])
            .header(reqwest::header::ACCEPT, "application/json");
        let response: SearxngResponse = send(request, self.client.max_bytes, "SearXNG").await?;
        Ok(response
            .results
            .into_iter()
            .take(max_results)
            .map(|result| SearchResult {
                title: snippet_text(&result.title),
                url: result.url,
                snippet: snippet_text(result.content.as_deref().unwrap_or_default()),
            })
            .collect())
    }
}

/// The Brave Search API: `GET {base}/res/v1/web/search?q=...&count=...`
/// with the key in `X-Subscription-Token`. The key never appears in
/// `Debug` output or errors.
#[derive(Clone)]
pub struct BraveBackend {
    client: SearchClient,
    endpoint: Url,
    api_key: ApiKey,
}

impl BraveBackend {
    /// The public API's base URL.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.search.brave.com";
    /// The most results Brave returns per request.
    pub const MAX_COUNT: usize = 20;

    /// A backend with `api_key`, at `base_url` (normally
    /// [`DEFAULT_BASE_URL`](Self::DEFAULT_BASE_URL)).
    pub fn new(client: SearchClient, base_url: &str, api_key: ApiKey) -> Result<Self, url::ParseError> {
        Ok(Self {
            client,
            endpoint: endpoint(base_url, "res/v1/web/search")?,
            api_key,
        })
    }
}

impl fmt::Debug for BraveBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BraveBackend")
            .field("endpoint", &self.endpoint.as_str())
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct BraveResponse {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    description: Option<String>,
}

#[async_trait]
impl SearchBackend for BraveBackend {
    fn name(&self) -> &'static str {
        "brave"
    }

    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchResult>, SearchError> {
        let count = max_results.clamp(1, Self::MAX_COUNT).to_string();
        let request = self
            .client
            .client
            .get(self.endpoint.clone())
            .query(&[("q", query), ("count", count.as_str())])
            .header(reqwest::header::ACCEPT, "application/json")
            .header("X-Subscription-Token", self.api_key.expose());
        let response: BraveResponse = send(request, self.client.max_bytes, "Brave Search").await?;
        Ok(response
            .web
            .map(|web| web.results)
            .unwrap_or_default()
            .into_iter()
            .take(max_results)
            .map(|result| SearchResult {
                title: snippet_text(&result.title),
                url: result.url,
                snippet: snippet_text(result.description.as_deref().unwrap_or_default()),
            })
            .collect())
    }
}

/// `base` joined with `path`, keeping any path prefix of `base`.
fn endpoint(base: &str, path: &str) -> Result<Url, url::ParseError> {
    let mut base = Url::parse(base.trim())?;
    if !base.path().ends_with('/') {
        let with_slash = format!("{}/", base.path());
        base.set_path(&with_slash);
    }
    base.join(path)
}

/// Sends a request and decodes its JSON answer, with errors that name the
/// service but never the request headers.
async fn send<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    max_bytes: usize,
    service: &str,
) -> Result<T, SearchError> {
    let response = request.send().await.map_err(|error| match refusal_in(&error) {
        Some(RedirectRefused::CrossOrigin { from, to }) => SearchError::Redirect {
            from: from.clone(),
            to: to.clone(),
        },
        Some(too_many @ RedirectRefused::TooMany) => SearchError::TooManyRedirects(format!("{service}: {too_many}")),
        None => SearchError::Transport(format!("{service}: {}", error.without_url())),
    })?;
    let status = response.status();
    if !status.is_success() {
        let message = match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                format!("{service} rejected the API key or the request is not permitted")
            }
            StatusCode::TOO_MANY_REQUESTS => format!("{service} rate limit reached; try again later"),
            _ => format!("{service} could not answer the search"),
        };
        return Err(SearchError::Status {
            status: status.as_u16(),
            message,
        });
    }
    let body = read_capped(response, max_bytes, service).await?;
    serde_json::from_slice(&body).map_err(|error| SearchError::Decode(format!("{service}: {error}")))
}

/// The whole body of `response`, refused as soon as it is known to pass
/// `limit` bytes: from `Content-Length`, or while reading.
async fn read_capped(mut response: reqwest::Response, limit: usize, service: &str) -> Result<Vec<u8>, SearchError> {
    if response.content_length().is_some_and(|length| length > limit as u64) {
        return Err(SearchError::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| SearchError::Transport(format!("{service}: {}", error.without_url())))?
    {
        if chunk.len() > limit - body.len() {
            return Err(SearchError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_base_paths() {
        assert_eq!(
            endpoint("http://localhost:8888", "search").unwrap().as_str(),
            "http://localhost:8888/search"
        );
        assert_eq!(
            endpoint("https://host/searx/", "search").unwrap().as_str(),
            "https://host/searx/search"
        );
        assert_eq!(
            endpoint("https://host/searx", "search").unwrap().as_str(),
            "https://host/searx/search"
        );
    }

    #[test]
    fn brave_debug_hides_the_key() {
        let backend = BraveBackend::new(
            SearchClient::new(Duration::from_secs(5), "test").unwrap(),
            BraveBackend::DEFAULT_BASE_URL,
            ApiKey::new("sk-very-secret"),
        )
        .unwrap();
        let debug = format!("{backend:?}");
        assert!(!debug.contains("sk-very-secret"), "{debug}");
        assert!(debug.contains("redacted"));
    }
}
