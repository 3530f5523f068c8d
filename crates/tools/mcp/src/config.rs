//! [`McpServerConfig`]: one `[mcp.servers.NAME]` table.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// Environment variables a stdio server inherits from the agent's
/// environment when they are set (the rest are not passed on, so API keys
/// of the agent never reach a third-party server); add others with
/// `inherit_env`.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR",
];

/// How long connecting (start, `initialize`, `tools/list`) may take by default.
pub const DEFAULT_STARTUP_TIMEOUT_SECS: f64 = 30.0;

/// One MCP server: either a `command` started as a child process that
/// speaks MCP on its stdin and stdout, or the `url` of a streamable-HTTP
/// endpoint.
///
/// ```toml
/// [mcp.servers.everything]
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-everything"]
/// env = { LOG_LEVEL = "warn" }
///
/// [mcp.servers.remote]
/// url = "https://mcp.example.com/mcp"
/// headers = { Authorization = "Bearer ..." }
/// ```
///
/// `Debug` shows the names of `env` and `headers` entries, never their
/// values: they often hold secrets.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program of a stdio server (looked up on `PATH` unless it is a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables set for it, over the inherited ones.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Names of further variables of the agent's environment to pass on
    /// (besides [`INHERITED_ENV`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inherit_env: Vec<String>,
    /// Its working directory (default: the agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable-HTTP server (`http` or `https`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request to `url` (e.g. `Authorization`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// One line on what the server's tools are for (default: from the server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How long starting, initialising and listing the tools may take, in seconds.
    pub startup_timeout_secs: f64,
    /// How long one tool call may take, in seconds (no limit when unset;
    /// `[tools] timeout_secs` still applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_timeout_secs: Option<f64>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: Vec::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            description: None,
            startup_timeout_secs: DEFAULT_STARTUP_TIMEOUT_SECS,
            call_timeout_secs: None,
        }
    }
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("inherit_env", &self.inherit_env)
            .field("cwd", &self.cwd)
            .field("url", &self.url.as_deref().map(display_url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("description", &self.description)
            .field("startup_timeout_secs", &self.startup_timeout_secs)
            .field("call_timeout_secs", &self.call_timeout_secs)
            .finish()
    }
}

/// How to reach a server, checked: what [`McpServerConfig::transport`] returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Transport<'a> {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: &'a str,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The URL.
        url: &'a str,
    },
}

impl fmt::Debug for Transport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { command } => f.debug_struct("Stdio").field("command", command).finish(),
            Self::Http { url } => f.debug_struct("Http").field("url", &display_url(url)).finish(),
        }
    }
}

impl McpServerConfig {
    /// A stdio server running `command` with `args`.
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// A streamable-HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// Checks the table and says how to reach the server. `server` names
    /// it in the error.
    pub fn transport(&self, server: &str) -> Result<Transport<'_>, McpError> {
        let invalid = |message: String| McpError::Config {
            server: server.to_owned(),
            message,
        };
        let transport = match (self.command.as_deref(), self.url.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "set either `command` (a stdio server) or `url` (streamable HTTP), not both".into(),
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "set `command` (a stdio server, e.g. command = \"npx\") or `url` (streamable HTTP, e.g. url = \"http://localhost:8000/mcp\")".into(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(invalid("`command` is empty".into()));
                }
                if !self.headers.is_empty() {
                    return Err(invalid("`headers` apply to `url` servers only".into()));
                }
                Transport::Stdio { command }
            }
            (None, Some(url)) => {
                let parsed = url::Url::parse(url.trim())
                    .map_err(|error| invalid(format!("`url` is not a valid URL: {error}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || !parsed.has_host() {
                    return Err(invalid("`url` must be an http:// or https:// URL".into()));
                }
                if !self.args.is_empty() || !self.env.is_empty() || !self.inherit_env.is_empty() || self.cwd.is_some() {
                    return Err(invalid(
                        "`args`, `env`, `inherit_env` and `cwd` apply to `command` servers only".into(),
                    ));
                }
                for (name, value) in &self.headers {
                    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        return Err(invalid(format!("\"{name}\" in `headers` is not a valid header name")));
                    }
                    // The value may be a secret: never quoted.
                    if http::HeaderValue::from_str(value).is_err() {
                        return Err(invalid(format!(
                            "the value of header \"{name}\" has characters a header cannot carry"
                        )));
                    }
                }
                Transport::Http { url }
            }
        };
        self.startup_timeout()
            .ok_or_else(|| invalid("`startup_timeout_secs` must be a positive number of seconds".into()))?;
        if self.call_timeout_secs.is_some_and(|secs| seconds(secs).is_none()) {
            return Err(invalid(
                "`call_timeout_secs` must be a positive number of seconds".into(),
            ));
        }
        Ok(transport)
    }

    /// `startup_timeout_secs` as a duration; `None` when it is not positive.
    pub fn startup_timeout(&self) -> Option<Duration> {
        seconds(self.startup_timeout_secs)
    }

    /// `call_timeout_secs` as a duration.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.call_timeout_secs.and_then(seconds)
    }

    /// What errors name the server by: the command line, or the URL
    /// without its query and user info (which may hold a token).
    pub fn target(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut line = format!("command `{command}");
                for arg in &self.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line.push('`');
                line
            }
            (None, Some(url)) => format!("url {}", display_url(url)),
            (None, None) => "no command or url".to_owned(),
        }
    }

    /// The environment of a stdio server: the variables of [`INHERITED_ENV`]
    /// and `inherit_env` that `lookup` knows, then `env`.
    pub fn child_env(&self, lookup: impl Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
        let mut vars = BTreeMap::new();
        let names = INHERITED_ENV
            .iter()
            .copied()
            .chain(self.inherit_env.iter().map(String::as_str));
        for name in names {
            if let Some(value) = lookup(name) {
                vars.insert(name.to_owned(), value);
            }
        }
        vars.extend(self.env.iter().map(|(name, value)| (name.clone(), value.clone())));
        vars
    }
}

