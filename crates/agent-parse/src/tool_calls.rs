//! Tool calls written in the text of a reply.

use std::collections::BTreeSet;
use std::ops::Range;

use agent_core::ToolCall;
use serde_json::{Map, Value};

use crate::fence::fences;
use crate::kv::parse_pairs;
use crate::react::{Label, parse_action_target, parse_input, sections};
use crate::repair::repair_json;
use crate::scan::{Quotes, scan};
use crate::streaming::StreamingToolCallFilter;
use crate::text::{lines, remove_ranges, split_name, widen_to_wrappers};

/// The ways a model can write a tool call in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallFormat {
    /// `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Hermes / Qwen).
    Tagged,
    /// A bare or fenced JSON object `{"name"|"tool": ..., "arguments"|"parameters": ...}`,
    /// or an array of them.
    Json,
    /// `Action: tool(a=1)` or `Action: tool` + `Action Input: {...}` (ReAct).
    ReactAction,
    /// A line `use tool with a=1, b="x, y"`.
    PlainUse,
}

impl CallFormat {
    /// Every format.
    pub const ALL: [Self; 4] = [Self::Tagged, Self::Json, Self::ReactAction, Self::PlainUse];
}

/// One tool call found in text.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// The tool's name.
    pub name: String,
    /// The arguments (`{}` when none were given; `null` when they were a
    /// string that is not JSON, see [`raw_arguments`](Self::raw_arguments)).
    pub arguments: Value,
    /// The argument text when it was given as a string that is not valid JSON.
    pub raw_arguments: Option<String>,
    /// How the call was written.
    pub format: CallFormat,
    /// Whether its JSON needed repair (trailing comma, single quotes, ...).
    pub repaired: bool,
}

impl ParsedCall {
    /// The call as an [`agent_core::ToolCall`] with the given id.
    pub fn into_tool_call(self, id: impl Into<String>) -> ToolCall {
        let mut call = ToolCall::new(id, self.name, self.arguments);
        call.raw_arguments = self.raw_arguments;
        call
    }
}

/// A tagged block (or other explicit call) that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedCall {
    /// How it was written.
    pub format: CallFormat,
    /// Its text.
    pub raw: String,
    /// What is wrong, written for the model.
    pub reason: String,
}

/// A reply split into visible text and tool calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedReply {
    /// The text around the calls (calls removed, whitespace trimmed).
    pub text: String,
    /// The calls, in the order they appear.
    pub calls: Vec<ParsedCall>,
    /// Explicit call blocks that could not be decoded (to report to the model).
    pub malformed: Vec<MalformedCall>,
}

impl ParsedReply {
    /// Whether the reply calls any tool.
    pub fn has_calls(&self) -> bool {
        !self.calls.is_empty()
    }

    /// The calls as [`ToolCall`]s with ids `{prefix}0`, `{prefix}1`, ...
    pub fn tool_calls(&self, prefix: &str) -> Vec<ToolCall> {
        self.calls
            .iter()
            .enumerate()
            .map(|(i, call)| call.clone().into_tool_call(format!("{prefix}{i}")))
            .collect()
    }

    /// The calls as [`ToolCall`]s with ids `call_0`, `call_1`, ...
    pub fn into_tool_calls(self) -> Vec<ToolCall> {
        self.calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| call.into_tool_call(format!("call_{i}")))
            .collect()
    }
}

/// Calls found in a range of the text.
type Found = (Range<usize>, Vec<ParsedCall>);

/// How a tagged block ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockEnd {
    /// By `</tool_call>`.
    Closed,
    /// By another `<tool_call>`.
    NextOpened,
    /// By the end of the text.
    EndOfText,
}

