//! `POST /v1/runs`: one turn of the agent, answered with the run's record.

use std::sync::Arc;

use agent_core::{Message, ToolContext};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::state::{Caller, Shared};

/// A run request: the prompt, and the conversation it continues (a previous
/// record's messages; none for a new one).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunRequest {
    prompt: String,
    #[serde(default)]
    messages: Vec<Message>,
}

/// Handles `POST /v1/runs`. A run that ends early (a limit, a budget) is a
/// record like any other; a failed one is a 502 naming the failure.
pub(crate) async fn create_run(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    body: Result<Json<RunRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let request = shared.body(body)?;
    if request.prompt.trim().is_empty() {
        return Err(ApiError::InvalidRequest("`prompt` is empty".to_owned()));
    }
    let _slot = shared.run_slot(caller)?;
    let result = shared
        .agent
        .run(request.messages, request.prompt, &ToolContext::new())
        .await
        .map_err(|error| ApiError::RunFailed(error.to_string()))?;
    Ok(Json((shared.render_run)(&result)))
}
