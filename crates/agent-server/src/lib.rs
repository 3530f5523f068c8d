//! # agent-server
//!
//! An [`Agent`] over HTTP, so that any OpenAI client, script or service can
//! use it:
//!
//! - `POST /v1/chat/completions`: OpenAI's chat completions, plain or
//!   streamed (server-sent events), whose model is the agent with its tools:
//!   the conversation's last user message is the prompt, the messages
//!   before it the history.
//! - `POST /v1/runs`: `{"prompt": "...", "messages": [...]}` runs one turn
//!   and answers with the run's record (by default the runner's
//!   [`AgentRunResult`]; `agentry serve` answers with the `run --json`
//!   object).
//! - `GET /healthz` (the process is up) and `GET /readyz` (it takes
//!   requests; 503 once shutting down).
//!
//! Every `/v1` request needs `Authorization: Bearer KEY` with a configured
//! key ([`ApiKeys`], kept as SHA-256 hashes, never logged); bodies are
//! limited in size (413 above it) and each key has a limit of runs in
//! flight (429 above it). A client that goes away cancels its run.
//!
//! ```
//! use std::sync::Arc;
//! use agent_runner::Agent;
//! use agent_server::{ApiKeys, Server, hash_key};
//! use agent_testing::{ScriptedClient, response};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder(Arc::new(ScriptedClient::new().respond(response::text("Hi!")))).build();
//! let server = Server::new(agent).api_keys(ApiKeys::from_hashes([hash_key("my-key")])?);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let address = listener.local_addr()?;
//! tokio::spawn(server.serve(listener, std::future::pending()));
//!
//! let reply: serde_json::Value = reqwest::Client::new()
//!     .post(format!("http://{address}/v1/chat/completions"))
//!     .bearer_auth("my-key")
//!     .json(&serde_json::json!({"model": "agentry", "messages": [{"role": "user", "content": "Hello"}]}))
//!     .send()
//!     .await?
//!     .json()
//!     .await?;
//! assert_eq!(reply["choices"][0]["message"]["content"], "Hi!");
//! # Ok(())
//! # }
//! ```

mod auth;
mod error;
mod openai;
mod runs;
mod state;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agent_core::AgentRunResult;
use agent_runner::Agent;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub use auth::{ApiKeys, HASH_PREFIX, KeyFormatError, KeyId, hash_key};
pub use error::ApiError;

use crate::state::Shared;

/// The default limit of a request body: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// The default number of runs one key may have in flight.
pub const DEFAULT_MAX_RUNS_PER_KEY: usize = 8;

/// The default interval of a streamed reply's keep-alive comments.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How `POST /v1/runs` writes a run's record.
pub type RenderRun = Arc<dyn Fn(&AgentRunResult) -> serde_json::Value + Send + Sync>;

/// An agent and how it is served: keys, limits, the run record's form.
pub struct Server {
    agent: Agent,
    api_keys: ApiKeys,
    max_body_bytes: usize,
    max_runs_per_key: usize,
    drain_delay: Duration,
    keep_alive: Duration,
    render_run: RenderRun,
}

impl Server {
    /// Serves `agent`. Without [`api_keys`](Self::api_keys) every `/v1`
    /// request is refused (401).
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            api_keys: ApiKeys::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_runs_per_key: DEFAULT_MAX_RUNS_PER_KEY,
            drain_delay: Duration::ZERO,
            keep_alive: DEFAULT_KEEP_ALIVE,
            render_run: Arc::new(|result| serde_json::to_value(result).unwrap_or(serde_json::Value::Null)),
        }
    }

    /// The keys that may call the API.
    pub fn api_keys(mut self, keys: ApiKeys) -> Self {
        self.api_keys = keys;
        self
    }

    /// The largest request body accepted, in bytes (default 1 MiB).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Runs one key may have in flight at once (default 8; at least 1).
    pub fn max_runs_per_key(mut self, runs: usize) -> Self {
        self.max_runs_per_key = runs.max(1);
        self
    }

    /// How long, once shutting down, `/readyz` answers 503 while requests
    /// are still taken, so that a load balancer stops sending new ones
    /// before the listener closes (default none).
    pub fn drain_delay(mut self, delay: Duration) -> Self {
        self.drain_delay = delay;
        self
    }

    /// How often a streamed reply sends a comment line while the agent
    /// works (default 15 s), so that proxies and clients do not close a
    /// stream that is quiet during a long tool call.
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// How `POST /v1/runs` writes a run's record (default: the runner's
    /// [`AgentRunResult`] as JSON).
    pub fn render_runs(mut self, render: RenderRun) -> Self {
        self.render_run = render;
        self
    }

    /// The routes, ready to be served or nested in a larger router.
    pub fn router(self) -> Router {
        self.into_parts().1
    }

    /// Serves on `listener` until `shutdown` completes; then `/readyz`
    /// answers 503, and after the [drain delay](Self::drain_delay) no new
    /// connection is taken and the requests in flight (their runs
    /// included) finish before this returns.
    ///
    /// # Errors
    ///
    /// The listener's I/O error.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let drain_delay = self.drain_delay;
        let (shared, router) = self.into_parts();
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                shared.stop_taking_requests();
                tracing::info!(?drain_delay, "shutting down: finishing the requests in flight");
                tokio::time::sleep(drain_delay).await;
            })
            .await
    }

    fn into_parts(self) -> (Arc<Shared>, Router) {
        let max_body_bytes = self.max_body_bytes;
        let shared = Arc::new(Shared::new(
            self.agent,
            self.api_keys,
            self.max_body_bytes,
            self.max_runs_per_key,
            self.keep_alive,
            self.render_run,
        ));
        let router = Router::new()
            .route("/healthz", get(state::healthz))
            .route("/readyz", get(state::readyz))
            .route("/v1/chat/completions", post(openai::chat_completions))
            .route("/v1/runs", post(runs::create_run))
            .layer(DefaultBodyLimit::max(max_body_bytes))
            .with_state(Arc::clone(&shared));
        (shared, router)
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("agent", &self.agent.name())
            .field("api_keys", &self.api_keys)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_runs_per_key", &self.max_runs_per_key)
            .finish_non_exhaustive()
    }
}