/// Finds tool calls in the text of a reply.
///
/// - `<tool_call>` blocks ([`CallFormat::Tagged`]) always count as calls;
///   when a reply has any, the other formats are not looked for.
/// - Otherwise: `Action:` lines ([`CallFormat::ReactAction`]; text from a
///   made-up `Observation:` after an action is dropped), `use tool with ...`
///   lines ([`CallFormat::PlainUse`]), and JSON objects or arrays of them,
///   bare or in a `json`/unlabelled code fence ([`CallFormat::Json`]).
///   A JSON object is a call when it has a string `name` or `tool` and an
///   `arguments` or `parameters` member (or `{"function": {...}}`, as
///   OpenAI writes it).
/// - [`known_tools`](Self::known_tools) restricts the ambiguous formats
///   (bare JSON and `use` lines) to those names, so ordinary JSON answers
///   are not mistaken for calls; `<tool_call>` blocks and `Action:` lines
///   are explicit and always count.
///
/// Arguments given as a string of JSON are decoded. The text around the
/// calls is kept, trimmed.
///
/// ```
/// use agent_parse::ToolCallParser;
/// use serde_json::json;
///
/// let reply = "I'll look both up.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>{\"name\": \"weather\", \"arguments\": \"{\\\"city\\\": \\\"Rome\\\"}\"}</tool_call>";
/// let parsed = ToolCallParser::new().parse(reply);
/// assert_eq!(parsed.text, "I'll look both up.");
/// let calls = parsed.tool_calls("call_");
/// assert_eq!(calls[1].id, "call_1");
/// assert_eq!(calls[1].arguments, json!({"city": "Rome"}));
///
/// let parser = ToolCallParser::new().known_tools(["calculator"]);
/// assert!(parser.parse(r#"{"name": "Bob", "arguments": "none"}"#).calls.is_empty());
/// assert_eq!(parser.parse("use calculator with expression=\"2 * (3 + 4)\"").calls[0].arguments, json!({"expression": "2 * (3 + 4)"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallParser {
    formats: BTreeSet<CallFormat>,
    known: Option<BTreeSet<String>>,
}

impl Default for ToolCallParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolCallParser {
    /// A parser for every format, accepting any tool name.
    pub fn new() -> Self {
        Self {
            formats: CallFormat::ALL.into_iter().collect(),
            known: None,
        }
    }

    /// Only bare JSON and `use` lines naming these tools count as calls.
    pub fn known_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.known = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Looks only for these formats.
    pub fn formats(mut self, formats: impl IntoIterator<Item = CallFormat>) -> Self {
        self.formats = formats.into_iter().collect();
        self
    }

    fn is_known(&self, name: &str) -> bool {
        self.known.as_ref().is_none_or(|known| known.contains(name))
    }

    /// Splits `text` into visible text and calls. Never fails: what is not a
    /// call stays text, and explicit calls that cannot be decoded are listed
    /// in [`ParsedReply::malformed`].
    pub fn parse(&self, text: &str) -> ParsedReply {
        let base = if self.formats.contains(&CallFormat::Tagged) {
            let mut filter = StreamingToolCallFilter::new();
            let mut visible = filter.push(text);
            let rest = filter.finish();
            visible.push_str(&rest.text);
            if !rest.calls.is_empty() || !rest.malformed.is_empty() {
                return ParsedReply {
                    text: visible,
                    calls: rest.calls,
                    malformed: rest.malformed,
                };
            }
            visible
        } else {
            text.trim().to_owned()
        };
        self.parse_untagged(&base)
    }

