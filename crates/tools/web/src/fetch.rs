//! `fetch_url`: downloads one page under the [`UrlPolicy`], following
//! redirects by hand so every hop is checked, reading at most `max_bytes`,
//! and turning HTML into text.
//!
//! Addresses are checked twice: before each request (for a clear error)
//! and by the client's DNS resolver at connect time, which refuses to hand
//! a forbidden address to the connector. So a host whose DNS answer
//! changes between the two lookups (DNS rebinding) still cannot reach a
//! private address. The client uses no proxy, which would resolve names
//! out of our sight.

use std::error::Error as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use agent_core::ToolError;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde::Serialize;
use url::{Host, Url};

use crate::policy::{Refusal, UrlPolicy};
use crate::text::{html_title, html_to_text, truncate_chars};

/// What `fetch_url` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page {
    /// The URL asked for.
    pub url: String,
    /// The URL the content came from, after redirects.
    pub final_url: String,
    /// The HTTP status.
    pub status: u16,
    /// The media type, e.g. `text/html`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The HTML `<title>`, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The readable text.
    pub text: String,
    /// Whether the body or the text was cut at the configured limits.
    pub truncated: bool,
    /// How many body bytes were read.
    pub bytes_read: usize,
}

/// What [`Fetcher::fetch_bytes`] downloaded.
#[derive(Debug)]
pub(crate) struct Download {
    /// Where it came from, after redirects.
    pub(crate) url: Url,
    /// The bytes.
    pub(crate) body: Vec<u8>,
}

/// Limits of one fetch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_bytes: usize,
    pub(crate) max_attachment_bytes: usize,
    pub(crate) max_text_chars: usize,
    pub(crate) max_redirects: usize,
    pub(crate) timeout: Duration,
}

/// Downloads pages under a policy.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    policy: Arc<UrlPolicy>,
    limits: Limits,
}

impl Fetcher {
    pub(crate) fn new(policy: UrlPolicy, limits: Limits, user_agent: &str) -> Result<Self, reqwest::Error> {
        let policy = Arc::new(policy);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(GuardedResolver {
                policy: Arc::clone(&policy),
            })
            .timeout(limits.timeout)
            .user_agent(user_agent)
            .build()?;
        Ok(Self { client, policy, limits })
    }

    /// Fetches `address`, within the overall time limit.
    pub(crate) async fn fetch(&self, address: &str) -> Result<Page, ToolError> {
        self.within_time(address, self.fetch_inner(address)).await
    }

    /// The bytes at `address`, at most `max_bytes` of them (more is an
    /// error: a file cut short is no file);
    /// under the same policy, redirects and time limit as [`fetch`](Self::fetch).
    pub(crate) async fn fetch_bytes(&self, address: &str, max_bytes: usize) -> Result<Download, ToolError> {
        self.within_time(address, async {
            let (url, response) = self.open(address).await?;
            let (body, truncated) = read_body(&url, response, max_bytes).await?;
            if truncated {
                return Err(ToolError::failed(format!(
                    "{url} is larger than the {max_bytes} bytes allowed"
                )));
            }
            Ok(Download { url, body })
        })
        .await
    }

    async fn within_time<T>(
        &self,
        address: &str,
        work: impl Future<Output = Result<T, ToolError>>,
    ) -> Result<T, ToolError> {
        let seconds = self.limits.timeout.as_secs_f64();
        tokio::time::timeout(self.limits.timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::failed(format!(
                    "fetching {address} took longer than the {seconds} s time limit"
                )))
            })
    }

    /// The successful response to `address`, every redirect followed by
    /// hand and checked, and the URL it came from.
    async fn open(&self, address: &str) -> Result<(Url, reqwest::Response), ToolError> {
        let mut url = parse_url(address)?;
        let mut hops = 0;
        let response = loop {
            self.check(&url).await?;
            let response = self
                .client
                .get(url.clone())
                .send()
                .await
                .map_err(|error| transport_error(&url, &error))?;
            if let Some(remote) = response.remote_addr() {
                self.policy
                    .check_resolved(url.host_str().unwrap_or_default(), &[remote.ip()])
                    .map_err(refusal)?;
            }
            if !response.status().is_redirection() {
                break response;
            }
            let Some(location) = response.headers().get(LOCATION).and_then(|value| value.to_str().ok()) else {
                break response;
            };
            if hops == self.limits.max_redirects {
                return Err(ToolError::failed(format!(
                    "{address} redirected more than {} times; not following further",
                    self.limits.max_redirects
                )));
            }
            let next = url.join(location).map_err(|error| {
                ToolError::failed(format!("{url} redirected to an invalid address {location:?}: {error}"))
            })?;
            tracing::debug!(from = %url, to = %next, "following redirect");
            url = next;
            hops += 1;
        };
        let status = response.status();
        if !status.is_success() {
            return Err(ToolError::failed(format!(
                "the server answered HTTP {status} for {url}"
            )));
        }
        Ok((url, response))
    }

    async fn fetch_inner(&self, address: &str) -> Result<Page, ToolError> {
        let (url, response) = self.open(address).await?;
        let status = response.status();
        let content_type = content_type_of(&response);
        let kind = content_type.as_deref().map_or(Kind::Sniff, classify);
        if kind == Kind::Binary {
            return Err(ToolError::failed(format!(
                "{url} is {}, which cannot be shown as text; fetch_url reads HTML and text pages",
                content_type.as_deref().unwrap_or("binary data")
            )));
        }
        let (body, truncated) = read_body(&url, response, self.limits.max_bytes).await?;

        if kind == Kind::Sniff && body.contains(&0) {
            return Err(ToolError::failed(format!(
                "{url} has no content type and looks like binary data, which cannot be shown as text"
            )));
        }
        let html = match kind {
            Kind::Html => true,
            Kind::Text => false,
            Kind::Sniff | Kind::Binary => looks_like_html(&body),
        };
        let (title, mut text) = if html {
            (html_title(&body), html_to_text(&body))
        } else {
            (None, String::from_utf8_lossy(&body).into_owned())
        };
        let truncated = truncate_chars(&mut text, self.limits.max_text_chars) || truncated;
        Ok(Page {
            url: address.trim().to_owned(),
            final_url: url.to_string(),
            status: status.as_u16(),
            content_type,
            title,
            text,
            truncated,
            bytes_read: body.len(),
        })
    }

    /// The policy's checks for one hop: the URL, then what its host
    /// resolves to.
    async fn check(&self, url: &Url) -> Result<(), ToolError> {
        self.policy.check_url(url).map_err(refusal)?;
        if let Some(Host::Domain(domain)) = url.host() {
            let port = url.port_or_known_default().unwrap_or(80);
            let addresses: Vec<IpAddr> = tokio::net::lookup_host((domain, port))
                .await
                .map_err(|error| ToolError::failed(format!("the host {domain} could not be resolved: {error}")))?
                .map(|address| address.ip())
                .collect();
            self.policy
                .check_resolved(&domain.to_ascii_lowercase(), &addresses)
                .map_err(refusal)?;
        }
        Ok(())
    }
}

