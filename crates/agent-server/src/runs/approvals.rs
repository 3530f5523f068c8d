//! Runs paused for the user's approval, decided over HTTP:
//! `POST /v1/runs/{id}/approvals`.
//!
//! A run whose model asks for calls of tools that need approval ends with
//! `awaiting_approval`, listing the calls. What it needs to go on is kept
//! ([`Continuation`]): a session's run stays saved in its session (the
//! checkpoint it saved after its last step), a run without a session keeps
//! its paused state in memory, in its registry entry ([`HeldState`]), for
//! as long as ended runs are kept. The body decides every waiting call
//! once; the run then goes on under the same id.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{ApprovalDecision, StoreError, ToolCall};
use agent_runner::{RunCheckpoints, RunState};
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;

use super::registry::RunStatus;
use crate::error::ApiError;
use crate::sessions::SessionRef;
use crate::state::{Caller, Shared};

/// What `POST /v1/runs/{id}/approvals` takes: a decision for each waiting
/// call, and whether to wait for the run's end.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalsRequest {
    /// The calls to run as the model asked.
    #[serde(default)]
    approve: Vec<String>,
    /// The calls not to run; the model is told, with the reason.
    #[serde(default)]
    deny: Vec<Denial>,
    /// The calls to run with other arguments.
    #[serde(default)]
    edit: Vec<Edit>,
    /// Answer when the run ends (default) or at once.
    #[serde(default = "super::answer_at_the_end")]
    wait: bool,
}

/// A call of `deny`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Denial {
    id: String,
    #[serde(default)]
    reason: Option<String>,
}

/// A call of `edit`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    id: String,
    arguments: Value,
}

/// Each waiting call's id and decision, in the order the calls wait.
pub(crate) type Decisions = Vec<(String, ApprovalDecision)>;

impl ApprovalsRequest {
    /// The decisions, when they decide each of the `pending` calls exactly
    /// once (and edits give an object of arguments); otherwise a 400 that
    /// names the ids not waiting, decided twice, and not decided.
    fn decisions(self, pending: &[ToolCall]) -> Result<Decisions, ApiError> {
        let mut given: Vec<(String, ApprovalDecision)> = Vec::new();
        given.extend(self.approve.into_iter().map(|id| (id, ApprovalDecision::Approve)));
        given.extend(
            self.deny
                .into_iter()
                .map(|denial| (denial.id, ApprovalDecision::Deny { reason: denial.reason })),
        );
        for edit in self.edit {
            if !edit.arguments.is_object() {
                return Err(ApiError::InvalidRequest(format!(
                    "`edit` of `{}`: `arguments` must be a JSON object, the tool's arguments",
                    edit.id
                )));
            }
            given.push((
                edit.id,
                ApprovalDecision::Edit {
                    arguments: edit.arguments,
                },
            ));
        }
        let waiting: Vec<&str> = pending.iter().map(|call| call.id.as_str()).collect();
        let mut seen = BTreeSet::new();
        let (mut unknown, mut twice) = (BTreeSet::new(), BTreeSet::new());
        for (id, _) in &given {
            if !waiting.contains(&id.as_str()) {
                unknown.insert(id.as_str());
            } else if !seen.insert(id.as_str()) {
                twice.insert(id.as_str());
            }
        }
        let undecided: Vec<&str> = waiting.iter().copied().filter(|id| !seen.contains(id)).collect();
        if unknown.is_empty() && twice.is_empty() && undecided.is_empty() {
            let mut decisions = given;
            decisions.sort_by_key(|(id, _)| waiting.iter().position(|waiting| waiting == id));
            return Ok(decisions);
        }
        let mut problems = Vec::new();
        for (what, ids) in [
            ("not waiting for approval", unknown.into_iter().collect::<Vec<_>>()),
            ("decided more than once", twice.into_iter().collect()),
            ("not decided", undecided),
        ] {
            if !ids.is_empty() {
                problems.push(format!("{what}: {}", quoted(&ids)));
            }
        }
        Err(ApiError::InvalidRequest(format!(
            "{}; the run waits for {}: decide each of them once, in `approve`, `deny` or `edit`",
            problems.join("; "),
            quoted(&waiting)
        )))
    }
}

/// `ids` as `` `a`, `b` ``.
fn quoted(ids: &[&str]) -> String {
    let quoted: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
    quoted.join(", ")
}

