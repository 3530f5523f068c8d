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
//!   A run that pauses for the user's approval of tool calls lists them;
//!   `POST /v1/runs/{id}/approvals` (`{"approve", "deny", "edit"}`)
//!   decides them and the run goes on.
//! - `/v1/sessions`: conversations kept in a [`ConversationStore`] (memory
//!   by default; PostgreSQL lets instances share them), each owned by the
//!   key that created it; `POST /v1/sessions/{id}/resume` goes on with a
//!   run that did not end.
//! - `GET /`: a web chat page (no key needed for the page; it asks for
//!   one and keeps it in the tab's session storage) to talk with the agent
//!   in its sessions, with its text streamed, its tool calls shown, and
//!   Approve / Deny buttons for the calls that wait for approval.
//! - `GET /healthz` (the process is up) and `GET /readyz` (it takes
//!   requests; 503 once shutting down).
//!
//! Every `/v1` request needs `Authorization: Bearer KEY` with a configured
//! key ([`ApiKeys`], kept as SHA-256 hashes, never logged); another key's
//! runs and sessions are not found (404). Bodies are limited in size (413
//! above it); each key has a limit of runs in flight and a request rate
//! (429 above them), and of sessions (409). A request's headers and body
//! must arrive in time (the connection is closed; 408), connections are
//! limited (more wait to be accepted), and ended runs are kept a while,
//! so many per key, without their conversation. A client that goes away
//! cancels its run. CORS is off. At shutdown, idle and half-sent
//! connections are closed at once; runs get a grace period, then are
//! cancelled, and every turn is stored. `docs/serving.md` has the whole
//! API, the limits and the load figures.
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
mod body_deadline;
mod connections;
mod content;
mod error;
mod limits;
mod openai;
mod page;
mod runs;
mod session_index;
mod sessions;
mod settings;
mod state;

use std::future::Future;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentRunResult, ConversationStore};
use agent_runner::{Agent, SceneRouter};
use agent_store::InMemoryStore;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub use auth::{ApiKeys, HASH_PREFIX, KeyFormatError, KeyId, hash_key};
pub use error::ApiError;
pub use settings::ServeSettings;

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

/// How long a client has to send a request's headers by default; an idle
/// keep-alive connection is closed after as long.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has to send a request's body by default, from the
/// moment its headers arrived.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The default number of connections served at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// The default number of ended runs kept per key for `GET /v1/runs/{id}`.
pub const DEFAULT_MAX_ENDED_RUNS_PER_KEY: usize = 100;

/// The default number of sessions one key may have.
pub const DEFAULT_MAX_SESSIONS_PER_KEY: usize = 1000;

/// How long requests being answered at shutdown may go on once the runs'
/// grace is over (their runs are cancelled then, and answered).
const AFTER_GRACE: Duration = Duration::from_secs(5);

/// How `POST /v1/runs` writes a run's record.
pub type RenderRun = Arc<dyn Fn(&AgentRunResult) -> serde_json::Value + Send + Sync>;

