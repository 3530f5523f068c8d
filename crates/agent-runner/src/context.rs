//! Keeping a run's requests within the model's context window: the size
//! estimate, and the pure parts of a compaction (which messages to elide,
//! where a summary may cut, how the summarised messages are written out).
//! The run does the rest as steps of its state machine.
//!
//! # The estimate
//!
//! A request's input is estimated at one token per four characters of its
//! system prompt, its tool definitions (name, description, JSON Schema) and
//! its messages (text, tool names and arguments, as the token budget counts
//! them): [`estimate_tokens`]. The run then *calibrates* it: after each model call
//! the input tokens the provider reported, divided by the estimate of what
//! was sent, scale later estimates. Only calls estimated at 256 tokens or
//! more calibrate (below that, fixed per-request overheads dominate), a
//! provider that reports no input tokens never does, and the factor stays
//! within 1 to 8: the character count is a floor (four characters a token
//! suits English prose; code, JSON and most other languages take more), and
//! a report past eight times it is taken as a provider quirk.
//!
//! # When a request is compacted
//!
//! Before each model call, when the window is known
//! ([`ContextPolicy::window_tokens`](crate::ContextPolicy), else the
//! catalog's): when the calibrated estimate exceeds `compact_at` × window
//! less the request's `max_tokens` (checked once per model call). And once
//! per call, window known or not, when the provider refuses the request as
//! too long: then summarising happens even if the estimate says the request
//! fits, and with an unknown window step 3 below always follows.
//!
//! The summary request fits the window too: its messages are written out
//! one paragraph each (each cut at 2000 characters), as many turns as fit
//! under `compact_at` of the window with the summary's `max_tokens`.
//!
//! # The steps
//!
//! A *turn* starts at a user message (not one that carries tool results back
//! under the text or ReAct protocol) and runs to the next one.
//!
//! 1. **Elide** large tool results before the most recent turns: content
//!    longer than the policy's threshold becomes
//!    `[tool result elided: 12345 bytes]` (call id, tool name and error flag
//!    stay). Enough when the request then fits.
//! 2. **Summarise** the oldest turns with the model, through the built-in
//!    `summarise_conversation` template: a request without tools whose user
//!    message is the template with the turns written out. The summary
//!    replaces them as one [`Message::System`] starting with
//!    [`SUMMARY_PREFIX`], placed first; a summary already there is
//!    summarised with them. Summaries cut only where a turn starts, so every
//!    tool call stays with its results, and keep the system prompt, the tool
//!    definitions and the most recent turns: as many as the policy keeps,
//!    fewer when those do not fit, always the last user message and
//!    everything after it. A history too long for one summary request is
//!    summarised in rounds, each summary folded into the next.
//! 3. When the request still does not fit (the recent turns themselves are
//!    too large), large tool results in the recent turns are elided too,
//!    except the results of the latest model reply, which the model has not
//!    seen yet.

use std::fmt::Write as _;

use agent_core::{ChatRequest, Message};

use crate::Protocol;
use crate::budget::{CHARS_PER_TOKEN, SchemaChars, fixed_chars, fixed_chars_with, message_chars};

use crate::prompts::ELIDED_PREFIX;
pub use crate::prompts::SUMMARY_PREFIX;

/// The longest a message is written out for a summary, in characters.
const MAX_RENDERED_MESSAGE_CHARS: usize = 2000;

/// Calls estimated below this many tokens do not calibrate the estimate.
pub(crate) const MIN_CALIBRATION_TOKENS: u64 = 256;

/// The range of the calibration factor.
pub(crate) const RATIO_RANGE: (f64, f64) = (1.0, 8.0);

/// The input tokens `request` is estimated at before calibration: one per
/// four characters of its system prompt, tool definitions and messages.
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    estimate_tokens_with(request, &mut SchemaChars::default())
}

/// [`estimate_tokens`], with the tool schemas' sizes remembered in `known`.
pub(crate) fn estimate_tokens_with(request: &ChatRequest, known: &mut SchemaChars) -> u64 {
    let messages: u64 = request.messages.iter().map(message_chars).sum();
    (fixed_chars_with(request, known) + messages) / CHARS_PER_TOKEN
}

/// `raw` tokens scaled by the calibration factor `ratio`, rounded up.
pub(crate) fn scale(raw: u64, ratio: f64) -> u64 {
    (raw as f64 * ratio).ceil() as u64
}

