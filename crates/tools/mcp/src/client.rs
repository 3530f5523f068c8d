//! [`McpToolProvider`]: the tools of one MCP server as a tool domain.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{ToolContext, ToolDefinition, ToolError, ToolOutput, ToolProvider};
use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;

use crate::config::{McpServerConfig, Transport, display_url};
use crate::content;
use crate::error::McpError;
use crate::stderr::StderrTail;

/// How long to wait for a failed server's last stderr lines.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// The tools of one MCP server, as a [`ToolProvider`] named after the
/// server. Definitions come from the server's `tools/list` at connection
/// (input schemas as given); calls go to `tools/call`. Register it with an
/// `agent_tools::ToolBox` like any domain: arguments are validated against
/// the server's schemas, roles checked and calls traced before a request
/// is sent.
///
/// - A result with `isError` becomes [`ToolError::Failed`] with the
///   server's text; a protocol error or a broken connection becomes a
///   [`ToolError::Failed`] naming the server (and its command or URL).
/// - The context's cancellation token stops a call at once; the server is
///   sent `notifications/cancelled`.
/// - `call_timeout_secs` bounds each call ([`ToolError::TimedOut`]).
///
/// The connection lives as long as the provider; dropping the last clone
/// closes it (a stdio server's stdin is closed, then it is terminated).
#[derive(Clone)]
pub struct McpToolProvider {
    name: String,
    description: String,
    target: String,
    definitions: Vec<ToolDefinition>,
    call_timeout: Option<Duration>,
    /// The configured URL, which errors must not show as it is.
    url: Option<String>,
    peer: Peer<RoleClient>,
    _service: Arc<RunningService<RoleClient, ()>>,
}

impl fmt::Debug for McpToolProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<&str> = self.definitions.iter().map(|tool| tool.name.as_str()).collect();
        f.debug_struct("McpToolProvider")
            .field("name", &self.name)
            .field("target", &self.target)
            .field("tools", &tools)
            .finish_non_exhaustive()
    }
}

/// A server's name and settings, checked and owned.
struct Identity {
    name: String,
    target: String,
    description: Option<String>,
    startup_timeout: Duration,
    call_timeout: Option<Duration>,
    url: Option<String>,
}

/// What starting a server needs.
struct Plan {
    id: Identity,
    how: How,
}

enum How {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: HashMap<http::HeaderName, http::HeaderValue>,
    },
}

impl Plan {
    fn new(name: &str, config: &McpServerConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self, McpError> {
        let invalid = |message: String| McpError::Config {
            server: name.to_owned(),
            message,
        };
        let how = match config.transport(name)? {
            Transport::Stdio { command } => How::Stdio {
                command: command.to_owned(),
                args: config.args.clone(),
                env: config.child_env(env),
                cwd: config.cwd.clone(),
            },
            Transport::Http { url } => {
                let mut headers = HashMap::new();
                for (key, value) in &config.headers {
                    let key = http::HeaderName::from_bytes(key.as_bytes())
                        .map_err(|_| invalid(format!("\"{key}\" is not a valid header name")))?;
                    let mut value = http::HeaderValue::from_str(value)
                        .map_err(|_| invalid(format!("the value of header \"{key}\" is not valid")))?;
                    value.set_sensitive(true);
                    headers.insert(key, value);
                }
                How::Http {
                    url: url.trim().to_owned(),
                    headers,
                }
            }
        };
        let id = Identity {
            name: name.to_owned(),
            target: config.target(),
            description: config.description.clone(),
            startup_timeout: config
                .startup_timeout()
                .ok_or_else(|| invalid("`startup_timeout_secs` must be positive".into()))?,
            call_timeout: config.call_timeout(),
            url: config.url.as_deref().map(|url| url.trim().to_owned()),
        };
        Ok(Self { id, how })
    }

    /// Starts the server and lists its tools.
    async fn start(self) -> Result<McpToolProvider, McpError> {
        let Self { id, how } = self;
        match &how {
            How::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut process = tokio::process::Command::new(command);
                process.args(args).env_clear().envs(env);
                if let Some(cwd) = cwd {
                    process.current_dir(cwd);
                }
                let (transport, stderr) = TokioChildProcess::builder(process)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|error| id.start_error(&spawn_message(command, cwd.as_ref(), &error)))?;
                let tail = stderr.map(|stderr| StderrTail::spawn(&id.name, stderr));
                match handshake(transport, id.startup_timeout).await {
                    Ok((service, tools)) => Ok(id.provider(service, &tools)),
                    Err(mut message) => {
                        if let Some(tail) = tail {
                            let text = tail.text(STDERR_GRACE).await;
                            if !text.trim().is_empty() {
                                message.push_str("; its stderr ended with:\n");
                                message.push_str(text.trim_end());
                            }
                        }
                        Err(id.start_error(&message))
                    }
                }
            }
            How::Http { url, headers } => {
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers.clone());
                let transport = StreamableHttpClientTransport::from_config(config);
                match handshake(transport, id.startup_timeout).await {
                    Ok((service, tools)) => Ok(id.provider(service, &tools)),
                    Err(message) => Err(id.start_error(&message)),
                }
            }
        }
    }
}