/// What `GET /readyz` reports beside its status, as its `details` (the
/// model providers' circuit breakers, say). Called on every probe: keep it
/// cheap.
pub type ReadinessDetails = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

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
    readiness_details: Option<ReadinessDetails>,
    store: Arc<dyn ConversationStore>,
    run_retention: Duration,
    max_ended_runs_per_key: usize,
    max_sessions_per_key: usize,
    header_read_timeout: Duration,
    body_timeout: Duration,
    max_connections: usize,
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
            readiness_details: None,
            store: Arc::new(InMemoryStore::new()),
            run_retention: DEFAULT_RUN_RETENTION,
            max_ended_runs_per_key: DEFAULT_MAX_ENDED_RUNS_PER_KEY,
            max_sessions_per_key: DEFAULT_MAX_SESSIONS_PER_KEY,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
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

    /// Ended runs kept per key (default 100; at least 1): past it, the key's
    /// oldest ended run is forgotten. A kept run keeps its record without
    /// the conversation (`messages`), and its events.
    pub fn max_ended_runs_per_key(mut self, runs: usize) -> Self {
        self.max_ended_runs_per_key = runs.max(1);
        self
    }

    /// Sessions one key may have (default 1,000; at least 1). Creating one
    /// more is a 409 naming the limit.
    pub fn max_sessions_per_key(mut self, sessions: usize) -> Self {
        self.max_sessions_per_key = sessions.max(1);
        self
    }

    /// How long a client has to send a request's headers (default 10 s,
    /// at least 1 ms); the connection is closed then. An idle keep-alive
    /// connection is closed after as long.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a client has to send a request's body once its headers
    /// arrived (default 30 s, at least 1 ms); past it the request is
    /// answered 408.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Connections served at once (default 1,024; at least 1). Past it,
    /// new connections wait to be accepted until one closes; the open ones
    /// keep being served.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
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

    /// What `GET /readyz` adds as its `details` (default: none, and no
    /// `details` key). The status stays `ready` whatever they say: a
    /// provider whose breaker is open is news, not a reason to take the
    /// instance out of a load balancer.
    pub fn readiness_details(mut self, details: ReadinessDetails) -> Self {
        self.readiness_details = Some(details);
        self
    }

    /// The routes, ready to be served or nested in a larger router. They
    /// bound the time to send a body ([`body_timeout`](Self::body_timeout));
    /// the header read timeout and the connection limit are
    /// [`serve`](Self::serve)'s, to be set by whoever serves the routes.
    pub fn router(self) -> Router {
        self.into_parts().1
    }

    /// Serves on `listener` until `shutdown` completes. Then `/readyz`
    /// answers 503 and no new run starts (503); after the
    /// [drain delay](Self::drain_delay) no new connection is taken, and
    /// connections answering no request (idle, or a request still being
    /// sent) are closed. Runs in flight may finish within the
    /// [grace](Self::shutdown_grace); those still going are cancelled, and
    /// every run stores its turn in its session before this returns.
    /// Requests being answered have the grace and 5 s more (at least 5 s
    /// after the drain delay) to finish; their connections are closed then.
    ///
    /// Connections are limited ([`max_connections`](Self::max_connections)),
    /// and so is the time a client has to send a request's headers
    /// ([`header_read_timeout`](Self::header_read_timeout)) and body
    /// ([`body_timeout`](Self::body_timeout)).
    ///
    /// # Errors
    ///
    /// None so far: a failed accept is logged and retried (out of file
    /// descriptors, a second later), as `axum::serve` does.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (drain_delay, grace) = (self.drain_delay, self.shutdown_grace);
        let limits = connections::ConnectionLimits {
            header_read_timeout: self.header_read_timeout,
            max_connections: self.max_connections,
        };
        let (shared, router) = self.into_parts();
        let closing = connections::Closing::default();
        let stopping = Arc::clone(&shared);
        let close = closing.clone();
        tokio::spawn(async move {
            shutdown.await;
            let signalled = tokio::time::Instant::now();
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
            let runs_cancelled = signalled + grace;
            close.close(runs_cancelled.max(tokio::time::Instant::now()) + AFTER_GRACE);
        });
        connections::serve(listener, router, limits, closing).await;
        // Runs not tied to a request (`"wait": false`) end here, stored.
        shared.runs.wait_idle().await;
        Ok(())
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
            readiness_details: self.readiness_details,
            store: self.store,
            run_retention: self.run_retention,
            max_ended_runs_per_key: self.max_ended_runs_per_key,
            max_sessions_per_key: self.max_sessions_per_key,
        };
        let body_timeout = self.body_timeout;
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
            .route("/v1/runs/{id}/approvals", post(runs::decide_run))
            .route("/v1/sessions", post(sessions::create).get(sessions::list))
            .route("/v1/sessions/{id}", get(sessions::show).delete(sessions::delete))
            .route("/v1/sessions/{id}/resume", post(runs::resume_session))
            .layer(DefaultBodyLimit::max(max_body_bytes))
            .layer(axum::middleware::map_request_with_state(
                body_timeout,
                body_deadline::add_deadline,
            ))
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
            .field("max_ended_runs_per_key", &self.max_ended_runs_per_key)
            .field("max_sessions_per_key", &self.max_sessions_per_key)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}