/// The calibration factor from a call estimated at `raw` tokens for which
/// the provider reported `reported` input tokens; `None` when the call
/// cannot calibrate.
pub(crate) fn ratio(raw: u64, reported: u64) -> Option<f64> {
    (raw >= MIN_CALIBRATION_TOKENS && reported > 0)
        .then(|| (reported as f64 / raw as f64).clamp(RATIO_RANGE.0, RATIO_RANGE.1))
}

/// What a request may fill of a `window` of tokens under the share
/// `compact_at` (a share outside (0, 1] counts as the default).
pub(crate) fn window_cap(window: u64, compact_at: f64) -> u64 {
    let share = if compact_at.is_finite() && compact_at > 0.0 && compact_at <= 1.0 {
        compact_at
    } else {
        crate::config::DEFAULT_COMPACT_AT
    };
    (window as f64 * share).floor() as u64
}

/// Whether `message` is a summary left by an earlier compaction.
pub fn is_summary(message: &Message) -> bool {
    matches!(message, Message::System { content } if content.starts_with(SUMMARY_PREFIX))
}

/// The marker that replaces a tool result of `bytes` bytes.
pub fn elision_marker(bytes: usize) -> String {
    crate::prompts::elision_marker(bytes)
}

/// What an elision did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elided {
    /// Tool results (or result messages) replaced by a marker.
    pub results: usize,
    /// The bytes of content they had.
    pub bytes: usize,
}

impl std::ops::AddAssign for Elided {
    fn add_assign(&mut self, other: Self) {
        self.results += other.results;
        self.bytes += other.bytes;
    }
}

/// Replaces the content of every tool result in `messages` longer than
/// `over_bytes` by [`elision_marker`] (call id, name and error flag stay).
/// Under the text and ReAct protocols, where results travel as user
/// messages, such a message is replaced whole by the marker in the
/// protocol's form. Results already elided are left alone, so eliding twice
/// changes nothing.
pub fn elide_tool_results(messages: &mut [Message], protocol: &Protocol, over_bytes: usize) -> Elided {
    let mut elided = Elided::default();
    for message in messages {
        let (content, wrap): (&mut String, fn(String) -> String) = match message {
            Message::Tool(result) => (&mut result.content, |marker| marker),
            Message::User { content, .. } if is_results_message(protocol, content) => match protocol {
                Protocol::Text { .. } => (content, |marker| format!("<tool_response>\n{marker}\n</tool_response>")),
                _ => (content, |marker| format!("Observation: {marker}")),
            },
            _ => continue,
        };
        if content.len() <= over_bytes || is_elided(content) {
            continue;
        }
        elided.results += 1;
        elided.bytes += content.len();
        *content = wrap(elision_marker(content.len()));
    }
    elided
}

fn is_elided(content: &str) -> bool {
    content.len() < 128 && content.contains(ELIDED_PREFIX)
}

/// Whether a user message of `content` carries tool results back to the
/// model (text protocol: `<tool_response>` blocks; ReAct: an observation).
fn is_results_message(protocol: &Protocol, content: &str) -> bool {
    match protocol {
        Protocol::Native => false,
        Protocol::Text { .. } => content.starts_with("<tool_response"),
        Protocol::React => content.starts_with("Observation: "),
    }
}

/// The positions where turns start: user messages that are not tool results.
pub(crate) fn turn_starts(messages: &[Message], protocol: &Protocol) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(
            |(_, message)| matches!(message, Message::User { content, .. } if !is_results_message(protocol, content)),
        )
        .map(|(index, _)| index)
        .collect()
}

/// Whether a summary of `messages[..cut]` would replace something: at
/// least one message that is not already a summary.
fn summarises_something(messages: &[Message], cut: usize) -> bool {
    cut > 1 || (cut == 1 && messages.first().is_some_and(|first| !is_summary(first)))
}

