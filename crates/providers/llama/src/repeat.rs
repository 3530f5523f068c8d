//! More tries for a reply that only repeats calls already answered.
//!
//! Given the result of a call, a small model often makes the same call
//! again instead of the next call the request needs, or the answer; the
//! runner then sees a loop and forces an answer, and the rest of the
//! request is lost. Before that, the provider asks again, each time with a
//! plainer reminder after the results ([`Reminder`]): first the user's
//! question restated, then also the calls already made. The first reply
//! that is more than the same calls again is kept, without the calls
//! already answered (docs/local-models.md, "A reply that repeats its
//! calls").

use agent_core::{ChatRequest, Message};
use serde_json::Value;

/// The calls made since the user's last message and their results, when
/// the request ends with results (the only place a reply can repeat them).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AnsweredCalls {
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
        let mut wanted = Vec::new();
        leaves(arguments, &mut wanted);
        let given: Vec<&String> = self
            .results
            .iter()
            .filter(|(tool, _)| tool == name)
            .flat_map(|(_, values)| values)
            .collect();
        !wanted.is_empty() && !given.is_empty() && wanted.iter().all(|value| given.contains(&value))
    }

    /// Whether a call of `name` with `arguments` (JSON text) adds nothing to
    /// what the results say: it was answered, or it feeds a tool its own
    /// result back. Arguments that are not JSON are something new.
    pub fn adds_nothing(&self, name: &str, arguments: &str) -> bool {
        serde_json::from_str::<Value>(arguments)
            .is_ok_and(|arguments| self.contains(name, &arguments) || self.feeds_back(name, &arguments))
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

/// What is added after the last tool result when the model is asked again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reminder {
    /// "My question was: <the user's last message>".
    Question,
    /// "Already called: <the calls answered>. My question was: ...".
    CallsAndQuestion,
}

impl Reminder {
    /// The reminders, in the order they are tried.
    pub const LADDER: [Reminder; 2] = [Reminder::Question, Reminder::CallsAndQuestion];

    /// `request` with this reminder after its last tool result, where a
    /// small model reads it as what is still to be done; `answered` are the
    /// request's answered calls. `None` when the request does not end with
    /// a result or has no user message.
    pub fn applied_to(self, request: &ChatRequest, answered: &AnsweredCalls) -> Option<ChatRequest> {
        let question = request.messages.iter().rev().find_map(|message| match message {
            Message::User { content } if !content.trim().is_empty() => Some(content.clone()),
            _ => None,
        })?;
        let reminder = match self {
            Reminder::Question => format!("My question was: {question}"),
            Reminder::CallsAndQuestion => {
                let calls: Vec<String> = answered
                    .calls
                    .iter()
                    .map(|(name, arguments)| format!("{name}({arguments})"))
                    .collect();
                format!("Already called: {}. My question was: {question}", calls.join(", "))
            }
        };
        let mut reminded = request.clone();
        match reminded.messages.last_mut() {
            Some(Message::Tool(result)) => {
                result.content = format!("{}\n\n{reminder}", result.content);
                Some(reminded)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ToolCall, ToolResult};
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
            agent_core::ToolDefinition::new("get_weather", "Weather.", schema),
            agent_core::ToolDefinition::new("convert", "Currency.", json!({"type": "object"})),
        ];
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

    #[test]
    fn reminders_go_after_the_last_result() {
        let request = after_result("Weather in Sydney and 50 USD in EUR?");
        let answered = AnsweredCalls::in_request(&request);
        let last_content = |reminded: &ChatRequest| {
            assert_eq!(reminded.messages.len(), request.messages.len());
            assert_eq!(reminded.messages[..7], request.messages[..7]);
            let Some(Message::Tool(last)) = reminded.messages.last() else {
                panic!("the last message is still the result: {:?}", reminded.messages.last());
            };
            assert_eq!((last.call_id.as_str(), last.is_error), ("c2", false));
            last.content.clone()
        };
        let reminded = Reminder::Question
            .applied_to(&request, &answered)
            .expect("a question to restate");
        assert_eq!(
            last_content(&reminded),
            "{\"summary\": \"46 EUR\"}\n\nMy question was: Weather in Sydney and 50 USD in EUR?"
        );
        let reminded = Reminder::CallsAndQuestion
            .applied_to(&request, &answered)
            .expect("a question to restate");
        assert_eq!(
            last_content(&reminded),
            "{\"summary\": \"46 EUR\"}\n\nAlready called: get_weather({\"location\":\"Sydney\",\"units\":\"celsius\"}), \
             convert({\"amount\":50,\"to\":\"EUR\"}). My question was: Weather in Sydney and 50 USD in EUR?"
        );
        let mut no_result = request;
        no_result.messages.pop();
        no_result.messages.pop();
        for reminder in Reminder::LADDER {
            assert_eq!(reminder.applied_to(&no_result, &answered), None);
        }
    }
}
