//! Loop detection: the model asking for the same work over and over.
//!
//! Each round of tool calls is reduced to its signature, the sorted
//! canonical keys of the calls that run (name plus arguments with object keys
//! sorted; the order of calls within a round does not matter). A loop is the
//! last `n` rounds repeating the `n` before them, for a cycle of `n` = 1 to
//! [`MAX_CYCLE`] rounds:
//!
//! - `A A`: the same round twice in a row (the repetition detected from the
//!   start);
//! - `A B A B`: two rounds alternating, each seen twice;
//! - `A B C A B C`: three rounds gone through twice.
//!
//! Like the repetition check it generalises, only the calls are compared,
//! not their results. A round in which nothing ran (every call unreadable or
//! refused) belongs to no cycle, and rounds that change (paging on, or
//! coming back to one call between different ones: `A B A C`) never form
//! one.

use serde::{Deserialize, Serialize};

#[cfg(doc)]
use crate::history::call_key;

/// The longest cycle looked for, in rounds. Longer ones are left to the
/// iteration limit: spotting them takes at least eight rounds.
pub(crate) const MAX_CYCLE: usize = 3;

/// The longest rendering of a call's arguments in a message, in characters.
const MAX_ARGUMENT_CHARS: usize = 60;

/// The rounds of a cycle the model has gone through twice, named for the
/// run's stop detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Cycle {
    /// Each round of the cycle in the order the model made them: its calls
    /// as `name(arguments)`, joined with ` + `.
    pub rounds: Vec<String>,
}

impl Cycle {
    /// The one-round cycle of `calls` made again.
    pub(crate) fn of_calls(calls: &[agent_core::ToolCall]) -> Self {
        let keys: Vec<String> = calls.iter().map(crate::history::call_key).collect();
        Self {
            rounds: vec![name_round(&keys)],
        }
    }

    /// "the model repeated the same tool calls: …", "the model alternated
    /// between the same tool calls twice: …, then …".
    pub(crate) fn describe(&self) -> String {
        match self.rounds.as_slice() {
            [round] => format!("the model repeated the same tool calls: {round}"),
            [first, second] => {
                format!("the model alternated between the same tool calls twice: {first}, then {second}")
            }
            rounds => format!(
                "the model cycled through the same tool calls twice: {}",
                rounds.join(", then ")
            ),
        }
    }
}

/// The signature of a round of `calls`: their sorted [`call_key`]s.
pub(crate) fn signature<'a>(calls: impl IntoIterator<Item = &'a agent_core::ToolCall>) -> Vec<String> {
    let mut keys: Vec<String> = calls.into_iter().map(crate::history::call_key).collect();
    keys.sort_unstable();
    keys
}

/// The latest rounds of a run, enough to spot the longest cycle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LoopDetector {
    /// Signatures of the latest rounds, oldest first; at most `2 * MAX_CYCLE`.
    recent: Vec<Vec<String>>,
}

impl LoopDetector {
    /// Records a round by its signature (the sorted [`call_key`]s of the
    /// calls that run, as [`Batch::signature`](crate::batch::Batch::signature)
    /// gives them), and returns the shortest cycle it completes.
    pub(crate) fn observe(&mut self, signature: Vec<String>) -> Option<Cycle> {
        self.recent.push(signature);
        let excess = self.recent.len().saturating_sub(2 * MAX_CYCLE);
        self.recent.drain(..excess);
        (1..=MAX_CYCLE).find_map(|period| self.cycle_of(period))
    }

    /// Whether `signature` (sorted call keys) is the latest round's: asking
    /// for exactly the previous round's work again.
    pub(crate) fn is_last_round(&self, signature: &[String]) -> bool {
        self.recent.last().is_some_and(|last| last.as_slice() == signature)
    }

    /// The cycle of `period` rounds ending with the latest round, if the
    /// rounds before repeat it.
    fn cycle_of(&self, period: usize) -> Option<Cycle> {
        let start = self.recent.len().checked_sub(2 * period)?;
        let (earlier, latest) = self.recent[start..].split_at(period);
        let repeats = latest.iter().all(|round| !round.is_empty()) && earlier == latest;
        repeats.then(|| Cycle {
            rounds: latest.iter().map(|round| name_round(round)).collect(),
        })
    }
}

