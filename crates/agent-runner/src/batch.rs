//! One reply's tool calls, planned: which run, which are answered from an
//! identical call of the same reply, which are refused, and which enter
//! the history at all.
//!
//! Identical calls (same name, canonicalised arguments) of one reply are
//! collapsed before the reply enters the history: the model sees one call
//! and one result, the run's record still lists every call (the collapsed
//! ones with [`ToolCallRecord::duplicate_of`](agent_core::ToolCallRecord)).
//! Calls past the per-reply cap are left out of the history the same way and
//! recorded as not run.
//!
//! A call that runs is shared (`Arc`) between the reply's entries and the
//! calls to run, so planning and running a call copies none of it; saved,
//! each is written out whole, as before.

use std::sync::Arc;

use agent_core::ToolCall;
use serde::{Deserialize, Serialize};

use crate::history::call_key;
use crate::loops::Cycle;
use crate::step::ToolOutcome;

/// What happens to one call of a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "slot", rename_all = "snake_case")]
pub(crate) enum Slot {
    /// In the history, answered by the outcome at this index of `to_run`.
    Run { index: usize },
    /// In the history, not run: answered with this error.
    Rejected { message: String },
    /// Left out of the history: an identical call earlier in the reply (id
    /// `of`) runs instead; recorded with that call's outcome.
    Collapsed { index: usize, of: String },
    /// Left out of the history and not run: recorded with this error.
    Dropped { message: String },
}

impl Slot {
    /// Whether the call and its result enter the history.
    pub(crate) fn in_history(&self) -> bool {
        matches!(self, Self::Run { .. } | Self::Rejected { .. })
    }
}

/// The plan for one reply's calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Batch {
    /// Every call of the reply, in the order the model wrote them, with what
    /// happens to it.
    pub entries: Vec<(Arc<ToolCall>, Slot)>,
    /// The calls to execute, each once (shared with their entries).
    pub to_run: Vec<Arc<ToolCall>>,
    /// The cycle of rounds this reply completes, when it asked for the
    /// calls of the previous reply again, or went round the same two or
    /// three rounds twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_cycle: Option<Cycle>,
    /// The calls came back structured (results go back as tool messages).
    pub structured: bool,
    /// Outcomes of calls of `to_run` (same index) that finished before the
    /// others: a saved state resumed later does not run them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finished: Vec<Option<ToolOutcome>>,
    /// The call keys of `to_run`, made while planning, until the loop
    /// detector takes them ([`signature`](Self::signature)); not saved.
    #[serde(skip)]
    run_keys: Vec<String>,
}

/// How a reply's calls are planned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchPolicy {
    /// Collapse identical calls.
    pub deduplicate: bool,
    /// At most this many calls of one reply enter the history (0 = no cap).
    pub max_calls: usize,
}

impl Batch {
    /// Plans `calls` (readable calls, in order) and `rejected` (attempts that
    /// could not be read, with the reason for the model).
    pub(crate) fn plan(
        calls: impl IntoIterator<Item = ToolCall, IntoIter: ExactSizeIterator>,
        rejected: Vec<(ToolCall, String)>,
        policy: BatchPolicy,
        structured: bool,
    ) -> Self {
        let calls = calls.into_iter();
        let wanted = calls.len() + rejected.len();
        let mut entries = Vec::with_capacity(wanted);
        let mut to_run: Vec<Arc<ToolCall>> = Vec::with_capacity(calls.len());
        let mut run_keys: Vec<String> = Vec::with_capacity(calls.len());
        let mut kept = 0usize;
        let cap = if policy.max_calls == 0 {
            usize::MAX
        } else {
            policy.max_calls
        };
        let over_cap = |name: &str| Slot::Dropped {
            message: crate::prompts::over_call_cap(name, wanted, cap),
        };
        // Calls whose arguments are not JSON are answered in place, in the
        // model's order; attempts that could not be read at all come last.
        let unreadable = |call: &ToolCall| {
            call.raw_arguments
                .as_ref()
                .map(|raw| crate::prompts::unreadable_arguments(&call.name, raw))
        };
        let readable_then_rejected = calls
            .map(|call| {
                let rejection = unreadable(&call);
                (call, rejection)
            })
            .chain(rejected.into_iter().map(|(call, message)| (call, Some(message))));
        for (call, rejection) in readable_then_rejected {
            let call = Arc::new(call);
            let slot = if let Some(message) = rejection {
                if kept < cap {
                    kept += 1;
                    Slot::Rejected { message }
                } else {
                    over_cap(&call.name)
                }
            } else {
                let key = call_key(&call);
                let earlier = policy
                    .deduplicate
                    .then(|| run_keys.iter().position(|k| *k == key))
                    .flatten();
                if let Some(index) = earlier {
                    Slot::Collapsed {
                        index,
                        of: to_run[index].id.clone(),
                    }
                } else if kept < cap {
                    kept += 1;
                    to_run.push(Arc::clone(&call));
                    run_keys.push(key);
                    Slot::Run {
                        index: to_run.len() - 1,
                    }
                } else {
                    over_cap(&call.name)
                }
            };
            entries.push((call, slot));
        }
        Self {
            entries,
            to_run,
            loop_cycle: None,
            structured,
            finished: Vec::new(),
            run_keys,
        }
    }

