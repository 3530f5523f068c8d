//! The runs API.
//!
//! - `POST /v1/runs`: `{"prompt", "session"?, "messages"?, "wait"?,
//!   "options"?}` runs
//!   one turn. It continues the caller's `session` (its turn is stored
//!   there) or the `messages` given (a previous record's), or starts a new
//!   conversation. By default the answer is the run's record when it ends
//!   (its id in the `x-run-id` header); with `"wait": false` it is a
//!   `202 Accepted` naming the run at once, to follow with the next two.
//!   `options` (`max_iterations`, `max_tokens`, `temperature`) may lower
//!   the server's limits for this run, never raise them.
//! - `GET /v1/runs/{id}`: the run's status (`running`,
//!   `awaiting_approval` or `ended`) and, once it ended or paused, its
//!   record.
//! - `GET /v1/runs/{id}/events`: server-sent events of the run from its
//!   first event, each named by its `type` with the event as JSON data and
//!   numbered by its SSE `id`, live until the run ends or pauses;
//!   `Last-Event-ID: N` starts after the `N`th.
//! - `POST /v1/runs/{id}/cancel`: cancels it; it ends soon, keeping (and
//!   storing) what it did.
//! - `POST /v1/runs/{id}/approvals`: decides the calls a paused run waits
//!   for, and the run goes on (below).
//!
//! ## Approval
//!
//! A run whose model asks for calls of tools that need approval pauses
//! before running any of them: its record has `stop_reason:
//! "awaiting_approval"` and lists the calls in `pending_approvals` (`id`,
//! `name`, `arguments`); its status is `awaiting_approval`, with the calls
//! and an `approvals_url` (also added to the record `POST /v1/runs`
//! answers with). A session's run stays saved in its session (its turn is
//! not stored; the session shows as `interrupted`); a run without a
//! session keeps its paused state in memory, as long as ended runs are
//! kept (the retention and the per-key cap).
//!
//! ```json
//! POST /v1/runs/run_…/approvals
//! {"approve": ["call_1"],
//!  "deny": [{"id": "call_2", "reason": "too expensive"}],
//!  "edit": [{"id": "call_3", "arguments": {"seat": "14C"}}],
//!  "wait": true}
//! ```
//!
//! Every key is optional, but the body must decide each waiting call
//! exactly once: an id that is not waiting, one decided twice, or a
//! waiting call left undecided is a 400 naming them (as is an edit whose
//! `arguments` is not an object). A denied call never runs: the model is
//! told the user refused it, with the reason. An edited one runs with the
//! given arguments, which the record and the history show. The run then
//! goes on under the same id (its status is `running` again) and the
//! answer is as `POST /v1/runs`'s: the record when it ends (or pauses
//! again), or `202` at once with `"wait": false`. Its events go on in the
//! same log: a new `GET /v1/runs/{id}/events` follows it, from the first
//! event or, with `Last-Event-ID`, after the last one seen. A session run
//! stores its turn once it ends. A run that does not wait for approval
//! (running, ended, cancelled while paused, a scene's run, or a session
//! run whose session a later turn replaced) is a 409; another key's run
//! is a 404. The session's paused run can also be resumed by
//! `POST /v1/sessions/{id}/resume` (once its run here is forgotten, say):
//! it pauses again at once, as a new run to decide.
//!
//! Only the key that started a run sees it: any other gets 404.

mod approvals;
mod execute;
mod options;
pub(crate) mod registry;

use std::convert::Infallible;
use std::sync::Arc;

use agent_core::{AgentEvent, Message, RunEnd};
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) use self::approvals::decide_run;
pub(crate) use self::execute::RunStart;
pub(crate) use self::options::RunOptions;
use self::registry::{RunEntry, RunOutcome, RunStatus};
use crate::content::Content;
use crate::error::ApiError;
use crate::state::{Caller, Shared};

/// A run request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunRequest {
    /// The prompt: a string, or OpenAI content parts (`text`, `image_url`,
    /// `input_audio`, `file`).
    prompt: Content,
    /// The caller's session to continue and store the turn in.
    #[serde(default)]
    session: Option<String>,
    /// The conversation to continue when there is no session.
    #[serde(default)]
    messages: Vec<Message>,
    /// Answer when the run ends (default) or at once.
    #[serde(default = "answer_at_the_end")]
    wait: bool,
    /// Limits lowered for this run, and the temperature.
    #[serde(default)]
    options: RunOptions,
}

