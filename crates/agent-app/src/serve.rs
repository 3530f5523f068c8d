//! `agentry serve`: the configured agent over HTTP ([`agent_server`]).
//!
//! ```toml
//! [serve]
//! # printf %s YOUR_KEY | sha256sum    (keys are stored as hashes only)
//! api_keys = ["sha256:85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa"]
//! max_body_bytes = 1048576       # 413 above it
//! max_runs_per_key = 8           # 429 above it
//! drain_secs = 0                 # /readyz says 503 this long before the listener closes
//! ```
//!
//! `POST /v1/runs` answers with the `run --json` object.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_server::{ApiKeys, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_RUNS_PER_KEY, Server};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::assemble::build_agent;
use crate::cli::AgentShape;
use crate::config::Settings;
use crate::env::Env;
use crate::error::{AppError, ConfigError};
use crate::output::RunOutput;
use crate::providers::{Progress, build_client};
use crate::tools::ToolBox;

/// The `[serve]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// The API keys, as `sha256:` hashes.
    pub api_keys: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Runs one key may have in flight.
    pub max_runs_per_key: usize,
    /// Seconds `/readyz` answers 503 at shutdown before the listener closes.
    pub drain_secs: u64,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            api_keys: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_runs_per_key: DEFAULT_MAX_RUNS_PER_KEY,
            drain_secs: 0,
        }
    }
}

impl ServeSettings {
    /// Whether the table is the default one (not written out then).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// `agentry serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Provider, model, tools and iterations.
    #[command(flatten)]
    pub agent: AgentShape,
    /// Address to listen on (port 0: any free port; the address taken is
    /// printed on the first line of stdout).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
}

/// The configured keys, or the error naming `serve.api_keys`.
pub(crate) fn api_keys(settings: &Settings) -> Result<ApiKeys, ConfigError> {
    ApiKeys::from_hashes(&settings.config.serve.api_keys).map_err(|error| ConfigError::InvalidValue {
        origin: settings.origin("serve.api_keys"),
        key: "serve.api_keys".to_owned(),
        message: error.to_string(),
    })
}

/// Serves the agent of `run` until Ctrl-C or SIGTERM; the requests in flight
/// finish first.
pub(crate) async fn serve(args: ServeArgs, env: &Env, cwd: &Path) -> Result<u8, AppError> {
    let settings = Settings::load(&args.agent.overrides(), env, cwd)?;
    let keys = api_keys(&settings)?;
    if keys.is_empty() {
        return Err(ConfigError::MissingKey {
            origin: settings.origin("serve.api_keys"),
            key: "serve.api_keys".to_owned(),
            hint: "; serve needs at least one API key: add `[serve] api_keys = [\"sha256:...\"]` with the output of \
                   `printf %s YOUR_KEY | sha256sum` (only the hash is stored)"
                .to_owned(),
        }
        .into());
    }
    let tools = ToolBox::from_settings(&settings, env).await?;
    let client = build_client(&settings, env, Progress::Show).await?;
    let agent = build_agent(&settings, client, &tools);
    let provider = settings.provider()?.name().to_owned();
    let serve = &settings.config.serve;
    let server = Server::new(agent)
        .api_keys(keys)
        .max_body_bytes(serve.max_body_bytes)
        .max_runs_per_key(serve.max_runs_per_key)
        .drain_delay(Duration::from_secs(serve.drain_secs))
        .render_runs(Arc::new(move |result| {
            let mut output = RunOutput::from_result(result);
            output.provider.clone_from(&provider);
            serde_json::to_value(output).unwrap_or_default()
        }));
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|error| AppError::io(format!("listening on {}", args.addr), error))?;
    let address = listener
        .local_addr()
        .map_err(|error| AppError::io("reading the listening address", error))?;
    crate::cli::stdout_line(&format!("listening on http://{address}"))?;
    server
        .serve(listener, shutdown_signal())
        .await
        .map_err(|error| AppError::io("serving HTTP", error))?;
    Ok(crate::error::EXIT_OK)
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = terminate => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
