//! # agent-server
//!
//! An [`Agent`] over HTTP, so that any OpenAI client, script or service can
//! use it:
//!
//! - `POST /v1/chat/completions`: OpenAI's chat completions, plain or
//!   streamed (server-sent events), whose model is the agent with its tools:
//!   the conversation's last user message is the prompt, the messages
//!   before it the history.
//! - `POST /v1/runs`: `{"prompt", "session"?, "messages"?, "wait"?,
//!   "options"?}` runs one turn and answers with the run's record (by
//!   default the runner's [`AgentRunResult`]; `agentry serve` answers with
//!   the `run --json` object), or at once with its id (`"wait": false`).
//!   `GET /v1/runs/{id}` reads it, `GET /v1/runs/{id}/events` follows its
//!   events as server-sent events, `POST /v1/runs/{id}/cancel` stops it.
//! - `/v1/sessions`: conversations kept in a [`ConversationStore`] (memory
//!   by default; PostgreSQL lets instances share them), each owned by the
//!   key that created it; `POST /v1/sessions/{id}/resume` goes on with a
//!   run that did not end.
//! - `GET /`: a web chat page (no key needed for the page; it asks for
//!   one and keeps it in the tab's session storage) to talk with the agent
//!   in its sessions, with its text streamed and its tool calls shown.
//! - `GET /healthz` (the process is up) and `GET /readyz` (it takes
//!   requests; 503 once shutting down).
//!
//! Every `/v1` request needs `Authorization: Bearer KEY` with a configured
//! key ([`ApiKeys`], kept as SHA-256 hashes, never logged); another key's
//! runs and sessions are not found (404). Bodies are limited in size (413
//! above it); each key has a limit of runs in flight and a request rate
//! (429 above them). A client that goes away cancels its run. CORS is off.
//! At shutdown, runs get a grace period, then are cancelled, and every turn
//! is stored. `docs/serving.md` has the whole API and the load figures.
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
mod limits;
mod openai;
mod page;
mod runs;
mod sessions;
mod state;

use std::future::Future;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentRunResult, ConversationStore, InMemoryStore};
use agent_runner::{Agent, SceneRouter};
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

/// The default number of requests one key may send a minute.
pub const DEFAULT_REQUESTS_PER_MINUTE: u32 = 600;

/// The default interval of a streamed reply's keep-alive comments.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long runs may go on at shutdown by default before they are
/// cancelled.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How long an ended run is kept by default for `GET /v1/runs/{id}`.
pub const DEFAULT_RUN_RETENTION: Duration = Duration::from_secs(15 * 60);

/// How `POST /v1/runs` writes a run's record.
pub type RenderRun = Arc<dyn Fn(&AgentRunResult) -> serde_json::Value + Send + Sync>;

/// An agent and how it is served: keys, limits, the run record's form.
pub struct Server {
    agent: Agent,
    scenes: Option<SceneRouter>,
    api_keys: ApiKeys,
    max_body_bytes: usize,
    max_runs_per_key: usize,
    requests_per_minute: Option<NonZeroU32>,
    drain_delay: Duration,
    shutdown_grace: Duration,
    keep_alive: Duration,
    render_run: RenderRun,
    store: Arc<dyn ConversationStore>,
    run_retention: Duration,
}