fn answer_at_the_end() -> bool {
    true
}

/// Handles `POST /v1/runs`. A run that ends early (a limit, a budget, a
/// cancellation) is a record like any other; a failed one is a 502 naming
/// the failure.
pub(crate) async fn create_run(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    body: Result<Json<RunRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let request = shared.body(body)?;
    let (text, attachments) = request.prompt.into_parts("prompt")?;
    if text.trim().is_empty() && attachments.is_empty() {
        return Err(ApiError::InvalidRequest("`prompt` is empty".to_owned()));
    }
    let prompt = Message::user_with(text, attachments);
    let options = request.options.checked(shared.agent.agent_config())?;
    if shared.scenes.is_some() && options != RunOptions::default() {
        return Err(ApiError::InvalidRequest(
            "`options` do not apply: this server routes each prompt to a scene's agent".to_owned(),
        ));
    }
    let start = match request.session {
        Some(_) if !request.messages.is_empty() => {
            return Err(ApiError::InvalidRequest(
                "give `session` or `messages`, not both: a session's history is stored".to_owned(),
            ));
        }
        Some(id) => RunStart::Session {
            prompt,
            session: shared.session(caller, &id).await?.0,
            options,
        },
        None => RunStart::History {
            prompt,
            history: request.messages,
            options,
            keep_paused: true,
        },
    };
    answer(&shared, caller, start, request.wait).await
}

/// What `POST /v1/sessions/{id}/resume` takes: whether to wait.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResumeRequest {
    #[serde(default = "answer_at_the_end")]
    wait: bool,
}

/// Handles `POST /v1/sessions/{id}/resume`: the run of the session that
/// did not end (its instance stopped or crashed, or it paused for the
/// user's approval) goes on from its last step, on any instance sharing the
/// store; it answers as `POST /v1/runs` does. The saved run is held to this
/// server's agent as configured now (calls that need approval wait for it,
/// tools no longer offered do not run, the stricter budgets apply); a saved
/// run of another agent, provider or model fails the run. Its turn goes
/// after whatever the session stored meanwhile. 409 when the session has
/// no such run.
pub(crate) async fn resume_session(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Path(id): Path<String>,
    body: Option<Json<ResumeRequest>>,
) -> Result<Response, ApiError> {
    let wait = body.is_none_or(|Json(request)| request.wait);
    let (session, meta) = shared.session(caller, &id).await?;
    if !meta.has_checkpoint {
        return Err(ApiError::Conflict(format!(
            "the session `{id}` has no interrupted run; POST /v1/runs continues it with a new prompt"
        )));
    }
    answer(&shared, caller, RunStart::Interrupted { session }, wait).await
}

/// Launches the run and answers: at once (`202`) or with its record.
async fn answer(shared: &Arc<Shared>, caller: Caller, start: RunStart, wait: bool) -> Result<Response, ApiError> {
    let entry = shared.launch(caller, start)?;
    respond(shared, &entry, wait).await
}

/// The answer about the run `entry` just started (or went on): at once
/// (`202`, its status) or, once it ends, its record; a record of a run
/// that waits for approval gets its `approvals_url` too (when it is an
/// object).
async fn respond(shared: &Arc<Shared>, entry: &Arc<RunEntry>, wait: bool) -> Result<Response, ApiError> {
    if !wait {
        let started = status(shared, entry, &RunStatus::Running);
        return Ok((StatusCode::ACCEPTED, Json(started)).into_response());
    }
    let outcome = completed(entry).await?;
    if let Some(error) = outcome.store_error {
        return Err(ApiError::Store(format!(
            "the run {} ended but its turn could not be stored ({error}); its record is at /v1/runs/{}",
            entry.id, entry.id
        )));
    }
    let mut record = (shared.render_run)(&outcome.result);
    if let (RunStatus::AwaitingApproval(_), Value::Object(fields)) = (entry.status(), &mut record) {
        fields.insert("approvals_url".to_owned(), approvals_url(entry).into());
    }
    let mut response = Json(record).into_response();
    if let Ok(id) = HeaderValue::from_str(&entry.id) {
        response.headers_mut().insert("x-run-id", id);
    }
    Ok(response)
}