fn seconds(secs: f64) -> Option<Duration> {
    (secs > 0.0).then(|| Duration::try_from_secs_f64(secs).ok()).flatten()
}

/// `url` without user info, query and fragment.
pub(crate) fn display_url(url: &str) -> String {
    match url::Url::parse(url.trim()) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "(invalid url)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(config: &McpServerConfig) -> String {
        config.transport("srv").err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn exactly_one_of_command_and_url() {
        assert_eq!(
            McpServerConfig::stdio("npx", ["-y", "x"]).transport("srv").ok(),
            Some(Transport::Stdio { command: "npx" })
        );
        assert_eq!(
            McpServerConfig::http("http://localhost:1/mcp").transport("srv").ok(),
            Some(Transport::Http {
                url: "http://localhost:1/mcp"
            })
        );
        let both = McpServerConfig {
            url: Some("http://x/mcp".into()),
            ..McpServerConfig::stdio("npx", [""; 0])
        };
        assert!(error(&both).contains("not both"), "{}", error(&both));
        let neither = McpServerConfig::default();
        assert!(error(&neither).starts_with("MCP server `srv`: invalid configuration: set `command`"));
    }

    #[test]
    fn options_of_the_other_transport_are_refused() {
        let mut config = McpServerConfig::http("http://localhost/mcp");
        config.args = vec!["x".into()];
        assert!(error(&config).contains("`command` servers only"));
        let mut config = McpServerConfig::stdio("server", [""; 0]);
        config.headers.insert("Authorization".into(), "Bearer t".into());
        assert!(error(&config).contains("`url` servers only"));
        assert!(error(&McpServerConfig::http("ftp://host/x")).contains("http:// or https://"));
        assert!(error(&McpServerConfig::http("not a url")).contains("not a valid URL"));
        let mut config = McpServerConfig::stdio("server", [""; 0]);
        config.startup_timeout_secs = 0.0;
        assert!(error(&config).contains("startup_timeout_secs"));
        config.startup_timeout_secs = 1.0;
        config.call_timeout_secs = Some(f64::NAN);
        assert!(error(&config).contains("call_timeout_secs"));
    }

    #[test]
    fn secrets_stay_out_of_debug_and_errors() {
        let mut config = McpServerConfig::http("https://user:pw@example.com/mcp?token=t0ken-in-url");
        config.headers.insert("Authorization".into(), "Bearer s3cret\n".into());
        let message = error(&config);
        assert!(
            message.contains("\"Authorization\"") && !message.contains("s3cret"),
            "{message}"
        );
        let debug = format!("{config:?}");
        assert!(
            !debug.contains("s3cret") && !debug.contains("t0ken") && !debug.contains("pw@"),
            "{debug}"
        );
        assert!(debug.contains("Authorization"), "{debug}");
        assert_eq!(config.target(), "url https://example.com/mcp");

        let mut config = McpServerConfig::stdio("server", ["--flag"]);
        config.env.insert("API_KEY".into(), "k3y".into());
        let debug = format!("{config:?}");
        assert!(!debug.contains("k3y") && debug.contains("API_KEY"), "{debug}");
        assert_eq!(config.target(), "command `server --flag`");
    }

    #[test]
    fn the_child_gets_only_safe_variables_and_its_own() {
        let mut config = McpServerConfig::stdio("server", [""; 0]);
        config.env.insert("MODE".into(), "test".into());
        config.env.insert("PATH".into(), "/opt/bin".into());
        config.inherit_env = vec!["EXTRA".into()];
        let parent = |name: &str| match name {
            "HOME" => Some("/home/u".to_owned()),
            "PATH" => Some("/usr/bin".to_owned()),
            "EXTRA" => Some("yes".to_owned()),
            "OPENAI_API_KEY" => Some("sk-secret".to_owned()),
            _ => None,
        };
        let env = config.child_env(parent);
        assert_eq!(env.get("HOME").map(String::as_str), Some("/home/u"));
        assert_eq!(
            env.get("PATH").map(String::as_str),
            Some("/opt/bin"),
            "configured values win"
        );
        assert_eq!(env.get("EXTRA").map(String::as_str), Some("yes"));
        assert_eq!(env.get("MODE").map(String::as_str), Some("test"));
        assert!(!env.contains_key("OPENAI_API_KEY"));
    }

    #[test]
    fn tables_deserialise_with_defaults_and_reject_typos() {
        let config: McpServerConfig =
            serde_json::from_value(serde_json::json!({"command": "uvx", "args": ["mcp-server-time"]}))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.startup_timeout(), Some(Duration::from_secs(30)));
        assert_eq!(config.args, ["mcp-server-time"]);
        let typo = serde_json::from_value::<McpServerConfig>(serde_json::json!({"comand": "uvx"}));
        assert!(typo.err().map(|e| e.to_string()).unwrap_or_default().contains("comand"));
    }
}