impl Identity {
    fn start_error(&self, message: &str) -> McpError {
        McpError::Start {
            server: self.name.clone(),
            target: self.target.clone(),
            message: tidy(message, self.url.as_deref()),
        }
    }

    fn provider(self, service: RunningService<RoleClient, ()>, tools: &[Tool]) -> McpToolProvider {
        let description = self.description.unwrap_or_else(|| {
            let server = service
                .peer()
                .peer_info()
                .and_then(|info| info.server_info.as_ref().map(|server| server.name.clone()))
                .filter(|server| !server.trim().is_empty());
            match server {
                Some(server) => format!("Tools of the MCP server `{}` ({server}).", self.name),
                None => format!("Tools of the MCP server `{}`.", self.name),
            }
        });
        McpToolProvider {
            definitions: tools.iter().map(|tool| definition(&self.name, tool)).collect(),
            peer: service.peer().clone(),
            _service: Arc::new(service),
            name: self.name,
            description,
            target: self.target,
            call_timeout: self.call_timeout,
            url: self.url,
        }
    }
}

/// `message` as a user may see it: the configured URL (whose query may
/// hold a token) shown without query and user info, and without the Rust
/// type names rmcp puts in transport errors (` [rmcp::transport::...]`).
fn tidy(message: &str, url: Option<&str>) -> String {
    let message = match url {
        Some(url) if !url.is_empty() => message.replace(url, &display_url(url)),
        _ => message.to_owned(),
    };
    let mut out = String::with_capacity(message.len());
    let mut rest = message.as_str();
    while let Some(start) = rest.find(" [rmcp::") {
        out.push_str(&rest[..start]);
        rest = rest[start..].find(']').map_or("", |end| &rest[start + end + 1..]);
    }
    out.push_str(rest);
    out
}

fn spawn_message(command: &str, cwd: Option<&PathBuf>, error: &std::io::Error) -> String {
    match (error.kind(), cwd) {
        (std::io::ErrorKind::NotFound, Some(cwd)) if !cwd.is_dir() => {
            format!("the working directory {} does not exist", cwd.display())
        }
        (std::io::ErrorKind::NotFound, _) => {
            format!("`{command}` was not found; install it, or give its full path in `command`")
        }
        (std::io::ErrorKind::PermissionDenied, _) => format!("`{command}` is not executable: {error}"),
        _ => format!("starting `{command}` failed: {error}"),
    }
}

/// The MCP handshake and the tool listing, within `timeout`.
async fn handshake<T, E, A>(
    transport: T,
    timeout: Duration,
) -> Result<(RunningService<RoleClient, ()>, Vec<Tool>), String>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let connect = async {
        let service = ().serve(transport).await.map_err(|error| format!("the MCP handshake failed: {error}"))?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| format!("listing its tools failed: {error}"))?;
        Ok((service, tools))
    };
    tokio::time::timeout(timeout, connect).await.map_err(|_| {
        format!(
            "it did not complete the handshake and list its tools within {} s (startup_timeout_secs)",
            timeout.as_secs_f64()
        )
    })?
}