/// Where a summary should end (the first message kept), given the turn
/// `starts`: the first turn start, from the one that keeps `keep` turns,
/// after which the rest `fits`; else the last turn start. Only cuts that
/// summarise something count; `None` when there is none.
pub(crate) fn choose_cut(
    messages: &[Message],
    starts: &[usize],
    keep: usize,
    fits: impl Fn(usize) -> bool,
) -> Option<usize> {
    let first_kept = starts.len().saturating_sub(keep.max(1));
    let mut candidates = starts[first_kept..]
        .iter()
        .copied()
        .filter(|&cut| summarises_something(messages, cut));
    let first = candidates.next()?;
    if fits(first) {
        return Some(first);
    }
    let mut last = first;
    for cut in candidates {
        if fits(cut) {
            return Some(cut);
        }
        last = cut;
    }
    Some(last)
}

/// The end of the next summary on the way to `goal`: the last turn start
/// up to `goal` whose messages written out `fit` in one summary request,
/// else the first one (its text then cut to fit). `None` when no turn
/// start up to `goal` summarises anything.
pub(crate) fn round_cut(
    messages: &[Message],
    starts: &[usize],
    goal: usize,
    fits: impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut candidates = starts
        .iter()
        .copied()
        .filter(|&cut| cut <= goal && summarises_something(messages, cut));
    let first = candidates.next()?;
    let mut best = fits(first).then_some(first);
    for cut in candidates {
        if !fits(cut) {
            break;
        }
        best = Some(cut);
    }
    Some(best.unwrap_or(first))
}

/// Character counts of a request, for estimates of what is left after a cut.
pub(crate) struct Sizes {
    /// System prompt and tool definitions.
    fixed: u64,
    /// `prefix[i]`: the characters of the first `i` messages.
    prefix: Vec<u64>,
}

impl Sizes {
    /// The sizes of `request`.
    pub(crate) fn of(request: &ChatRequest) -> Self {
        let mut prefix = Vec::with_capacity(request.messages.len() + 1);
        let mut total = 0;
        prefix.push(0);
        for message in &request.messages {
            total += message_chars(message);
            prefix.push(total);
        }
        Self {
            fixed: fixed_chars(request),
            prefix,
        }
    }

    /// The raw tokens of the request without its first `cut` messages.
    pub(crate) fn tokens_from(&self, cut: usize) -> u64 {
        let total = self.prefix.last().copied().unwrap_or(0);
        let before = self.prefix.get(cut).copied().unwrap_or(total);
        (self.fixed + total - before) / CHARS_PER_TOKEN
    }
}

/// `messages` written out for a summary, one paragraph each (each cut to
/// 2000 characters), the whole cut to `max_chars` characters when given.
pub(crate) fn render_conversation(messages: &[Message], max_chars: Option<usize>) -> String {
    let mut text = String::new();
    for message in messages {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&render_message(message));
    }
    match max_chars {
        Some(max) if text.chars().count() > max => {
            let mut cut: String = text.chars().take(max.saturating_sub(40)).collect();
            cut.push_str("\n[the rest of this part was cut]");
            cut
        }
        _ => text,
    }
}

/// The characters of `messages` written out by [`render_conversation`],
/// `prefix[i]` for the first `i`.
pub(crate) fn rendered_prefix(messages: &[Message]) -> Vec<usize> {
    let mut prefix = Vec::with_capacity(messages.len() + 1);
    let mut total = 0;
    prefix.push(0);
    for (index, message) in messages.iter().enumerate() {
        total += render_message(message).chars().count() + if index > 0 { 2 } else { 0 };
        prefix.push(total);
    }
    prefix
}

