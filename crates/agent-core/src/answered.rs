//! The calls a request has already answered in the current turn, so a
//! reply that only repeats them can be told from one that adds something.
//!
//! A small model given a result often makes the same call again (in other
//! units, or with the result fed back) instead of the next call or the
//! answer. The runner re-asks on such a reply, and the llama provider stops
//! writing one as soon as it repeats.

use serde_json::Value;

use crate::{ChatRequest, Message};

/// The calls made since the user's last message and their results, when
/// the request ends with results (the only place a reply can repeat them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnsweredCalls {
    calls: Vec<(String, Value)>,
    /// Each offered tool's required arguments, by its schema's `required`.
    required: Vec<(String, Vec<String>)>,
    /// Each result's tool and the values in it (see [`leaves`]).
    results: Vec<(String, Vec<String>)>,
}

impl AnsweredCalls {
    /// The calls answered in `request` since its last user message; none
    /// unless the request ends with a tool result.
    pub fn in_request(request: &ChatRequest) -> Self {
        if !matches!(request.messages.last(), Some(Message::Tool(_))) {
            return Self::default();
        }
        let start = request
            .messages
            .iter()
            .rposition(|message| matches!(message, Message::User { .. }))
            .map_or(0, |index| index + 1);
        let mut answered = Self {
            required: request
                .tools
                .iter()
                .map(|tool| {
                    let required = tool.input_schema["required"]
                        .as_array()
                        .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                        .unwrap_or_default();
                    (tool.name.clone(), required)
                })
                .collect(),
            ..Self::default()
        };
        for message in &request.messages[start..] {
            match message {
                Message::Assistant(assistant) => answered.calls.extend(
                    assistant
                        .tool_calls
                        .iter()
                        .map(|call| (call.name.clone(), call.arguments.clone())),
                ),
                Message::Tool(result) => {
                    let content =
                        serde_json::from_str(&result.content).unwrap_or_else(|_| Value::String(result.content.clone()));
                    let mut values = Vec::new();
                    leaves(&content, &mut values);
                    answered.results.push((result.name.clone(), values));
                }
                _ => {}
            }
        }
        answered
    }

    /// No call has been answered.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The answered calls, as `(name, arguments)`, in the order made.
    pub fn calls(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.calls.iter().map(|(name, arguments)| (name.as_str(), arguments))
    }

    /// Whether a call of `name` with `arguments` was answered: the same
    /// arguments, whatever their key order or number spelling (`50` and
    /// `50.0`), or, for a tool whose schema requires arguments, the same
    /// required ones (`get_weather` of the same place in other units).
    pub fn contains(&self, name: &str, arguments: &Value) -> bool {
        let required = self
            .required
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, keys)| keys.as_slice())
            .unwrap_or_default();
        self.calls.iter().any(|(answered, value)| {
            answered == name && (same_value(value, arguments) || same_required(required, value, arguments))
        })
    }

    /// Whether a call of `name` with `arguments` only feeds the tool its own
    /// result back: every value in the arguments is one of the values its
    /// results gave (`calculator("7006652")` after `{"result": 7006652}`,
    /// the converted amount converted again).
    pub fn feeds_back(&self, name: &str, arguments: &Value) -> bool {
        // A tool with no results yet cannot be fed them: the arguments are
        // not even looked at.
        let mut given = self
            .results
            .iter()
            .filter(|(tool, _)| tool == name)
            .flat_map(|(_, values)| values)
            .peekable();
        if given.peek().is_none() {
            return false;
        }
        let given: Vec<&String> = given.collect();
        let mut wanted = Vec::new();
        leaves(arguments, &mut wanted);
        !wanted.is_empty() && wanted.iter().all(|value| given.contains(&value))
    }

    /// Whether a call of `name` with `arguments` adds nothing to what the
    /// results say: it was answered, or it feeds a tool its own result back.
    pub fn repeats(&self, name: &str, arguments: &Value) -> bool {
        self.contains(name, arguments) || self.feeds_back(name, arguments)
    }

    /// [`repeats`](Self::repeats) for arguments as JSON text; arguments that
    /// are not JSON are something new.
    pub fn adds_nothing(&self, name: &str, arguments: &str) -> bool {
        serde_json::from_str::<Value>(arguments).is_ok_and(|arguments| self.repeats(name, &arguments))
    }

    /// Whether a reply of `text` and `calls` only repeats answered calls:
    /// no text and at least one call, none adding anything.
    pub fn only_repeated(&self, text: &str, calls: &[(String, String)]) -> bool {
        text.trim().is_empty()
            && !calls.is_empty()
            && calls.iter().all(|(name, arguments)| self.adds_nothing(name, arguments))
    }
}

/// The scalar values in `value`, as comparable text: numbers by value
/// (`50`, `50.0` and `"50"` alike), strings trimmed and lowercased.
fn leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => map.values().for_each(|item| leaves(item, out)),
        Value::Array(items) => items.iter().for_each(|item| leaves(item, out)),
        Value::Number(number) => out.extend(number.as_f64().map(|x| x.to_string())),
        Value::String(text) => {
            let text = text.trim();
            out.push(match text.parse::<f64>() {
                Ok(number) if number.is_finite() => number.to_string(),
                _ => text.to_lowercase(),
            });
        }
        Value::Bool(flag) => out.push(flag.to_string()),
        Value::Null => {}
    }
}

/// Whether `a` and `b` give the same value to each of the `required`
/// arguments (none: never).
fn same_required(required: &[String], a: &Value, b: &Value) -> bool {
    !required.is_empty()
        && required
            .iter()
            .all(|key| matches!((a.get(key), b.get(key)), (Some(x), Some(y)) if same_value(x, y)))
}