fn definition(server: &str, tool: &Tool) -> ToolDefinition {
    let description = tool
        .description
        .as_deref()
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .or_else(|| tool.title.clone())
        .unwrap_or_else(|| format!("The tool `{}` of the MCP server `{server}`.", tool.name));
    ToolDefinition::new(
        tool.name.to_string(),
        description,
        Value::Object((*tool.input_schema).clone()),
    )
}

impl McpToolProvider {
    /// Starts (stdio) or connects to (HTTP) the server `name` configured by
    /// `config`, and lists its tools. A stdio server's environment is built
    /// from `env` (see [`McpServerConfig::child_env`]).
    pub async fn connect(
        name: &str,
        config: &McpServerConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, McpError> {
        Plan::new(name, config, env)?.start().await
    }

    /// A provider over an already open transport (anything rmcp accepts:
    /// a pair of async reader and writer, a child process, ...); `target`
    /// is what errors call it.
    pub async fn from_transport<T, E, A>(name: &str, target: &str, transport: T) -> Result<Self, McpError>
    where
        T: IntoTransport<RoleClient, E, A> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
        A: 'static,
    {
        let id = Identity {
            name: name.to_owned(),
            target: target.to_owned(),
            description: None,
            startup_timeout: Duration::from_secs_f64(crate::config::DEFAULT_STARTUP_TIMEOUT_SECS),
            call_timeout: None,
            url: None,
        };
        match handshake(transport, id.startup_timeout).await {
            Ok((service, tools)) => Ok(id.provider(service, &tools)),
            Err(message) => Err(id.start_error(&message)),
        }
    }

    /// The command line or URL errors name the server by.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Limits each call to `timeout`.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutput, ToolError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        match arguments {
            Value::Object(arguments) => params = params.with_arguments(arguments.clone()),
            Value::Null => {}
            other => {
                return Err(ToolError::failed(format!(
                    "arguments of `{tool}` must be a JSON object, not {other}"
                )));
            }
        }
        let call = self.peer.call_tool(params);
        let result = match self.call_timeout {
            Some(after) => tokio::time::timeout(after, call)
                .await
                .map_err(|_| ToolError::TimedOut {
                    tool: tool.to_owned(),
                    after,
                })?,
            None => call.await,
        };
        match result {
            Ok(result) => content::outcome(result),
            Err(error) => Err(self.call_error(tool, error)),
        }
    }

    fn call_error(&self, tool: &str, error: ServiceError) -> ToolError {
        let server = &self.name;
        match error {
            ServiceError::McpError(error) => ToolError::failed(format!(
                "the MCP server `{server}` refused the call to `{tool}`: {} (JSON-RPC error {})",
                tidy(&error.message, self.url.as_deref()),
                error.code.0
            )),
            ServiceError::Timeout { timeout } => ToolError::TimedOut {
                tool: tool.to_owned(),
                after: timeout,
            },
            ServiceError::Cancelled { .. } => ToolError::Cancelled,
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => ToolError::failed(format!(
                "the MCP server `{server}` ({}) cannot be reached: {}; its tools are unavailable until agentry is restarted",
                self.target,
                tidy(&error.to_string(), self.url.as_deref()),
            )),
            error => ToolError::failed(format!(
                "the MCP server `{server}` ({}) failed to answer the call to `{tool}`: {}",
                self.target,
                tidy(&error.to_string(), self.url.as_deref()),
            )),
        }
    }
}

#[async_trait]
impl ToolProvider for McpToolProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.definitions.clone()
    }

    async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            biased;
            () = context.cancel.cancelled() => Err(ToolError::Cancelled),
            outcome = self.call(tool, arguments) => outcome,
        }
    }

    fn span_attributes_hook(&self, _tool: &str, _arguments: &Value) -> Vec<(String, Value)> {
        vec![("agentry.mcp.server".to_owned(), Value::String(self.name.clone()))]
    }
}