/// `name(arguments)` for each call key of a round, joined with ` + `.
fn name_round(keys: &[String]) -> String {
    keys.iter().map(|key| name_call(key)).collect::<Vec<_>>().join(" + ")
}

/// `name(arguments)` from a [`call_key`], the arguments cut to
/// [`MAX_ARGUMENT_CHARS`].
fn name_call(key: &str) -> String {
    let (name, arguments) = key.split_once('\u{0}').unwrap_or((key, ""));
    let shown: String = arguments.chars().take(MAX_ARGUMENT_CHARS).collect();
    let ellipsis = if shown.len() < arguments.len() { "…" } else { "" };
    format!("{name}({shown}{ellipsis})")
}

#[cfg(test)]
mod tests {
    use agent_core::ToolCall;
    use serde_json::json;

    use super::*;
    use crate::history::call_key;

    /// The signature of a round of these calls.
    fn round(calls: &[(&str, serde_json::Value)]) -> Vec<String> {
        let mut keys: Vec<String> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| call_key(&ToolCall::new(format!("c{i}"), *name, arguments.clone())))
            .collect();
        keys.sort_unstable();
        keys
    }

    /// What `observe` returns for each round of `rounds`, as cycle lengths.
    fn detections(rounds: &[Vec<String>]) -> Vec<Option<usize>> {
        let mut detector = LoopDetector::default();
        rounds
            .iter()
            .map(|round| detector.observe(round.clone()).map(|cycle| cycle.rounds.len()))
            .collect()
    }

    #[test]
    fn the_shortest_cycle_is_found_as_soon_as_it_has_gone_round_twice() {
        let a = round(&[("t", json!({"x": 1}))]);
        let b = round(&[("t", json!({"x": 2}))]);
        let c = round(&[("u", json!({}))]);
        assert_eq!(detections(&[a.clone(), a.clone()]), [None, Some(1)]);
        assert_eq!(
            detections(&[a.clone(), b.clone(), a.clone(), b.clone()]),
            [None, None, None, Some(2)]
        );
        assert_eq!(
            detections(&[a.clone(), b.clone(), c.clone(), a.clone(), b.clone(), c.clone()]),
            [None, None, None, None, None, Some(3)]
        );
        // A cycle that starts late, after rounds that differ.
        assert_eq!(
            detections(&[c.clone(), b.clone(), a.clone(), c.clone(), a.clone(), c.clone()]),
            [None, None, None, None, None, Some(2)]
        );
    }

    #[test]
    fn progress_and_empty_rounds_are_not_cycles() {
        let page = |n: i64| round(&[("page", json!({ "n": n }))]);
        assert_eq!(detections(&(1..=8).map(page).collect::<Vec<_>>()), [None; 8]);
        assert_eq!(
            detections(&[page(1), page(2), page(1), page(3), page(1), page(2)]),
            [None; 6]
        );
        assert_eq!(detections(&[Vec::new(), Vec::new()]), [None, None]);
        assert_eq!(detections(&[page(1), Vec::new(), page(1), Vec::new()]), [None; 4]);
        // Cycles of four rounds are past the window.
        assert_eq!(
            detections(&[page(1), page(2), page(3), page(4), page(1), page(2), page(3), page(4)]),
            [None; 8]
        );
    }

    #[test]
    fn a_cycle_names_its_rounds_in_order_with_long_arguments_cut() {
        let mut detector = LoopDetector::default();
        let long = "y".repeat(100);
        let a = round(&[("search", json!({ "q": long })), ("echo", json!({"b": 1, "a": 2}))]);
        let b = round(&[("weather", json!({"location": "Oslo"}))]);
        for signature in [&a, &b, &a] {
            assert_eq!(detector.observe(signature.clone()), None);
        }
        let cycle = detector.observe(b).expect("a cycle of two");
        let cut = format!("search({{\"q\":\"{}…)", "y".repeat(54));
        assert_eq!(
            cycle.describe(),
            format!(
                r#"the model alternated between the same tool calls twice: echo({{"a":2,"b":1}}) + {cut}, then weather({{"location":"Oslo"}})"#
            )
        );
        assert_eq!(
            Cycle {
                rounds: vec!["a()".into()]
            }
            .describe(),
            "the model repeated the same tool calls: a()"
        );
    }
}