    /// The outcome recorded for call `index` of `to_run`, if it finished.
    pub(crate) fn finished(&self, index: usize) -> Option<&ToolOutcome> {
        self.finished.get(index).and_then(Option::as_ref)
    }

    /// The sorted keys of the calls that run: two replies with the same
    /// signature asked for the same work, whatever the order of their calls.
    /// The keys made while planning are taken, not made again.
    pub(crate) fn signature(&mut self) -> Vec<String> {
        let mut keys = std::mem::take(&mut self.run_keys);
        if keys.len() != self.to_run.len() {
            return crate::loops::signature(self.to_run.iter().map(|call| &**call));
        }
        keys.sort_unstable();
        keys
    }

    /// Whether every call of the reply enters the history.
    pub(crate) fn keeps_every_call(&self) -> bool {
        self.entries.iter().all(|(_, slot)| slot.in_history())
    }

    /// The calls that enter the history, in order.
    pub(crate) fn history_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.entries
            .iter()
            .filter(|(_, slot)| slot.in_history())
            .map(|(call, _)| &**call)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall::new(id, name, arguments)
    }

    const POLICY: BatchPolicy = BatchPolicy {
        deduplicate: true,
        max_calls: 16,
    };

    #[test]
    fn identical_calls_collapse_onto_the_first() {
        let batch = Batch::plan(
            vec![
                call("a", "get_weather", json!({"location": "Paris", "units": "celsius"})),
                call("b", "get_weather", json!({"units": "celsius", "location": "Paris"})),
                call("c", "get_weather", json!({"location": "Oslo"})),
            ],
            Vec::new(),
            POLICY,
            true,
        );
        assert_eq!(batch.to_run.len(), 2);
        assert_eq!(
            batch.entries[1].1,
            Slot::Collapsed {
                index: 0,
                of: "a".into()
            }
        );
        assert_eq!(
            batch.history_calls().map(|call| call.id.as_str()).collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert!(!batch.keeps_every_call());
    }

    #[test]
    fn without_dedup_every_call_runs() {
        let calls = vec![call("a", "t", json!({})), call("b", "t", json!({}))];
        let batch = Batch::plan(
            calls,
            Vec::new(),
            BatchPolicy {
                deduplicate: false,
                max_calls: 16,
            },
            true,
        );
        assert_eq!(batch.to_run.len(), 2);
        assert!(batch.keeps_every_call());
    }

    #[test]
    fn calls_past_the_cap_are_dropped_and_duplicates_do_not_count() {
        let mut calls: Vec<ToolCall> = (0..5).map(|i| call(&format!("c{i}"), "t", json!({"i": i}))).collect();
        calls.insert(1, call("dup", "t", json!({"i": 0})));
        let rejected = vec![(call("x", "tool_call", serde_json::Value::Null), "unreadable".to_owned())];
        let batch = Batch::plan(
            calls,
            rejected,
            BatchPolicy {
                deduplicate: true,
                max_calls: 3,
            },
            true,
        );
        assert_eq!(
            batch.history_calls().map(|call| call.id.as_str()).collect::<Vec<_>>(),
            ["c0", "c1", "c2"]
        );
        assert_eq!(batch.to_run.len(), 3);
        let dropped: Vec<&str> = batch
            .entries
            .iter()
            .filter(|(_, slot)| matches!(slot, Slot::Dropped { .. }))
            .map(|(call, _)| call.id.as_str())
            .collect();
        assert_eq!(dropped, ["c3", "c4", "x"]);
        let Slot::Dropped { message } = &batch.entries[4].1 else {
            panic!("{:?}", batch.entries[4]);
        };
        assert!(
            message.contains("asked for 7 tool calls and at most 3 run per reply"),
            "{message}"
        );
    }

    #[test]
    fn a_cap_of_zero_is_no_cap() {
        let calls: Vec<ToolCall> = (0..40).map(|i| call(&format!("c{i}"), "t", json!({"i": i}))).collect();
        let batch = Batch::plan(
            calls,
            Vec::new(),
            BatchPolicy {
                deduplicate: true,
                max_calls: 0,
            },
            true,
        );
        assert_eq!(batch.to_run.len(), 40);
    }

    #[test]
    fn unreadable_arguments_are_rejected_in_place() {
        let mut bad = call("b", "t", serde_json::Value::Null);
        bad.raw_arguments = Some("{\"i\": ".into());
        let mut batch = Batch::plan(vec![call("a", "t", json!({})), bad], Vec::new(), POLICY, true);
        assert!(matches!(&batch.entries[1].1, Slot::Rejected { message } if message.contains("not valid JSON")));
        let key = crate::history::call_key(&batch.to_run[0]);
        assert_eq!(batch.signature(), std::slice::from_ref(&key));
        assert_eq!(batch.signature(), [key], "made again once the planned keys are taken");
    }
}