/// JSON equality with numbers compared by value.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(key, v)| y.get(key).is_some_and(|w| same_value(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_value(v, w)),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use crate::{AssistantMessage, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

    fn after_result(user: &str) -> ChatRequest {
        ChatRequest::new(vec![
            Message::user("Weather in Oslo?"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("c0", "get_weather", json!({"location": "Oslo"}))],
            )),
            Message::tool(ToolResult::success(
                "c0",
                "get_weather",
                "{\"summary\": \"Oslo: 2 °C\"}",
            )),
            Message::assistant("Oslo is at 2 °C."),
            Message::user(user),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![
                    ToolCall::new("c1", "get_weather", json!({"location": "Sydney", "units": "celsius"})),
                    ToolCall::new("c2", "convert", json!({"amount": 50, "to": "EUR"})),
                ],
            )),
            Message::tool(ToolResult::success(
                "c1",
                "get_weather",
                "{\"summary\": \"Sydney: 20 °C\"}",
            )),
            Message::tool(ToolResult::success("c2", "convert", "{\"summary\": \"46 EUR\"}")),
        ])
    }

    fn call(name: &str, arguments: &str) -> (String, String) {
        (name.to_owned(), arguments.to_owned())
    }

    #[test]
    fn a_call_with_the_same_required_arguments_was_answered() {
        let mut request = after_result("Weather in Sydney and 50 USD in EUR?");
        let schema = json!({
            "type": "object",
            "properties": {"location": {"type": "string"}, "units": {"type": "string"}},
            "required": ["location"]
        });
        request.tools = vec![
            crate::ToolDefinition::new("get_weather", "Weather.", schema),
            crate::ToolDefinition::new("convert", "Currency.", json!({"type": "object"})),
        ]
        .into();
        let answered = AnsweredCalls::in_request(&request);
        assert!(answered.contains("get_weather", &json!({"location": "Sydney", "units": "fahrenheit"})));
        assert!(answered.contains("get_weather", &json!({"location": "Sydney"})));
        assert!(!answered.contains("get_weather", &json!({"location": "Perth", "units": "celsius"})));
        assert!(
            !answered.contains("get_weather", &json!({"units": "celsius"})),
            "a required one missing"
        );
        // Without required arguments only the same arguments count.
        assert!(!answered.contains("convert", &json!({"amount": 50, "to": "USD"})));
    }

    #[test]
    fn only_the_calls_since_the_last_user_message_count_as_answered() {
        let answered = AnsweredCalls::in_request(&after_result("Weather in Sydney and 50 USD in EUR?"));
        assert!(answered.contains("get_weather", &json!({"units": "celsius", "location": "Sydney"})));
        assert!(answered.contains("convert", &json!({"to": "EUR", "amount": 50.0})));
        assert!(
            !answered.contains("get_weather", &json!({"location": "Oslo"})),
            "before the user message"
        );
        assert!(
            !answered.contains("get_weather", &json!({"location": "Sydney"})),
            "other arguments"
        );
        assert!(!answered.adds_nothing("convert", "not json"));
    }

    #[test]
    fn a_call_that_feeds_a_tool_its_own_result_back_adds_nothing() {
        let request = ChatRequest::new(vec![
            Message::user("What is 1234 * 5678, and 1000 USD in EUR?"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![
                    ToolCall::new("c1", "calculator", json!({"expression": "1234 * 5678"})),
                    ToolCall::new("c2", "convert", json!({"from": "USD", "to": "EUR", "amount": 1000})),
                ],
            )),
            Message::tool(ToolResult::success("c1", "calculator", r#"{"result": 7006652}"#)),
            Message::tool(ToolResult::success(
                "c2",
                "convert",
                r#"{"from": "USD", "to": "EUR", "amount": 1000, "converted": 920.0}"#,
            )),
        ]);
        let answered = AnsweredCalls::in_request(&request);
        assert!(answered.adds_nothing("calculator", r#"{"expression": "7006652"}"#));
        assert!(answered.adds_nothing("convert", r#"{"from": "EUR", "to": "usd", "amount": 920}"#));
        // A result passed on to another tool, or with a value of its own, is new.
        assert!(!answered.adds_nothing("calculator", r#"{"expression": "7006652 / 2"}"#));
        assert!(!answered.adds_nothing("divide", r#"{"number": 7006652}"#));
        assert!(!answered.adds_nothing("convert", r#"{"from": "EUR", "to": "JPY", "amount": 920}"#));
        assert!(!answered.adds_nothing("calculator", "{}"));
    }

    #[test]
    fn nothing_is_answered_unless_the_request_ends_with_results() {
        let mut request = after_result("Weather in Sydney?");
        request.messages.push(Message::user("And in Rome?"));
        assert!(AnsweredCalls::in_request(&request).is_empty());
        assert!(AnsweredCalls::in_request(&ChatRequest::new(vec![Message::user("hi")])).is_empty());
    }

    #[test]
    fn a_reply_only_repeats_when_every_call_is_answered_and_it_has_no_text() {
        let answered = AnsweredCalls::in_request(&after_result("Weather in Sydney and 50 USD in EUR?"));
        let sydney = call("get_weather", r#"{"location": "Sydney", "units": "celsius"}"#);
        assert!(answered.only_repeated("", std::slice::from_ref(&sydney)));
        assert!(answered.only_repeated(" \n", &[sydney.clone(), sydney.clone()]));
        let rate = call(
            "get_currency_exchange",
            r#"{"from": "AUD", "to": "USD", "amount": 1000}"#,
        );
        assert!(!answered.only_repeated("", &[sydney.clone(), rate]));
        assert!(!answered.only_repeated("It is 20 °C.", &[sydney]));
        assert!(!answered.only_repeated("", &[]));
    }
}
