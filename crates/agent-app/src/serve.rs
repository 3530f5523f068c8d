//! `agentry serve`: the configured agent over HTTP ([`agent_server`]).
//!
//! ```toml
//! [serve]
//! # printf %s YOUR_KEY | sha256sum    (keys are stored as hashes only)
//! api_keys = ["sha256:85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa"]
//! max_body_bytes = 1048576       # 413 above it
//! max_runs_per_key = 8           # 429 above it
//! requests_per_minute = 600      # per key; 429 with Retry-After above it (0: no limit)
//! drain_secs = 0                 # /readyz says 503 this long before the listener closes
//! shutdown_grace_secs = 30       # runs may finish this long at shutdown, then are cancelled
//! header_read_timeout_secs = 10  # a request's headers must arrive within it (idle keep-alive too)
//! body_timeout_secs = 30         # a request's body must arrive within it (408 past it)
//! max_connections = 1024         # more connections wait to be accepted
//! max_ended_runs_per_key = 100   # ended runs kept for GET /v1/runs/{id}, per key
//! max_sessions_per_key = 1000    # 409 above it
//!
//! [store]
//! # Where sessions are kept. Default: a SQLite file in $AGENTRY_HOME/serve.
//! # Instances sharing a PostgreSQL database continue each other's sessions.
//! url = "postgres://agentry@db.internal/agentry"
//! ```
//!
//! `POST /v1/runs` answers with the `run --json` object. With `[scenes]`,
//! each prompt goes to the scene the router picks, as in `run` and `chat`.
//!
//! The server comes with the cargo feature `serve`, a PostgreSQL store with
//! `postgres`, and the default SQLite store with `sqlite`; in a build
//! without `serve`, `[serve]` is read as an unchecked table and
//! `agentry serve` says which feature to build with.

use std::net::SocketAddr;
use std::path::Path;
#[cfg(feature = "serve")]
use std::{num::NonZeroU32, sync::Arc, time::Duration};

#[cfg(feature = "serve")]
use agent_core::ConversationStore;
#[cfg(feature = "serve")]
use agent_server::{
    ApiKeys, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_ENDED_RUNS_PER_KEY, DEFAULT_MAX_RUNS_PER_KEY, DEFAULT_MAX_SESSIONS_PER_KEY,
    DEFAULT_REQUESTS_PER_MINUTE, DEFAULT_SHUTDOWN_GRACE, Server,
};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::cli::AgentShape;
#[cfg(feature = "serve")]
use crate::config::Settings;
use crate::env::Env;
use crate::error::{AppError, ConfigError};

/// The `[serve]` table.
#[cfg(feature = "serve")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// The API keys, as `sha256:` hashes.
    pub api_keys: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Runs one key may have in flight.
    pub max_runs_per_key: usize,
    /// Requests one key may send a minute (0: no limit).
    pub requests_per_minute: u32,
    /// Seconds `/readyz` answers 503 at shutdown before the listener closes.
    pub drain_secs: u64,
    /// Seconds runs may go on at shutdown before they are cancelled.
    pub shutdown_grace_secs: u64,
    /// Seconds a client has to send a request's headers; an idle
    /// keep-alive connection is closed after as long (at least 1).
    pub header_read_timeout_secs: u64,
    /// Seconds a client has to send a request's body once its headers
    /// arrived (408 past it; at least 1).
    pub body_timeout_secs: u64,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// Ended runs kept per key for `GET /v1/runs/{id}`.
    pub max_ended_runs_per_key: usize,
    /// Sessions one key may have (409 above it).
    pub max_sessions_per_key: usize,
}

#[cfg(feature = "serve")]
impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            api_keys: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_runs_per_key: DEFAULT_MAX_RUNS_PER_KEY,
            requests_per_minute: DEFAULT_REQUESTS_PER_MINUTE,
            drain_secs: 0,
            shutdown_grace_secs: DEFAULT_SHUTDOWN_GRACE.as_secs(),
            header_read_timeout_secs: DEFAULT_HEADER_READ_TIMEOUT.as_secs(),
            body_timeout_secs: DEFAULT_BODY_TIMEOUT.as_secs(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_ended_runs_per_key: DEFAULT_MAX_ENDED_RUNS_PER_KEY,
            max_sessions_per_key: DEFAULT_MAX_SESSIONS_PER_KEY,
        }
    }
}

#[cfg(feature = "serve")]
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
#[cfg(feature = "serve")]
pub(crate) fn api_keys(settings: &Settings) -> Result<ApiKeys, ConfigError> {
    ApiKeys::from_hashes(&settings.config.serve.api_keys).map_err(|error| ConfigError::InvalidValue {
        origin: settings.origin("serve.api_keys"),
        key: "serve.api_keys".to_owned(),
        message: error.to_string(),
    })
}

