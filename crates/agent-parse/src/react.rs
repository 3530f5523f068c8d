//! ReAct steps: `Thought:` / `Action:` / `Action Input:` / `Observation:` / `Final Answer:`.

use std::ops::Range;

use serde_json::{Map, Value};

use crate::kv::{parse_pairs, scalar};
use crate::repair::repair_json;
use crate::text::{lines, split_name, strip_decoration};

/// A line label of the ReAct format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    Thought,
    Action,
    ActionInput,
    Observation,
    FinalAnswer,
}

/// Labels, longest first so that `Action Input` wins over `Action`.
const LABELS: [(&str, Label); 5] = [
    ("final answer", Label::FinalAnswer),
    ("action input", Label::ActionInput),
    ("observation", Label::Observation),
    ("thought", Label::Thought),
    ("action", Label::Action),
];

/// The label a line starts with (case-insensitive, `Action_Input` and
/// `**Action:**` accepted) and the byte offset where its content starts.
pub(crate) fn match_label(line: &str) -> Option<(Label, usize)> {
    let trimmed = line.trim_start();
    let rest = trimmed.strip_prefix("**").unwrap_or(trimmed);
    for (words, label) in LABELS {
        let Some(after) = strip_label(rest, words) else {
            continue;
        };
        let after_stars = after.strip_prefix("**").unwrap_or(after);
        let after_spaces = after_stars.trim_start_matches([' ', '\t']);
        let Some(content) = after_spaces.strip_prefix(':') else {
            continue;
        };
        let content = content.strip_prefix("**").unwrap_or(content);
        let content = content.trim_start();
        return Some((label, line.len() - content.len()));
    }
    None
}

/// `text` without a leading `words` (case-insensitive; a space may also be `_`).
fn strip_label<'a>(text: &'a str, words: &str) -> Option<&'a str> {
    let head = text.get(..words.len())?;
    let matches = head
        .bytes()
        .zip(words.bytes())
        .all(|(a, b)| a.eq_ignore_ascii_case(&b) || (b == b' ' && a == b'_'));
    if matches { text.get(words.len()..) } else { None }
}

/// A labelled part of a ReAct reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// `None` for text before the first label.
    pub label: Option<Label>,
    /// Byte offset of the section's first line.
    pub start: usize,
    /// The content after the label, up to the end of the section (without the final line break).
    pub content: Range<usize>,
    /// Byte offset just past the section (the next section's start).
    pub end: usize,
}

/// Splits `text` into labelled sections; unlabelled lines continue the current one.
pub(crate) fn sections(text: &str) -> Vec<Section> {
    let mut found: Vec<Section> = Vec::new();
    for line in lines(text) {
        let line_end = line.start + line.text.len();
        if let Some((label, offset)) = match_label(line.text) {
            found.push(Section {
                label: Some(label),
                start: line.start,
                content: line.start + offset..line_end,
                end: line.next,
            });
        } else if let Some(current) = found.last_mut() {
            current.content.end = line_end;
            current.end = line.next;
        } else {
            found.push(Section {
                label: None,
                start: line.start,
                content: line.start..line_end,
                end: line.next,
            });
        }
    }
    found
}

fn content<'a>(text: &'a str, section: &Section) -> &'a str {
    text.get(section.content.clone()).unwrap_or_default().trim()
}

/// The tool named by an `Action:` line and its inline arguments, if any:
/// `tool`, `` `tool` ``, `tool(a=1, b="x")`, `tool({"a": 1})`, `tool {"a": 1}`.
pub(crate) fn parse_action_target(line: &str) -> Result<(String, Option<Value>), String> {
    let target = strip_decoration(line.lines().next().unwrap_or_default());
    let target = target.strip_suffix('.').unwrap_or(target).trim_end();
    if target.is_empty() {
        return Err("`Action:` names no tool".to_owned());
    }
    let Some((name, rest)) = split_name(target) else {
        return Err(format!("`Action:` should name one tool, found {target:?}"));
    };
    let rest = rest.trim();
    if rest.is_empty() {
        return Ok((name.to_owned(), None));
    }
    if let Some(inner) = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        return Ok((name.to_owned(), Some(parse_call_arguments(inner))));
    }
    if rest.starts_with(['{', '[']) {
        return Ok((name.to_owned(), Some(parse_input(rest))));
    }
    Err(format!("`Action:` should name one tool, found {target:?}"))
}

/// The inside of `tool(...)`: JSON, `key=value` pairs, or one positional value.
pub(crate) fn parse_call_arguments(inner: &str) -> Value {
    let inner = inner.trim();
    if inner.is_empty() {
        return Value::Object(Map::new());
    }
    if inner.starts_with('{')
        && let Some(value) = parse_json_lenient(inner)
    {
        return value;
    }
    if let Some(map) = parse_pairs(inner) {
        return Value::Object(map);
    }
    match serde_json::from_str::<Value>(inner) {
        Ok(value) => value,
        Err(_) => scalar(inner),
    }
}

