//! [`WebConfig`]: the `[tools.web]` table.

use std::fmt;

use serde::Deserialize;

/// Configuration of the `web` tools, deserialisable from a `[tools.web]`
/// table. Every field has a default, so an empty table is valid.
///
/// ```toml
/// [tools.web]
/// allowed_hosts = []                  # empty: any public host
/// denied_hosts = ["example.org"]      # the host and its subdomains; IPs and CIDR ranges too
/// allow_private_addresses = false     # loopback, private, link-local, ... refused
/// max_bytes = 1048576                 # body bytes read per page
/// max_text_chars = 20000              # characters of text returned per page
/// timeout_secs = 15
/// max_redirects = 5
/// fetch_attachment_urls = false       # true: Agentry downloads attachments given by URL, under these rules
/// max_attachment_bytes = 20971520     # the largest attachment downloaded so
///
/// [tools.web.search]
/// backend = "searxng"                 # none | searxng | brave
/// base_url = "http://localhost:8888"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Which search backend `web_search` uses; without one the tool is not
    /// offered.
    pub search: SearchConfig,
    /// When not empty, `fetch_url` may fetch only these: host names (which
    /// also match their subdomains; a leading `*.` or `.` is accepted), IP
    /// addresses, or CIDR ranges such as `10.0.0.0/8`. An IP or CIDR entry
    /// also permits that non-global address.
    pub allowed_hosts: Vec<String>,
    /// Never fetched, even when allowed: host names (and subdomains), IP
    /// addresses or CIDR ranges, checked against the URL's host and every
    /// address it resolves to.
    pub denied_hosts: Vec<String>,
    /// Whether loopback, private, link-local, unique-local, multicast and
    /// other non-global addresses may be fetched (default: no).
    pub allow_private_addresses: bool,
    /// The most body bytes read from one response; the rest is not
    /// downloaded and the result says `truncated: true`. A search answer
    /// larger than this is refused whole (it cannot be read in part).
    pub max_bytes: usize,
    /// The most characters of text returned for one page.
    pub max_text_chars: usize,
    /// How long one search or fetch (all redirects included) may take.
    pub timeout_secs: u64,
    /// How many redirects `fetch_url` follows, each checked like the first URL.
    pub max_redirects: usize,
    /// The User-Agent header sent with every request.
    pub user_agent: String,
    /// Whether attachments given by URL (an `image_url` part with an
    /// `https://` URL, say) are downloaded by Agentry, under the rules
    /// above, and sent to the model as their bytes (checked like a file's:
    /// their type is sniffed). For providers that cannot fetch a URL
    /// themselves (Ollama); off, URLs go to the provider as they are and
    /// Agentry fetches nothing.
    pub fetch_attachment_urls: bool,
    /// The largest attachment downloaded so, in bytes; the provider's own
    /// limit applies after.
    pub max_attachment_bytes: usize,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            search: SearchConfig::None,
            allowed_hosts: Vec::new(),
            denied_hosts: Vec::new(),
            allow_private_addresses: false,
            max_bytes: 1024 * 1024,
            max_text_chars: 20_000,
            timeout_secs: 15,
            max_redirects: 5,
            user_agent: concat!("agentry-web/", env!("CARGO_PKG_VERSION")).to_owned(),
            fetch_attachment_urls: false,
            max_attachment_bytes: 20 * 1024 * 1024,
        }
    }
}

/// The search backend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(tag = "backend", rename_all = "lowercase", deny_unknown_fields)]
pub enum SearchConfig {
    /// No search: `web_search` is not offered.
    #[default]
    None,
    /// A SearXNG instance with its JSON API enabled
    /// (`search.formats` includes `json` in its settings).
    Searxng {
        /// The instance's base URL, e.g. `http://localhost:8888`.
        base_url: String,
    },
    /// The Brave Search API.
    Brave {
        /// The subscription token. When absent, read from `api_key_env`.
        #[serde(default)]
        api_key: Option<ApiKey>,
        /// The environment variable holding the key.
        #[serde(default = "default_brave_key_env")]
        api_key_env: String,
        /// The API's base URL (default `https://api.search.brave.com`).
        #[serde(default)]
        base_url: Option<String>,
    },
}

fn default_brave_key_env() -> String {
    "BRAVE_API_KEY".to_owned()
}

/// A secret that never shows in `Debug` output or error messages, and is
/// not serialisable, so it cannot be written out with the configuration.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, to put in a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn empty_table_is_the_default() {
        let config: WebConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config, WebConfig::default());
        assert!(!config.allow_private_addresses);
    }

    #[test]
    fn backends_deserialize() {
        let config: WebConfig =
            serde_json::from_str(r#"{"search": {"backend": "searxng", "base_url": "http://localhost:8888"}}"#).unwrap();
        assert_eq!(
            config.search,
            SearchConfig::Searxng {
                base_url: "http://localhost:8888".into()
            }
        );
        let config: WebConfig =
            serde_json::from_str(r#"{"search": {"backend": "brave", "api_key": "secret-key"}}"#).unwrap();
        let SearchConfig::Brave {
            api_key, api_key_env, ..
        } = &config.search
        else {
            panic!("not brave");
        };
        assert_eq!(api_key.as_ref().unwrap().expose(), "secret-key");
        assert_eq!(api_key_env, "BRAVE_API_KEY");
        assert!(!format!("{config:?}").contains("secret-key"));
    }
}
