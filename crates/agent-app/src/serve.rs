//! `agentry serve`: the configured agent over HTTP ([`agent_server`]), with
//! the API keys and limits of `[serve]` and the session store of `[store]`
//! (see [`agent_server::ServeSettings`], [`agentry::config::StoreSettings`]).
//!
//! `POST /v1/runs` answers with the `run --json` object. With `[scenes]`,
//! each prompt goes to the scene the router picks, as in `run` and `chat`.
//!
//! The server comes with the cargo feature `serve`, a PostgreSQL store with
//! `postgres`, and the default SQLite store with `sqlite`; in a build
//! without `serve`, `[serve]` is not checked and `agentry serve` says which
//! feature to build with.

use std::net::SocketAddr;
use std::path::Path;
#[cfg(feature = "serve")]
use std::sync::Arc;

#[cfg(feature = "serve")]
use agent_core::ConversationStore;
#[cfg(feature = "serve")]
use agent_server::{ServeSettings, Server};
use clap::Args;

use crate::args::AgentShape;
use crate::error::{AppError, ConfigError};
use agentry::config::Env;
#[cfg(feature = "serve")]
use agentry::config::{Settings, redact_url};

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

/// Serves the agent of `run` until Ctrl-C or SIGTERM; the requests in flight
/// finish first. `quiet` hides the model's download and load progress.
#[cfg(feature = "serve")]
pub(crate) async fn serve(args: ServeArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    use crate::assemble::build_agent;
    use crate::output::RunOutput;
    use crate::providers::{Progress, build_model_client};

    let settings = Settings::load(&args.agent.overrides(), env, cwd)?;
    let serve = serve_settings(&settings)?;
    let keys = serve
        .api_keys()
        .map_err(|error| settings.invalid("serve.api_keys", &error.to_string()))?;
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
    let tools = crate::tools::ToolBox::from_settings(&settings, env).await?;
    let model = build_model_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let client = Arc::clone(&model.client);
    let scenes = crate::scenes::router_for(&settings, &client, &tools)?;
    let agent = build_agent(&settings, client, &tools);
    let provider = settings.provider()?.name().to_owned();
    let store = open_store(&settings, env).await?;
    let server = Server::new(agent)
        .api_keys(keys)
        .store(store)
        .settings(&serve)
        .render_runs(Arc::new(move |result| {
            let mut output = RunOutput::from_result(result);
            output.provider.clone_from(&provider);
            serde_json::to_value(output).unwrap_or_default()
        }));
    let server = match scenes {
        Some(router) => server.scenes(router),
        None => server,
    };
    let server = match model.readiness_details() {
        Some(details) => server.readiness_details(details),
        None => server,
    };
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|error| AppError::io(format!("listening on {}", args.addr), error))?;
    let address = listener
        .local_addr()
        .map_err(|error| AppError::io("reading the listening address", error))?;
    crate::output::stdout_line(&format!("listening on http://{address}"))?;
    server
        .serve(listener, shutdown_signal())
        .await
        .map_err(|error| AppError::io("serving HTTP", error))?;
    Ok(crate::error::EXIT_OK)
}

/// The `[serve]` table, checked: its keys, its values and the form of its
/// API keys, each error naming the key and where it was set.
#[cfg(feature = "serve")]
fn serve_settings(settings: &Settings) -> Result<ServeSettings, ConfigError> {
    Ok(settings.table("serve")?.unwrap_or_default())
}

/// `agentry serve` in a build without the `serve` feature.
#[cfg(not(feature = "serve"))]
#[expect(clippy::unused_async, reason = "the same signature as the build with the server")]
pub(crate) async fn serve(_: ServeArgs, _: &Env, _: &Path, _: bool) -> Result<u8, AppError> {
    Err(ConfigError::not_compiled("`agentry serve`", "serve").into())
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
    use agentry::config::{StoreSettings, redact_url};

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