/// One message written out: `[user] …`, `[assistant] …`, one
/// `[assistant called name {arguments}]` line per call,
/// `[result of name] …` (`[error from name] …`), `[earlier summary] …`.
fn render_message(message: &Message) -> String {
    let mut text = match message {
        Message::System { content } => match content.strip_prefix(SUMMARY_PREFIX) {
            Some(summary) => format!("[earlier summary] {summary}"),
            None => format!("[system] {content}"),
        },
        Message::User { content, .. } => format!("[user] {content}"),
        Message::Assistant(reply) => {
            let mut text = String::from("[assistant]");
            if !reply.content.is_empty() {
                text.push(' ');
                text.push_str(&reply.content);
            }
            for call in &reply.tool_calls {
                let _ = write!(text, "\n[assistant called {} {}]", call.name, call.arguments_text());
            }
            text
        }
        Message::Tool(result) => {
            let label = if result.is_error { "error from" } else { "result of" };
            format!("[{label} {}] {}", result.name, result.content)
        }
    };
    if let Some((end, _)) = text.char_indices().nth(MAX_RENDERED_MESSAGE_CHARS) {
        let left_out = text[end..].chars().count();
        text.truncate(end);
        let _ = write!(text, " [… {left_out} more characters]");
    }
    text
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;
    use crate::history::is_sendable;

    fn call(id: &str) -> Message {
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new(id, "lookup", json!({"q": id}))],
        ))
    }

    fn result(id: &str, content: &str) -> Message {
        Message::tool(ToolResult::success(id, "lookup", content))
    }

    /// `turns` turns of: question, call, result, answer.
    fn conversation(turns: usize) -> Vec<Message> {
        (0..turns)
            .flat_map(|turn| {
                let id = format!("c{turn}");
                [
                    Message::user(format!("question {turn}")),
                    call(&id),
                    result(&id, &"r".repeat(100)),
                    Message::assistant(format!("answer {turn}")),
                ]
            })
            .collect()
    }

    #[test]
    fn cuts_fall_where_turns_start_and_never_split_a_call_from_its_result() {
        let messages = conversation(6);
        let starts = turn_starts(&messages, &Protocol::Native);
        assert_eq!(starts, [0, 4, 8, 12, 16, 20]);
        // Everything fits: keep the 4 recent turns, summarise the 2 before.
        assert_eq!(choose_cut(&messages, &starts, 4, |_| true), Some(8));
        // Only the last turn fits: keep it alone.
        assert_eq!(choose_cut(&messages, &starts, 4, |cut| cut >= 20), Some(20));
        assert_eq!(choose_cut(&messages, &starts, 4, |cut| cut >= 14), Some(16));
        // Nothing fits: still the last user message and what follows are kept.
        assert_eq!(choose_cut(&messages, &starts, 4, |_| false), Some(20));
        // Fewer turns than kept: the cut keeps fewer only when it must.
        assert_eq!(choose_cut(&messages, &starts, 10, |_| true), Some(4));
        assert_eq!(
            choose_cut(&messages, &starts, 0, |_| true),
            Some(20),
            "at least one turn is kept"
        );
        for cut in [4, 8, 12, 16, 20] {
            assert!(is_sendable(&messages[cut..]), "cut at {cut}");
            assert!(is_sendable(&messages[..cut]), "cut at {cut}");
        }
    }

    #[test]
    fn a_cut_must_summarise_more_than_an_earlier_summary() {
        let mut messages = vec![Message::system(format!("{SUMMARY_PREFIX}before"))];
        messages.extend(conversation(2));
        let starts = turn_starts(&messages, &Protocol::Native);
        assert_eq!(starts, [1, 5]);
        assert_eq!(
            choose_cut(&messages, &starts, 2, |_| true),
            Some(5),
            "not the summary alone"
        );
        assert_eq!(choose_cut(&messages, &starts, 1, |_| true), Some(5));
        let only_last = vec![messages[0].clone(), Message::user("hi")];
        assert_eq!(choose_cut(&only_last, &[1], 4, |_| true), None, "nothing old enough");
        assert_eq!(choose_cut(&conversation(1), &[0], 4, |_| true), None);
        assert_eq!(choose_cut(&[], &[], 4, |_| true), None);
        // Another system message first is summarised like any other.
        let instructions = vec![Message::system("be brief"), Message::user("hi")];
        assert_eq!(choose_cut(&instructions, &[1], 4, |_| true), Some(1));
    }

    #[test]
    fn a_round_takes_the_most_turns_that_fit_and_at_least_one() {
        let messages = conversation(6);
        let starts = turn_starts(&messages, &Protocol::Native);
        assert_eq!(round_cut(&messages, &starts, 16, |cut| cut <= 8), Some(8));
        assert_eq!(round_cut(&messages, &starts, 16, |_| true), Some(16));
        assert_eq!(round_cut(&messages, &starts, 16, |_| false), Some(4));
        assert_eq!(round_cut(&messages, &starts, 0, |_| true), None);
    }

    #[test]
    fn text_protocol_results_start_no_turn_and_are_elided_in_their_form() {
        let protocol = Protocol::Text { tool_names: vec![] };
        let big = format!(
            "<tool_response name=\"lookup\">\n{}\n</tool_response>",
            "x".repeat(2000)
        );
        let mut messages = vec![
            Message::user("question"),
            Message::assistant("<tool_call>{\"name\": \"lookup\", \"arguments\": {}}</tool_call>"),
            Message::user(big.clone()),
            Message::assistant("answer"),
            Message::user("next"),
        ];
        assert_eq!(turn_starts(&messages, &protocol), [0, 4]);
        let elided = elide_tool_results(&mut messages, &protocol, 1024);
        assert_eq!(
            elided,
            Elided {
                results: 1,
                bytes: big.len()
            }
        );
        let marker = format!(
            "<tool_response>\n[tool result elided: {} bytes]\n</tool_response>",
            big.len()
        );
        assert_eq!(messages[2], Message::user(marker));
        assert_eq!(turn_starts(&messages, &protocol), [0, 4], "still a results message");
        let mut react = vec![Message::user(format!("Observation: {}", "y".repeat(50)))];
        assert_eq!(turn_starts(&react, &Protocol::React), Vec::<usize>::new());
        assert_eq!(elide_tool_results(&mut react, &Protocol::React, 10).results, 1);
        assert_eq!(react[0], Message::user("Observation: [tool result elided: 63 bytes]"));
    }

    #[test]
    fn elision_keeps_the_call_id_and_error_flag_and_is_idempotent() {
        let mut messages = vec![
            call("a"),
            Message::tool(ToolResult::error("a", "lookup", "é".repeat(600))),
            result("b", "short"),
        ];
        let elided = elide_tool_results(&mut messages, &Protocol::Native, 1024);
        assert_eq!(
            elided,
            Elided {
                results: 1,
                bytes: 1200
            }
        );
        assert_eq!(
            messages[1],
            Message::tool(ToolResult::error("a", "lookup", "[tool result elided: 1200 bytes]"))
        );
        assert_eq!(messages[2], result("b", "short"));
        let again = messages.clone();
        // A threshold below the marker's length does not elide the marker again.
        assert_eq!(
            elide_tool_results(&mut messages, &Protocol::Native, 5),
            Elided::default()
        );
        assert_eq!(messages, again);
    }

    #[test]
    fn sizes_give_what_is_left_after_a_cut() {
        let request = ChatRequest::new(vec![Message::user("a".repeat(40)), Message::assistant("b".repeat(80))])
            .with_system("s".repeat(20));
        let sizes = Sizes::of(&request);
        assert_eq!(estimate_tokens(&request), 35);
        assert_eq!(sizes.tokens_from(0), 35);
        assert_eq!(sizes.tokens_from(1), 25);
        assert_eq!(sizes.tokens_from(2), 5);
        assert_eq!(scale(35, 1.5), 53);
        assert_eq!(ratio(300, 600), Some(2.0));
        assert_eq!(ratio(300, 100), Some(1.0), "never below the raw count");
        assert_eq!(ratio(300, 30_000), Some(8.0));
        assert_eq!(ratio(100, 600), None, "too small to calibrate");
        assert_eq!(ratio(300, 0), None, "no report");
        assert_eq!(window_cap(1000, 0.5), 500);
        assert_eq!(window_cap(1000, 1.5), 800, "out of range: the default");
    }

    #[test]
    fn messages_are_written_out_labelled_and_cut() {
        let messages = vec![
            Message::system(format!("{SUMMARY_PREFIX}They met.")),
            Message::user("Find Oslo."),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "Looking.",
                vec![ToolCall::new("a", "lookup", json!({"q": "Oslo"}))],
            )),
            Message::tool(ToolResult::error("a", "lookup", "down")),
            Message::assistant("x".repeat(2100)),
        ];
        let text = render_conversation(&messages, None);
        let expected_start = "[earlier summary] They met.\n\n[user] Find Oslo.\n\n[assistant] Looking.\n\
                              [assistant called lookup {\"q\":\"Oslo\"}]\n\n[error from lookup] down\n\n[assistant] ";
        assert!(text.starts_with(expected_start), "{text}");
        assert!(text.ends_with(" [… 112 more characters]"), "{text}");
        let prefix = rendered_prefix(&messages);
        assert_eq!(prefix.last().copied(), Some(text.chars().count()));
        let cut = render_conversation(&messages, Some(100));
        assert_eq!(cut.chars().count(), 60 + "\n[the rest of this part was cut]".len());
    }
}
