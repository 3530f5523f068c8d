//! What every handler shares: the agent, the keys, the limits, the store,
//! the runs; and the pieces every `/v1` handler starts with (the caller,
//! its run slot, the JSON body).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_core::ConversationStore;
use agent_runner::{Agent, SceneRouter};
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::{ApiKeys, KeyId};
use crate::error::ApiError;
use crate::limits::RequestRate;
use crate::runs::registry::RunRegistry;
use crate::session_index::{REFRESH, SessionIndex};
use crate::sessions::SessionLocks;
use crate::{ReadinessDetails, RenderRun};

/// Ended runs kept at most, whatever their age and key (each keeps its
/// events and its record without the conversation; each key keeps at most
/// its own limit of them).
const MAX_ENDED_RUNS: usize = 1_000;

/// The server's state, shared by every request.
pub(crate) struct Shared {
    pub(crate) agent: Agent,
    /// Routes each prompt to a scene's agent, when scenes are served.
    pub(crate) scenes: Option<SceneRouter>,
    keys: ApiKeys,
    max_body_bytes: usize,
    max_runs_per_key: usize,
    rate: Option<RequestRate>,
    pub(crate) keep_alive: Duration,
    pub(crate) render_run: RenderRun,
    readiness_details: Option<ReadinessDetails>,
    pub(crate) store: Arc<dyn ConversationStore>,
    pub(crate) runs: RunRegistry,
    pub(crate) session_locks: SessionLocks,
    /// Sessions one key may have.
    pub(crate) max_sessions_per_key: usize,
    /// The sessions of each key.
    pub(crate) session_index: SessionIndex,
    ready: AtomicBool,
    in_flight: Mutex<HashMap<KeyId, usize>>,
}

/// The settings [`Shared`] is made of.
pub(crate) struct Settings {
    pub(crate) scenes: Option<SceneRouter>,
    pub(crate) keys: ApiKeys,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_runs_per_key: usize,
    pub(crate) requests_per_minute: Option<NonZeroU32>,
    pub(crate) keep_alive: Duration,
    pub(crate) render_run: RenderRun,
    pub(crate) readiness_details: Option<ReadinessDetails>,
    pub(crate) store: Arc<dyn ConversationStore>,
    pub(crate) run_retention: Duration,
    pub(crate) max_ended_runs_per_key: usize,
    pub(crate) max_sessions_per_key: usize,
}

impl Shared {
    pub(crate) fn new(agent: Agent, settings: Settings) -> Self {
        Self {
            agent,
            scenes: settings.scenes,
            keys: settings.keys,
            max_body_bytes: settings.max_body_bytes,
            max_runs_per_key: settings.max_runs_per_key,
            rate: settings.requests_per_minute.map(RequestRate::per_minute),
            keep_alive: settings.keep_alive,
            render_run: settings.render_run,
            readiness_details: settings.readiness_details,
            store: settings.store,
            runs: RunRegistry::new(settings.run_retention, MAX_ENDED_RUNS, settings.max_ended_runs_per_key),
            session_locks: SessionLocks::default(),
            max_sessions_per_key: settings.max_sessions_per_key,
            session_index: SessionIndex::new(REFRESH),
            ready: AtomicBool::new(true),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// From now on `/readyz` answers 503 and no run starts.
    pub(crate) fn stop_taking_requests(&self) {
        self.ready.store(false, Ordering::SeqCst);
    }

    /// Whether runs are taken.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    /// A run slot of `caller`, or [`ApiError::TooManyRuns`].
    pub(crate) fn run_slot(self: &Arc<Self>, caller: Caller) -> Result<RunSlot, ApiError> {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
        let runs = in_flight.entry(caller.0).or_insert(0);
        if *runs >= self.max_runs_per_key {
            return Err(ApiError::TooManyRuns {
                limit: self.max_runs_per_key,
            });
        }
        *runs += 1;
        Ok(RunSlot {
            shared: Arc::clone(self),
            key: caller.0,
        })
    }

    /// The JSON body, or the error that says what is wrong with it (413
    /// over the size limit, 408 past the body timeout).
    pub(crate) fn body<T>(&self, body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
        let rejection = match body {
            Ok(Json(value)) => return Ok(value),
            Err(rejection) => rejection,
        };
        if let Some(timeout) = crate::body_deadline::timed_out(&rejection) {
            return Err(ApiError::BodyTimeout {
                millis: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            });
        }
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Err(ApiError::TooLarge {
                limit: self.max_body_bytes,
            });
        }
        Err(ApiError::InvalidRequest(rejection.body_text()))
    }
}

/// The caller of a `/v1` request: a configured key, presented as a bearer
/// token. Rejects the request with 401 otherwise.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller(pub(crate) KeyId);

impl FromRequestParts<Arc<Shared>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<Shared>) -> Result<Self, Self::Rejection> {
        let token = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(ApiError::Unauthorized)?;
        let caller = state.keys.identify(token).ok_or(ApiError::Unauthorized)?;
        if let Some(rate) = &state.rate {
            rate.check(caller)?;
        }
        Ok(Caller(caller))
    }
}

/// One run in flight for a key; the slot is given back when it is dropped
/// (the run ended, or its client went away).
pub(crate) struct RunSlot {
    shared: Arc<Shared>,
    key: KeyId,
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        let mut in_flight = self.shared.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(runs) = in_flight.get_mut(&self.key) {
            *runs = runs.saturating_sub(1);
            if *runs == 0 {
                in_flight.remove(&self.key);
            }
        }
    }
}

/// `GET /healthz`: the process answers.
pub(crate) async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// `GET /readyz`: 200 while requests are taken, 503 once shutting down;
/// with the [details](crate::Server::readiness_details), when set.
pub(crate) async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let (status, mut body) = if shared.is_ready() {
        (StatusCode::OK, json!({"status": "ready"}))
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, json!({"status": "shutting_down"}))
    };
    if let Some(details) = &shared.readiness_details {
        body["details"] = details();
    }
    (status, Json(body)).into_response()
}