/// Serves the agent of `run` until Ctrl-C or SIGTERM; the requests in flight
/// finish first. `quiet` hides the model's download and load progress.
#[cfg(feature = "serve")]
pub(crate) async fn serve(args: ServeArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    use crate::assemble::build_agent;
    use crate::output::RunOutput;
    use crate::providers::{Progress, build_client};
    use crate::tools::ToolBox;

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
    let client = build_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let scenes = crate::scenes::router_for(&settings, &client, &tools)?;
    let agent = build_agent(&settings, client, &tools);
    let provider = settings.provider()?.name().to_owned();
    let store = open_store(&settings, env).await?;
    let serve = &settings.config.serve;
    let server = Server::new(agent)
        .api_keys(keys)
        .store(store)
        .max_body_bytes(serve.max_body_bytes)
        .max_runs_per_key(serve.max_runs_per_key)
        .requests_per_minute(NonZeroU32::new(serve.requests_per_minute))
        .drain_delay(Duration::from_secs(serve.drain_secs))
        .shutdown_grace(Duration::from_secs(serve.shutdown_grace_secs))
        .header_read_timeout(Duration::from_secs(serve.header_read_timeout_secs.max(1)))
        .body_timeout(Duration::from_secs(serve.body_timeout_secs.max(1)))
        .max_connections(serve.max_connections)
        .max_ended_runs_per_key(serve.max_ended_runs_per_key)
        .max_sessions_per_key(serve.max_sessions_per_key)
        .render_runs(Arc::new(move |result| {
            let mut output = RunOutput::from_result(result);
            output.provider.clone_from(&provider);
            serde_json::to_value(output).unwrap_or_default()
        }));
    let server = match scenes {
        Some(router) => server.scenes(router),
        None => server,
    };
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

/// `agentry serve` in a build without the `serve` feature.
#[cfg(not(feature = "serve"))]
#[expect(clippy::unused_async, reason = "the same signature as the build with the server")]
pub(crate) async fn serve(_: ServeArgs, _: &Env, _: &Path, _: bool) -> Result<u8, AppError> {
    Err(ConfigError::not_compiled("`agentry serve`", "serve").into())
}

/// The `[store]` table.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSettings {
    /// `postgres://...` (or `postgresql://`), or `sqlite:PATH`; none: a
    /// SQLite file in `$AGENTRY_HOME/serve`.
    pub url: Option<String>,
}

impl StoreSettings {
    /// Whether the table is the default one (not written out then).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl std::fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSettings")
            .field("url", &self.url.as_deref().map(redact_url))
            .finish()
    }
}

/// `url` with its passwords replaced by `[redacted]`: the one in the user
/// information (`user:PASSWORD@host`) and any query parameter whose name
/// holds `password` (`?password=...`, `&sslpassword=...`), in any case.
pub(crate) fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut shown = redact_user_info(base);
    if let Some(query) = query {
        shown.push('?');
        let parameters: Vec<String> = query
            .split('&')
            .map(|parameter| match parameter.split_once('=') {
                Some((name, _)) if name.to_ascii_lowercase().contains("password") => format!("{name}=[redacted]"),
                _ => parameter.to_owned(),
            })
            .collect();
        shown.push_str(&parameters.join("&"));
    }
    shown
}

/// `scheme://user:PASSWORD@host/path` with the password redacted.
fn redact_user_info(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:[redacted]@{host}{path}")
        }
        _ => url.to_owned(),
    }
}

/// The configured session store of `serve`.
#[cfg(feature = "serve")]
async fn open_store(settings: &Settings, env: &Env) -> Result<Arc<dyn ConversationStore>, AppError> {
    use crate::sessions::open_sqlite;

    let url = settings.config.store.url.as_deref().map(str::trim);
    match url {
        None | Some("") => {
            let path = env.agentry_home().join("serve").join("sessions.db");
            open_sqlite(path).await
        }
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => open_postgres(url).await,
        Some(url) if url.starts_with("sqlite:") => {
            let path = url.trim_start_matches("sqlite:").trim_start_matches("//");
            open_sqlite(path.into()).await
        }
        Some(other) => Err(ConfigError::InvalidValue {
            origin: settings.origin("store.url"),
            key: "store.url".to_owned(),
            message: format!(
                "`{}` is not a store URL: use postgres://USER@HOST/DATABASE or sqlite:PATH",
                redact_url(other)
            ),
        }
        .into()),
    }
}

/// The PostgreSQL store at `url`.
#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Arc<dyn ConversationStore>, AppError> {
    let store = agent_store_postgres::PostgresStore::connect(url)
        .await
        .map_err(|error| AppError::Session(format!("opening the session store {} failed: {error}", redact_url(url))))?;
    Ok(Arc::new(store))
}

/// A PostgreSQL store in a build without the `postgres` feature.
#[cfg(all(feature = "serve", not(feature = "postgres")))]
#[expect(clippy::unused_async, reason = "the same signature as the build with PostgreSQL")]
async fn open_postgres(_: &str) -> Result<Arc<dyn ConversationStore>, AppError> {
    Err(ConfigError::not_compiled(
        "a PostgreSQL session store (`[store] url = \"postgres://...\"`)",
        "postgres",
    )
    .into())
}

/// Completes on Ctrl-C or SIGTERM.
#[cfg(feature = "serve")]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_urls_password_never_shows() {
        for (url, shown) in [
            (
                "postgres://agentry:s3cret-pw@db:5432/app",
                "postgres://agentry:[redacted]@db:5432/app",
            ),
            ("postgresql://agentry@db/app", "postgresql://agentry@db/app"),
            ("postgres://u:p@ss@db/app", "postgres://u:[redacted]@db/app"),
            ("sqlite:/var/lib/agentry.db", "sqlite:/var/lib/agentry.db"),
            (
                "postgres://agentry@db/app?password=s3cret-pw&sslmode=require",
                "postgres://agentry@db/app?password=[redacted]&sslmode=require",
            ),
            (
                "postgresql://db/app?sslmode=verify-full&SSLPassword=k3y-pw",
                "postgresql://db/app?sslmode=verify-full&SSLPassword=[redacted]",
            ),
            (
                "mysql://db/app?Password=s3cret-pw",
                "mysql://db/app?Password=[redacted]",
            ),
        ] {
            assert_eq!(redact_url(url), shown);
        }
        let settings = StoreSettings {
            url: Some("postgres://agentry:s3cret-pw@db/app".to_owned()),
        };
        assert!(!format!("{settings:?}").contains("s3cret"));
    }
}