/// The outcome of `entry`'s run once it ends, or the error of a failed
/// one. Dropping this future (the client went away) cancels the run.
pub(crate) async fn completed(entry: &RunEntry) -> Result<RunOutcome, ApiError> {
    let cancel_on_drop = entry.cancel.clone().drop_guard();
    let outcome = entry.ended().await;
    cancel_on_drop.disarm();
    let outcome = outcome.ok_or_else(|| ApiError::RunFailed("the run ended without a record".to_owned()))?;
    if outcome.result.stop_reason == RunEnd::Error {
        let detail = outcome.result.stop_detail.as_deref().unwrap_or("the run failed");
        return Err(ApiError::RunFailed(detail.to_owned()));
    }
    Ok(outcome)
}

/// A run's status: `running`; `awaiting_approval` with its record, the
/// calls it waits for and where to decide them; or `ended` with its record.
fn status(shared: &Shared, entry: &RunEntry, run: &RunStatus) -> Value {
    let (name, outcome) = match run {
        RunStatus::Running => ("running", None),
        RunStatus::AwaitingApproval(outcome) => ("awaiting_approval", Some(outcome)),
        RunStatus::Ended(outcome) => ("ended", Some(outcome)),
    };
    let waiting = match run {
        RunStatus::AwaitingApproval(outcome) => Some(&outcome.result.pending_approvals),
        RunStatus::Running | RunStatus::Ended(_) => None,
    };
    json!({
        "id": entry.id,
        "object": "run",
        "status": name,
        "session": entry.session,
        "created_at": entry.created_at,
        "events_url": format!("/v1/runs/{}/events", entry.id),
        "pending_approvals": waiting.map_or_else(Vec::new, Clone::clone),
        "approvals_url": waiting.map(|_| approvals_url(entry)),
        "record": outcome.map(|outcome| (shared.render_run)(&outcome.result)),
        "store_error": outcome.and_then(|outcome| outcome.store_error.clone()),
    })
}

/// Where the calls a paused run waits for are decided.
fn approvals_url(entry: &RunEntry) -> String {
    format!("/v1/runs/{}/approvals", entry.id)
}

fn find(shared: &Shared, caller: Caller, id: &str) -> Result<Arc<RunEntry>, ApiError> {
    shared
        .runs
        .get(id, caller.0)
        .ok_or_else(|| ApiError::NotFound(format!("no run `{id}` for this API key (ended runs are kept a while)")))
}

/// `GET /v1/runs/{id}`.
pub(crate) async fn get_run(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let entry = find(&shared, caller, &id)?;
    Ok(Json(status(&shared, &entry, &entry.status())))
}

/// `POST /v1/runs/{id}/cancel`. A run that waits for approval ends for
/// good: it can no longer be decided (a session's stays saved in the
/// session, for `POST /v1/sessions/{id}/resume`).
pub(crate) async fn cancel_run(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let entry = find(&shared, caller, &id)?;
    entry.cancel.cancel();
    entry.give_up_continuation();
    Ok((StatusCode::ACCEPTED, Json(status(&shared, &entry, &entry.status()))))
}

/// `GET /v1/runs/{id}/events`: following a run does not hold it; a
/// follower that leaves does not cancel it. Each event of the run's log
/// has its number as its SSE `id`; with `Last-Event-ID: N` the stream
/// starts after the `N`th (a follower of a paused run that goes on sees
/// only what comes after the pause). A malformed one is ignored.
pub(crate) async fn run_events(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let entry = find(&shared, caller, &id)?;
    let after = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let events = entry
        .numbered_events(after)
        .map(|(number, event)| Ok::<_, Infallible>(sse_event(number, &event)));
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(shared.keep_alive))
        .into_response())
}

/// An agent event as a server-sent event named by its type, with its
/// number in the run's log as its id.
fn sse_event(number: Option<usize>, event: &AgentEvent) -> Event {
    let data = serde_json::to_value(event).unwrap_or_default();
    let name = data.get("type").and_then(Value::as_str).unwrap_or("event").to_owned();
    let sse = match number {
        Some(number) => Event::default().id(number.to_string()),
        None => Event::default(),
    };
    sse.event(name).data(data.to_string())
}
