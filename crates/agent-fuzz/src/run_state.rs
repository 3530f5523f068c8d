//! `run_state`: a saved run read back and resumed.

use agent_runner::SavedRun;
use serde_json::Value;

use crate::agent::agent;
use crate::runtime::block_on;

/// Reads `data` as a run saved in a store (`{"format": 1, "state": ...}`)
/// and resumes it with the fuzz agent: an unreadable or tampered state is a
/// typed error ([`agent_runner::SavedRunError`], a refusal or a failed run),
/// never a panic; a resumed run ends.
pub fn run_state(data: &[u8]) {
    let Ok(saved) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(state) = SavedRun::decode(saved) else {
        return;
    };
    let agent = agent();
    let Ok(state) = agent.restore(state) else {
        return;
    };
    let _ = block_on(async { agent.resume(state).await });
}

/// Runs of the fuzz agent as a store saves them, at the steps a crash can
/// leave them (before the first model call, with tool calls to run, with a
/// conversation before it), by file name: the seeds of [`run_state`].
pub fn saved_runs() -> Vec<(&'static str, Vec<u8>)> {
    use std::time::Duration;

    use agent_core::{Message, ToolCall};
    use agent_runner::SAVED_RUN_FORMAT;
    use serde_json::json;

    let agent = agent();
    let fresh = agent.start(Vec::new(), "Note that the meeting moved to 3 pm.");
    let mut with_calls = fresh.clone();
    let _ = with_calls.next_step();
    let reply = agent_testing::response::with_calls(
        "Noting it.",
        vec![
            ToolCall::new("call_1", "note", json!({"text": "meeting at 3 pm"})),
            ToolCall::new("call_2", "note", json!({"text": 3})),
        ],
    );
    if let Err(error) = with_calls.on_model_response(reply, Duration::from_millis(5)) {
        panic!("the fuzz run refused a reply: {error}");
    }
    let history = vec![
        Message::user("Hello"),
        Message::Assistant(agent_testing::response::text("Hi! What shall I note?").message),
    ];
    let continued = agent.start(history, "The budget is 12 €.");
    [
        ("fresh.json", fresh),
        ("tool_calls.json", with_calls),
        ("continued.json", continued),
    ]
    .into_iter()
    .map(|(name, state)| {
        let saved = SavedRun {
            format: SAVED_RUN_FORMAT,
            state,
        };
        match serde_json::to_vec_pretty(&saved) {
            Ok(bytes) => (name, bytes),
            Err(error) => panic!("a run state could not be written: {error}"),
        }
    })
    .collect()
}

/// Whether the fuzz agent takes `state` back (holds it to its policy
/// without refusing it).
pub fn restores(state: agent_runner::RunState) -> bool {
    agent().restore(state).is_ok()
}