impl Server {
    /// Serves `agent`. Without [`api_keys`](Self::api_keys) every `/v1`
    /// request is refused (401); without a [`store`](Self::store) sessions
    /// are kept in memory.
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            scenes: None,
            api_keys: ApiKeys::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_runs_per_key: DEFAULT_MAX_RUNS_PER_KEY,
            requests_per_minute: NonZeroU32::new(DEFAULT_REQUESTS_PER_MINUTE),
            drain_delay: Duration::ZERO,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            keep_alive: DEFAULT_KEEP_ALIVE,
            render_run: Arc::new(|result| serde_json::to_value(result).unwrap_or(serde_json::Value::Null)),
            store: Arc::new(InMemoryStore::new()),
            run_retention: DEFAULT_RUN_RETENTION,
        }
    }

    /// Routes every prompt to one of these scenes' agents (the router
    /// chooses by the request) instead of running `agent` itself. Scene
    /// runs are not checkpointed, and take no run `options`.
    pub fn scenes(mut self, router: SceneRouter) -> Self {
        self.scenes = Some(router);
        self
    }

    /// Where sessions are kept (default: this process's memory). Instances
    /// sharing a store (PostgreSQL, say) continue each other's sessions.
    pub fn store(mut self, store: Arc<dyn ConversationStore>) -> Self {
        self.store = store;
        self
    }

    /// Requests one key may send a minute, in bursts of up to as many
    /// (default 600; `None`: no limit). Above it: 429 with `Retry-After`.
    pub fn requests_per_minute(mut self, rate: Option<NonZeroU32>) -> Self {
        self.requests_per_minute = rate;
        self
    }

    /// How long runs in flight may go on once the server shuts down
    /// (default 30 s); then they are cancelled, and each stores what it did
    /// in its session before [`serve`](Self::serve) returns.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How long an ended run stays readable by id (default 15 minutes).
    pub fn run_retention(mut self, retention: Duration) -> Self {
        self.run_retention = retention;
        self
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

    /// Serves on `listener` until `shutdown` completes. Then `/readyz`
    /// answers 503 and no new run starts (503); after the
    /// [drain delay](Self::drain_delay) no new connection is taken. Runs in
    /// flight may finish within the [grace](Self::shutdown_grace); those
    /// still going are cancelled, and every run stores its turn in its
    /// session before this returns.
    ///
    /// # Errors
    ///
    /// The listener's I/O error.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (drain_delay, grace) = (self.drain_delay, self.shutdown_grace);
        let (shared, router) = self.into_parts();
        let stopping = Arc::clone(&shared);
        // A make-service clones the router for each connection (one Arc);
        // serving the router itself would rebuild its routes for each.
        let served = axum::serve(listener, router.into_make_service())
            .with_graceful_shutdown(async move {
                shutdown.await;
                stopping.stop_taking_requests();
                tracing::info!(?drain_delay, ?grace, runs = stopping.runs.running(), "shutting down");
                let runs = Arc::clone(&stopping);
                tokio::spawn(async move {
                    if tokio::time::timeout(grace, runs.runs.wait_idle()).await.is_err() {
                        tracing::warn!(
                            runs = runs.runs.running(),
                            "cancelling the runs still going after the grace"
                        );
                        runs.runs.cancel_all();
                    }
                });
                tokio::time::sleep(drain_delay).await;
            })
            .await;
        // Runs not tied to a request (`"wait": false`) end here, stored.
        shared.runs.wait_idle().await;
        served
    }

    fn into_parts(self) -> (Arc<Shared>, Router) {
        let max_body_bytes = self.max_body_bytes;
        let settings = state::Settings {
            scenes: self.scenes,
            keys: self.api_keys,
            max_body_bytes: self.max_body_bytes,
            max_runs_per_key: self.max_runs_per_key,
            requests_per_minute: self.requests_per_minute,
            keep_alive: self.keep_alive,
            render_run: self.render_run,
            store: self.store,
            run_retention: self.run_retention,
        };
        let shared = Arc::new(Shared::new(self.agent, settings));
        let router = Router::new()
            .route("/", get(page::chat_page))
            .route("/healthz", get(state::healthz))
            .route("/readyz", get(state::readyz))
            .route("/v1/chat/completions", post(openai::chat_completions))
            .route("/v1/runs", post(runs::create_run))
            .route("/v1/runs/{id}", get(runs::get_run))
            .route("/v1/runs/{id}/events", get(runs::run_events))
            .route("/v1/runs/{id}/cancel", post(runs::cancel_run))
            .route("/v1/sessions", post(sessions::create).get(sessions::list))
            .route("/v1/sessions/{id}", get(sessions::show).delete(sessions::delete))
            .route("/v1/sessions/{id}/resume", post(runs::resume_session))
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