/// An `Action Input:` value: JSON (repaired if needed, code fence removed),
/// `{}` when empty, otherwise the text as a string.
pub(crate) fn parse_input(raw: &str) -> Value {
    let text = strip_fence(raw.trim());
    if text.is_empty() {
        return Value::Object(Map::new());
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return value;
    }
    if text.starts_with(['{', '['])
        && let Some(value) = parse_json_lenient(text)
    {
        return value;
    }
    Value::String(text.to_owned())
}

fn parse_json_lenient(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| repair_json(text).and_then(|fixed| serde_json::from_str(&fixed).ok()))
}

/// The body of a ```` ``` ```` fence wrapping the whole text, or the text.
pub(crate) fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// What a ReAct step asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum ReactKind {
    /// Run a tool.
    Action {
        /// The tool's name.
        tool: String,
        /// Its input: the JSON of `Action Input:` (`{}` when absent), or the
        /// text when it is not JSON.
        input: Value,
    },
    /// The answer to the question.
    FinalAnswer(String),
    /// Neither could be read; the reason is written for the model.
    Malformed(String),
}

/// One parsed ReAct step.
#[derive(Debug, Clone, PartialEq)]
pub struct ReactStep {
    /// The `Thought:` (or the unlabelled text before the first label).
    pub thought: Option<String>,
    /// What the model wants to do.
    pub kind: ReactKind,
}

/// Parses one ReAct step from a model reply.
///
/// Labels are matched at the start of a line, case-insensitively
/// (`Action_Input:`, `**Thought:**` and CRLF line ends are accepted). Text
/// from the first `Observation:` on is discarded: the model made it up. The
/// first of `Action:` and `Final Answer:` decides the step. An action is
/// `Action: tool` with an optional `Action Input:` (JSON, repaired if
/// needed; plain text becomes a string), or inline, `Action: tool(a=1, b="x")`.
///
/// ```
/// use agent_parse::{ReactKind, parse_react_step};
/// use serde_json::json;
///
/// let step = parse_react_step(
///     "Thought: I need the weather.\r\nAction: get_weather\r\nAction Input: {\"city\": \"Oslo\"}\r\nObservation: 5°C",
/// );
/// assert_eq!(step.thought.as_deref(), Some("I need the weather."));
/// assert_eq!(step.kind, ReactKind::Action { tool: "get_weather".into(), input: json!({"city": "Oslo"}) });
///
/// let step = parse_react_step("Thought: done\nfinal answer: It is 5°C in Oslo.");
/// assert_eq!(step.kind, ReactKind::FinalAnswer("It is 5°C in Oslo.".into()));
/// ```
pub fn parse_react_step(text: &str) -> ReactStep {
    let all = sections(text);
    let cut = all
        .iter()
        .position(|s| s.label == Some(Label::Observation))
        .unwrap_or(all.len());
    let sections = all.get(..cut).unwrap_or_default();

    let thought = sections
        .iter()
        .find(|s| s.label == Some(Label::Thought))
        .or_else(|| sections.first().filter(|s| s.label.is_none()))
        .map(|s| content(text, s).to_owned())
        .filter(|t| !t.is_empty());

    let decisive = sections
        .iter()
        .position(|s| matches!(s.label, Some(Label::Action | Label::FinalAnswer)));
    let kind = match decisive {
        None => {
            let reason = if sections.iter().any(|s| s.label == Some(Label::ActionInput)) {
                "found `Action Input:` without an `Action:` line naming the tool"
            } else {
                "found neither `Action:` nor `Final Answer:`; write `Action: <tool>` and `Action Input: <JSON>`, \
                 or `Final Answer: <answer>`"
            };
            ReactKind::Malformed(reason.to_owned())
        }
        Some(index) => {
            let section = &sections[index];
            if section.label == Some(Label::FinalAnswer) {
                ReactKind::FinalAnswer(content(text, section).to_owned())
            } else {
                match parse_action_target(content(text, section)) {
                    Err(reason) => ReactKind::Malformed(reason),
                    Ok((tool, Some(input))) => ReactKind::Action { tool, input },
                    Ok((tool, None)) => {
                        let input = sections
                            .get(index + 1..)
                            .unwrap_or_default()
                            .iter()
                            .take_while(|s| !matches!(s.label, Some(Label::Action | Label::FinalAnswer)))
                            .find(|s| s.label == Some(Label::ActionInput))
                            .map_or_else(|| Value::Object(Map::new()), |s| parse_input(content(text, s)));
                        ReactKind::Action { tool, input }
                    }
                }
            }
        }
    };
    ReactStep { thought, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(match_label("Action: x"), Some((Label::Action, 8)));
        assert_eq!(match_label("  action input :  {}"), Some((Label::ActionInput, 18)));
        assert_eq!(match_label("Action_Input: 1"), Some((Label::ActionInput, 14)));
        assert_eq!(match_label("**Thought:** hm"), Some((Label::Thought, 13)));
        assert_eq!(match_label("**Final Answer**: 42"), Some((Label::FinalAnswer, 18)));
        assert_eq!(match_label("Actions: x"), None);
        assert_eq!(match_label("Thoughtful: x"), None);
        assert_eq!(match_label("é"), None);
    }

    #[test]
    fn fence_stripping() {
        assert_eq!(strip_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_fence("```\n[1]"), "[1]");
        assert_eq!(strip_fence("{}"), "{}");
    }
}