    fn parse_untagged(&self, text: &str) -> ParsedReply {
        let mut found: Vec<Found> = Vec::new();
        let mut end = text.len();
        if self.formats.contains(&CallFormat::ReactAction) {
            let (actions, cut) = find_actions(text);
            found.extend(actions);
            if let Some(cut) = cut {
                end = cut;
            }
        }
        let text = text.get(..end).unwrap_or(text);
        if self.formats.contains(&CallFormat::PlainUse) {
            let taken: Vec<Range<usize>> = found.iter().map(|(r, _)| r.clone()).collect();
            for line in lines(text) {
                let range = line.start..line.next;
                if overlaps(&taken, &range) {
                    continue;
                }
                if let Some((name, arguments)) = parse_use_line(line.text) {
                    let explicit = arguments.is_some();
                    let known = self.known.as_ref().is_some_and(|k| k.contains(&name));
                    if self.is_known(&name) && (explicit || known) {
                        let arguments = arguments.unwrap_or_else(|| Value::Object(Map::new()));
                        found.push((range, vec![call(name, arguments, None, CallFormat::PlainUse)]));
                    }
                }
            }
        }
        if self.formats.contains(&CallFormat::Json) {
            found.sort_by_key(|(r, _)| r.start);
            let taken: Vec<Range<usize>> = found.iter().map(|(r, _)| r.clone()).collect();
            // Spans inside a fence are read only when it is a JSON (or
            // unlabelled, or tool) fence whose body is not calls as a
            // whole: a reply cut inside its fence by `max_tokens` keeps the
            // complete calls before the cut.
            let mut fence_ranges: Vec<Range<usize>> = Vec::new();
            for fence in &fences(text) {
                let info = fence.info.split_whitespace().next().unwrap_or_default();
                let callable = info.is_empty() || fence.is_json() || info.starts_with("tool");
                if !callable || overlaps(&taken, &fence.whole) {
                    fence_ranges.push(fence.whole.clone());
                    continue;
                }
                let body = text.get(fence.body.clone()).unwrap_or_default().trim();
                if let Some(calls) = self.bare_calls(body) {
                    fence_ranges.push(fence.whole.clone());
                    found.push((fence.whole.clone(), calls));
                }
            }
            for span in scan(text, Quotes::Double).spans {
                if overlaps(&taken, &span) || overlaps(&fence_ranges, &span) {
                    continue;
                }
                if let Some(calls) = text.get(span.clone()).and_then(|json| self.bare_calls(json)) {
                    found.push((span, calls));
                }
            }
        }
        found.sort_by_key(|(r, _)| r.start);
        let ranges: Vec<Range<usize>> = found.iter().map(|(r, _)| r.clone()).collect();
        let ranges = widen_to_wrappers(text, &ranges);
        ParsedReply {
            text: remove_ranges(text, &ranges),
            calls: found.into_iter().flat_map(|(_, calls)| calls).collect(),
            malformed: Vec::new(),
        }
    }

    /// The calls in bare JSON text (one or more values, each a call object
    /// or an array of them), or `None` if any value is not a call.
    fn bare_calls(&self, json: &str) -> Option<Vec<ParsedCall>> {
        let values = parse_values(json).ok()?;
        let mut calls = Vec::new();
        for value in values {
            match value {
                Value::Array(items) if !items.is_empty() => {
                    for item in items {
                        calls.push(self.bare_call(item)?);
                    }
                }
                value @ Value::Object(_) => calls.push(self.bare_call(value)?),
                _ => return None,
            }
        }
        (!calls.is_empty()).then_some(calls)
    }

    fn bare_call(&self, value: Value) -> Option<ParsedCall> {
        let Value::Object(mut map) = value else {
            return None;
        };
        if let Some(Value::Object(function)) = map.remove("function") {
            map = function;
        }
        let name = ["name", "tool"]
            .iter()
            .find_map(|key| map.get(*key).and_then(Value::as_str))?
            .trim()
            .to_owned();
        let has_arguments = map.contains_key("arguments") || map.contains_key("parameters");
        let known = self.known.as_ref().is_some_and(|k| k.contains(&name));
        if name.is_empty() || !self.is_known(&name) || !(has_arguments || known) {
            return None;
        }
        decode_call(map, CallFormat::Json).ok()
    }
}

/// Whether `range` overlaps any of `sorted` (sorted by start, disjoint).
fn overlaps(sorted: &[Range<usize>], range: &Range<usize>) -> bool {
    let after = sorted.partition_point(|r| r.start < range.end);
    after > 0 && sorted.get(after - 1).is_some_and(|r| r.end > range.start)
}

fn call(name: String, arguments: Value, raw_arguments: Option<String>, format: CallFormat) -> ParsedCall {
    ParsedCall {
        name,
        arguments,
        raw_arguments,
        format,
        repaired: false,
    }
}

/// All whitespace-separated JSON values of `text`.
fn parse_values(text: &str) -> Result<Vec<Value>, serde_json::Error> {
    serde_json::Deserializer::from_str(text).into_iter::<Value>().collect()
}