/// What a paused run needs to go on.
pub(crate) enum Continuation {
    /// Its paused state, held in memory: a run without a session.
    Held(Box<RunState>),
    /// Saved in its session's checkpoint.
    Saved(SessionRef),
}

/// The state of a run without a session, kept when it pauses for approval:
/// its checkpoints, which keep (a copy of) the state only when it waits,
/// so a run that does not pause copies nothing.
#[derive(Default)]
pub(crate) struct HeldState(Mutex<Option<RunState>>);

impl HeldState {
    /// The state the run saved last, if it waits for approval.
    pub(crate) fn take_paused(&self) -> Option<RunState> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        held.filter(RunState::is_awaiting_approval)
    }
}

#[async_trait::async_trait]
impl RunCheckpoints for HeldState {
    async fn save(&self, state: &RunState) -> Result<(), StoreError> {
        let held = state.is_awaiting_approval().then(|| state.clone());
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = held;
        Ok(())
    }
}

/// Takes `decisions` into `state`, when it waits for exactly the calls
/// decided; otherwise why it cannot go on.
pub(crate) fn decide_all(state: &mut RunState, decisions: Decisions) -> Result<(), String> {
    let waiting: BTreeSet<String> = state.pending_approvals().iter().map(|call| call.id.clone()).collect();
    let decided: BTreeSet<String> = decisions.iter().map(|(id, _)| id.clone()).collect();
    if waiting != decided {
        let list = |ids: &BTreeSet<String>| {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            if ids.is_empty() {
                "none".to_owned()
            } else {
                quoted(&ids)
            }
        };
        return Err(format!(
            "the paused run changed since it paused: it waits for {} now, the decisions were about {}",
            list(&waiting),
            list(&decided)
        ));
    }
    for (id, decision) in decisions {
        state.decide(&id, decision).map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// `POST /v1/runs/{id}/approvals`: decides every call the paused run waits
/// for and lets it go on under the same id; answers as `POST /v1/runs`
/// does (the record when it ends, or `202` at once with `"wait": false`).
/// 404 for a run of another key (or forgotten), 409 when it does not wait
/// for approval (running, ended, cancelled while paused, or a session run
/// whose session no longer holds it), 400 when the body does not decide
/// each waiting call exactly once.
pub(crate) async fn decide_run(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Path(id): Path<String>,
    body: Result<Json<ApprovalsRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let entry = super::find(&shared, caller, &id)?;
    let request = shared.body(body)?;
    match (entry.status(), entry.session.as_deref()) {
        (RunStatus::AwaitingApproval(_), Some(session)) => {
            let (_, meta) = shared.session(caller, session).await?;
            if !meta.has_checkpoint {
                return Err(ApiError::Conflict(format!(
                    "the session `{session}` no longer holds the paused run `{id}` (a later turn of the session \
                     replaced it)"
                )));
            }
        }
        (RunStatus::AwaitingApproval(_), None) => {}
        (RunStatus::Running, _) => {
            return Err(ApiError::Conflict(format!(
                "the run `{id}` does not wait for approval: it is running"
            )));
        }
        (RunStatus::Ended(_), _) => {
            return Err(ApiError::Conflict(format!(
                "the run `{id}` does not wait for approval: it ended"
            )));
        }
    }
    let wait = request.wait;
    shared.go_on(caller, &entry, |pending| request.decisions(pending))?;
    super::respond(&shared, &entry, wait).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pending() -> Vec<ToolCall> {
        ["call_1", "call_2", "call_3"]
            .into_iter()
            .map(|id| ToolCall::new(id, "book", json!({"seat": "12A"})))
            .collect()
    }

    fn request(body: Value) -> ApprovalsRequest {
        serde_json::from_value(body).unwrap_or_else(|e| panic!("{e}"))
    }

    fn refusal(body: Value) -> String {
        match request(body).decisions(&pending()) {
            Ok(decisions) => panic!("accepted: {decisions:?}"),
            Err(error) => {
                assert!(matches!(error, ApiError::InvalidRequest(_)), "{error:?}");
                error.to_string()
            }
        }
    }

    #[test]
    fn each_waiting_call_gets_its_decision_in_the_order_they_wait() {
        let decisions = request(json!({
            "edit": [{"id": "call_1", "arguments": {"seat": "14C"}}],
            "deny": [{"id": "call_3", "reason": "too expensive"}],
            "approve": ["call_2"],
        }))
        .decisions(&pending())
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            decisions,
            [
                (
                    "call_1".to_owned(),
                    ApprovalDecision::Edit {
                        arguments: json!({"seat": "14C"})
                    }
                ),
                ("call_2".to_owned(), ApprovalDecision::Approve),
                (
                    "call_3".to_owned(),
                    ApprovalDecision::Deny {
                        reason: Some("too expensive".to_owned())
                    }
                ),
            ]
        );
        assert!(request(json!({})).wait, "waits by default");
    }

    #[test]
    fn a_body_that_does_not_decide_each_waiting_call_once_names_the_ids() {
        let error = refusal(json!({"approve": ["call_1", "call_9", "call_1"], "deny": [{"id": "call_2"}]}));
        assert!(error.contains("not waiting for approval: `call_9`"), "{error}");
        assert!(error.contains("decided more than once: `call_1`"), "{error}");
        assert!(error.contains("not decided: `call_3`"), "{error}");
        assert!(error.contains("waits for `call_1`, `call_2`, `call_3`"), "{error}");
        let error = refusal(json!({}));
        assert!(error.contains("not decided: `call_1`, `call_2`, `call_3`"), "{error}");
        let error = refusal(json!({"edit": [{"id": "call_1", "arguments": "14C"}]}));
        assert!(error.contains("must be a JSON object"), "{error}");
    }

    fn key() -> crate::auth::KeyId {
        let keys = crate::auth::ApiKeys::from_hashes([crate::hash_key("a")]).unwrap_or_else(|e| panic!("{e}"));
        keys.identify("a").unwrap_or_else(|| panic!("a key"))
    }

    fn paused_outcome() -> super::super::registry::RunOutcome {
        let mut result = super::super::execute::failed_result(String::new(), "p", "m");
        result.stop_reason = agent_core::RunEnd::AwaitingApproval;
        result.pending_approvals = pending();
        super::super::registry::RunOutcome {
            result: Arc::new(result),
            store_error: None,
        }
    }

    #[tokio::test]
    async fn a_paused_run_goes_on_once_under_its_id_and_its_log_goes_on_too() {
        use futures::StreamExt;
        let registry = super::super::registry::RunRegistry::new(std::time::Duration::from_secs(60), 10, 10);
        let entry = registry.insert(key(), None, agent_core::CancellationToken::new());
        entry.push(agent_core::AgentEvent::TextDelta { text: "one".into() });
        let saved = Continuation::Saved(SessionRef {
            id: "sess".into(),
            stored: "tag.sess".into(),
        });
        registry.end_with(&entry, paused_outcome(), Some(saved));
        assert!(matches!(entry.status(), RunStatus::AwaitingApproval(_)));
        assert_eq!(registry.running(), 0);

        let refused = registry.resume(&entry, |_| Err::<(), _>(ApiError::InvalidRequest("no".into())));
        assert!(matches!(refused, Err(ApiError::InvalidRequest(_))));
        assert!(
            matches!(entry.status(), RunStatus::AwaitingApproval(_)),
            "a refusal changes nothing"
        );

        let resumed = registry.resume(&entry, |waiting| Ok(waiting.len()));
        assert!(matches!(resumed, Ok((Continuation::Saved(_), 3))));
        assert!(matches!(entry.status(), RunStatus::Running));
        assert_eq!(registry.running(), 1);
        let again = registry.resume(&entry, |_| Ok(()));
        assert!(matches!(again, Err(ApiError::Conflict(message)) if message.contains("running")));

        entry.push(agent_core::AgentEvent::TextDelta { text: "two".into() });
        registry.end(&entry, paused_outcome());
        assert!(matches!(entry.status(), RunStatus::Ended(_)), "no continuation: ended");
        assert_eq!(registry.running(), 0);
        let numbered: Vec<Option<usize>> = entry.numbered_events(0).map(|(number, _)| number).collect().await;
        assert_eq!(numbered, [Some(1), Some(2), None]);
        let after: Vec<Option<usize>> = entry.numbered_events(1).map(|(number, _)| number).collect().await;
        assert_eq!(after, [Some(2), None], "after the first");
        assert!(registry.get(&entry.id, key()).is_some());
    }

    #[test]
    fn unknown_fields_are_refused() {
        for body in [
            json!({"approve": ["call_1"], "reject": []}),
            json!({"deny": [{"id": "call_1", "why": "no"}]}),
            json!({"edit": [{"id": "call_1"}]}),
        ] {
            assert!(
                serde_json::from_value::<ApprovalsRequest>(body.clone()).is_err(),
                "{body}"
            );
        }
    }
}