/// How a response body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
    /// No content type: look at the bytes.
    Sniff,
}

fn classify(media_type: &str) -> Kind {
    match media_type {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        text if text.starts_with("text/") => Kind::Text,
        "application/json" | "application/xml" | "application/javascript" | "application/ld+json" => Kind::Text,
        other if other.ends_with("+json") || other.ends_with("+xml") => Kind::Text,
        _ => Kind::Binary,
    }
}

/// A response's media type, lowercase, without parameters.
fn content_type_of(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .filter(|value| !value.is_empty())
}

/// At most `max_bytes` of the body (the rest is not downloaded), and
/// whether there was more.
async fn read_body(url: &Url, mut response: reqwest::Response, max_bytes: usize) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| transport_error(url, &error))? {
        let room = max_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

fn looks_like_html(body: &[u8]) -> bool {
    let start = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    start.contains("<html") || start.contains("<!doctype html") || start.contains("<body")
}

fn parse_url(address: &str) -> Result<Url, ToolError> {
    Url::parse(address.trim()).map_err(|error| {
        let hint = if matches!(error, url::ParseError::RelativeUrlWithoutBase) {
            "; give a full URL with its scheme, e.g. https://example.com/page"
        } else {
            ""
        };
        ToolError::failed(format!("{address:?} is not a valid URL: {error}{hint}"))
    })
}

fn refusal(refusal: Refusal) -> ToolError {
    ToolError::failed(refusal.0)
}

/// A transport error: the resolver's refusal when that was the cause,
/// else the error and its causes.
fn transport_error(url: &Url, error: &reqwest::Error) -> ToolError {
    let mut source = error.source();
    let mut causes = Vec::new();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<Refusal>() {
            return ToolError::failed(refused.0.clone());
        }
        causes.push(cause.to_string());
        source = cause.source();
    }
    let what = if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_connect() {
        "could not connect".to_owned()
    } else {
        "failed".to_owned()
    };
    let detail = causes.last().map(|cause| format!(": {cause}")).unwrap_or_default();
    ToolError::failed(format!("fetching {url} {what}{detail}"))
}

/// The client's DNS resolver: resolves with the system resolver and
/// refuses the whole answer if any address breaks the policy.
struct GuardedResolver {
    policy: Arc<UrlPolicy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let ips: Vec<IpAddr> = addresses.iter().map(SocketAddr::ip).collect();
            policy.check_resolved(&host, &ips)?;
            let addresses: Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn fetcher(policy: UrlPolicy) -> Fetcher {
        let limits = Limits {
            max_bytes: 1024,
            max_attachment_bytes: 1024,
            max_text_chars: 1024,
            max_redirects: 0,
            timeout: Duration::from_secs(5),
        };
        Fetcher::new(policy, limits, "test").unwrap()
    }

    #[tokio::test]
    async fn the_resolver_refuses_forbidden_addresses_at_connect_time() {
        let resolver = GuardedResolver {
            policy: Arc::new(UrlPolicy::default()),
        };
        let error = resolver
            .resolve(Name::from_str("localhost").unwrap())
            .await
            .err()
            .unwrap();
        assert!(error.to_string().contains("loopback"), "{error}");

        // Straight through the client, skipping the pre-request check: the
        // connection is still refused, by the resolver, with its message.
        let fetcher = fetcher(UrlPolicy::default());
        let url = Url::parse("http://localhost:9/").unwrap();
        let error = fetcher.client.get(url.clone()).send().await.unwrap_err();
        let message = transport_error(&url, &error).to_string();
        assert!(message.starts_with("refused: localhost resolves to"), "{message}");
    }

    #[test]
    fn media_types_are_classified() {
        assert_eq!(classify("text/html"), Kind::Html);
        assert_eq!(classify("application/xhtml+xml"), Kind::Html);
        assert_eq!(classify("text/markdown"), Kind::Text);
        assert_eq!(classify("application/feed+json"), Kind::Text);
        assert_eq!(classify("application/pdf"), Kind::Binary);
        assert!(looks_like_html(b"<!DOCTYPE html><html>"));
        assert!(!looks_like_html(b"just text"));
    }
}