/// A call object's name and arguments (`name`/`tool`/`tool_name`, and
/// `arguments`/`parameters`/`args`/`input`/`tool_input`; OpenAI's
/// `{"function": {...}}` is unwrapped). String arguments are decoded.
fn decode_call(mut map: Map<String, Value>, format: CallFormat) -> Result<ParsedCall, String> {
    if let Some(Value::Object(function)) = map.remove("function") {
        map = function;
    }
    let name = ["name", "tool", "tool_name"]
        .iter()
        .find_map(|key| map.get(*key).and_then(Value::as_str))
        .map(str::trim)
        .ok_or_else(|| "the tool call has no \"name\"; write {\"name\": \"tool\", \"arguments\": {...}}".to_owned())?
        .to_owned();
    if name.is_empty() {
        return Err("the tool call's \"name\" is empty".to_owned());
    }
    let arguments = ["arguments", "parameters", "args", "input", "tool_input"]
        .iter()
        .find_map(|key| map.remove(*key));
    let (arguments, raw_arguments, repaired) = match arguments {
        None | Some(Value::Null) => (Value::Object(Map::new()), None, false),
        Some(Value::String(text)) => decode_argument_string(&text),
        Some(other) => (other, None, false),
    };
    Ok(ParsedCall {
        name,
        arguments,
        raw_arguments,
        format,
        repaired,
    })
}

/// Arguments written as a string: JSON inside is decoded (repaired if
/// needed); other text is kept as raw arguments with `null`.
fn decode_argument_string(text: &str) -> (Value, Option<String>, bool) {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return (Value::Object(Map::new()), None, false);
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return (value, None, false);
    }
    if trimmed.starts_with(['{', '['])
        && let Some(value) = repair_json(trimmed).and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
    {
        return (value, None, true);
    }
    (Value::Null, Some(text.to_owned()), false)
}

/// Decodes the content of one `<tool_call>` block.
pub(crate) fn decode_tagged_block(content: &str, end: BlockEnd) -> (Vec<ParsedCall>, Vec<MalformedCall>) {
    let body = crate::react::strip_fence(content.trim());
    let malformed = |reason: String| MalformedCall {
        format: CallFormat::Tagged,
        raw: content.to_owned(),
        reason,
    };
    if body.is_empty() {
        return (Vec::new(), vec![malformed("the <tool_call> block is empty".to_owned())]);
    }
    let (values, repaired) = match parse_values(body) {
        Ok(values) => (values, false),
        Err(error) => {
            let repaired = if end == BlockEnd::Closed {
                repair_json(body).and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
            } else {
                None
            };
            if let Some(value) = repaired {
                (vec![value], true)
            } else {
                let reason = match end {
                    BlockEnd::Closed => format!("the <tool_call> block is not valid JSON: {error}"),
                    BlockEnd::NextOpened => {
                        format!("the <tool_call> block was not closed with </tool_call> and is not valid JSON: {error}")
                    }
                    BlockEnd::EndOfText => {
                        format!("the reply ended inside a <tool_call> block whose JSON is incomplete: {error}")
                    }
                };
                return (Vec::new(), vec![malformed(reason)]);
            }
        }
    };
    let mut calls = Vec::new();
    let mut problems = Vec::new();
    let mut push = |value: Value| match value {
        Value::Object(map) => match decode_call(map, CallFormat::Tagged) {
            Ok(mut call) => {
                call.repaired |= repaired;
                calls.push(call);
            }
            Err(reason) => problems.push(malformed(reason)),
        },
        other => problems.push(malformed(format!(
            "expected a JSON object {{\"name\": ..., \"arguments\": {{...}}}} in the <tool_call> block, found {}",
            kind_name(&other)
        ))),
    };
    for value in values {
        match value {
            Value::Array(items) if !items.is_empty() => items.into_iter().for_each(&mut push),
            other => push(other),
        }
    }
    (calls, problems)
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an empty array",
        Value::Object(_) => "an object",
    }
}

/// `Action:` calls (with their `Action Input:`), and where a made-up
/// `Observation:` after the first of them starts.
fn find_actions(text: &str) -> (Vec<Found>, Option<usize>) {
    let all = sections(text);
    let mut found = Vec::new();
    let mut index = 0;
    while let Some(section) = all.get(index) {
        index += 1;
        match section.label {
            Some(Label::Observation) if !found.is_empty() => return (found, Some(section.start)),
            Some(Label::Action) => {
                let target = text.get(section.content.clone()).unwrap_or_default();
                let Ok((name, inline)) = parse_action_target(target) else {
                    continue;
                };
                let mut range = section.start..section.end;
                let arguments = match inline {
                    Some(arguments) => arguments,
                    None => match all.get(index) {
                        Some(next) if next.label == Some(Label::ActionInput) => {
                            index += 1;
                            range.end = next.end;
                            parse_input(text.get(next.content.clone()).unwrap_or_default())
                        }
                        _ => Value::Object(Map::new()),
                    },
                };
                found.push((range, vec![call(name, arguments, None, CallFormat::ReactAction)]));
            }
            _ => {}
        }
    }
    (found, None)
}

/// `use TOOL` / `use TOOL with a=1, b="x"` / `use TOOL with {json}`: the
/// name and the arguments (`None` when there is no `with` part).
fn parse_use_line(line: &str) -> Option<(String, Option<Value>)> {
    let line = line.trim();
    let head = line.get(..4)?;
    if !head.get(..3)?.eq_ignore_ascii_case("use") || !head.ends_with([' ', '\t']) {
        return None;
    }
    let rest = line.get(4..)?.trim_start();
    let (name, after) = match rest.strip_prefix('`') {
        Some(quoted) => quoted.split_once('`')?,
        None => split_name(rest)?,
    };
    let after = after.trim();
    if after.is_empty() || after == "." {
        return Some((name.to_owned(), None));
    }
    let head = after.get(..5)?;
    if !head.get(..4)?.eq_ignore_ascii_case("with") || !head.ends_with([' ', '\t']) {
        return None;
    }
    let arguments = after.get(5..)?.trim();
    if arguments.starts_with('{') {
        let value = serde_json::from_str::<Value>(arguments)
            .ok()
            .or_else(|| repair_json(arguments).and_then(|fixed| serde_json::from_str(&fixed).ok()))?;
        return value.is_object().then(|| (name.to_owned(), Some(value)));
    }
    let pairs = parse_pairs(arguments)?;
    Some((name.to_owned(), Some(Value::Object(pairs))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_check() {
        let sorted = [2..4, 6..9];
        assert!(overlaps(&sorted, &(3..5)));
        assert!(overlaps(&sorted, &(0..7)));
        assert!(!overlaps(&sorted, &(4..6)));
        assert!(!overlaps(&sorted, &(9..12)));
        assert!(!overlaps(&[], &(0..1)));
    }

    #[test]
    fn complete_calls_of_a_fence_cut_short_are_read_and_code_fences_stay_unread() {
        let call = r#"{"name": "calculator", "arguments": {"expression": "17 * 23"}}"#;
        let cut = format!("```json\n{call}\n{call}\n{{\"name\":");
        let parsed = ToolCallParser::new().known_tools(["calculator"]).parse(&cut);
        assert_eq!(parsed.calls.len(), 2, "{parsed:?}");
        assert_eq!(parsed.calls[0].arguments["expression"], "17 * 23");
        let python = format!("```python\nprint({call})\n```");
        let parsed = ToolCallParser::new().known_tools(["calculator"]).parse(&python);
        assert!(parsed.calls.is_empty(), "{parsed:?}");
    }

    #[test]
    fn use_lines() {
        assert_eq!(
            parse_use_line("Use `calc` with a=1"),
            Some(("calc".to_owned(), Some(serde_json::json!({"a": 1}))))
        );
        assert_eq!(parse_use_line("use calc"), Some(("calc".to_owned(), None)));
        assert_eq!(parse_use_line("use the oven with care"), None);
        assert_eq!(parse_use_line("user x"), None);
        assert_eq!(parse_use_line("usé"), None);
    }
}
