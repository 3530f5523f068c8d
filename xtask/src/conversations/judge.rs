//! The rules a turn is judged by, and the eval's own figure judge.
//!
//! The figure judge is deliberately simpler and stricter than the runner's
//! checker (`agent_runner::grounding`), so the eval does not grade the
//! runner with its own measure: every number of the answer (a run of
//! digits, with `,` thousands separators and a decimal part) must be a
//! number of the evidence, or that number rounded to fewer decimals. No
//! arithmetic is excused. Only list markers (`1.` or `2)` at the start of a
//! line) are not figures.

use agent_core::{AgentRunResult, Message};

use super::{Call, Expect};

/// The verdict on one turn.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// The rules broken, in words.
    pub broken: Vec<String>,
    /// The answer's numbers found in no evidence.
    pub invented: Vec<String>,
}

impl Verdict {
    /// Whether the turn is right: no rule broken, no invented figure.
    pub fn right(&self) -> bool {
        self.broken.is_empty() && self.invented.is_empty()
    }

    /// The problems, for the turn's line (empty when right).
    pub fn describe(&self) -> String {
        let mut parts = self.broken.clone();
        if !self.invented.is_empty() {
            parts.push(format!("UNGROUNDED {}", self.invented.join(", ")));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("  [{}]", parts.join("; "))
        }
    }
}

fn tool_matches(expected: &str, name: &str) -> bool {
    expected == name || (expected == "math" && matches!(name, "calculator" | "arithmetic"))
}

fn contains_any(text: &str, alternatives: &str) -> bool {
    let text = text.to_lowercase();
    alternatives
        .split('|')
        .any(|alternative| text.contains(&alternative.to_lowercase()))
}

fn call_made(call: &Call, result: &AgentRunResult) -> bool {
    result.tool_calls.iter().any(|made| {
        tool_matches(call.tool, &made.name)
            && made.is_error == call.fails
            && call
                .args
                .iter()
                .all(|arg| contains_any(&made.arguments.to_string(), arg))
    })
}

/// Judges one turn's `result` against `expect`; `system_prompt` counts as
/// evidence.
pub fn judge(expect: &Expect, result: &AgentRunResult, system_prompt: &str) -> Verdict {
    let mut broken = Vec::new();
    let answer = result.response.trim();
    if answer.is_empty() {
        broken.push("empty answer".to_owned());
    }
    for call in expect.calls {
        if !call_made(call, result) {
            broken.push(format!(
                "missing {}call {}({})",
                if call.fails { "failing " } else { "" },
                call.tool,
                call.args.join(", ")
            ));
        }
    }
    if expect.no_call && !result.tool_calls.is_empty() {
        broken.push("called a tool".to_owned());
    }
    if expect.asks {
        if result.tool_calls.iter().any(|call| !call.is_error) {
            broken.push("called instead of asking".to_owned());
        }
        if !answer.contains('?') {
            broken.push("asked nothing".to_owned());
        }
    }
    if !expect.answer_any.is_empty() && !expect.answer_any.iter().any(|text| contains_any(answer, text)) {
        broken.push(format!("answer lacks {}", expect.answer_any.join(" / ")));
    }
    let mut evidence: Vec<f64> = numbers(system_prompt).into_iter().map(|(_, value, _)| value).collect();
    for message in &result.messages {
        match message {
            Message::User { content } | Message::System { content } => {
                evidence.extend(numbers(content).into_iter().map(|(_, value, _)| value));
            }
            Message::Tool(tool) => evidence.extend(numbers(&tool.content).into_iter().map(|(_, value, _)| value)),
            Message::Assistant(_) => {}
        }
    }
    let invented = numbers(answer)
        .into_iter()
        .filter(|(_, value, decimals)| !evidence.iter().any(|known| rounds_to(*known, *value, *decimals)))
        .map(|(text, _, _)| text)
        .collect();
    Verdict { broken, invented }
}

/// Whether `known` is `value`, or rounds to it at `decimals` decimals.
fn rounds_to(known: f64, value: f64, decimals: u32) -> bool {
    let factor = 10f64.powi(i32::try_from(decimals.min(6)).unwrap_or(6));
    (known * factor).round() == (value * factor).round()
}

/// The numbers of `text`: as written, their value and their decimals.
pub fn numbers(text: &str) -> Vec<(String, f64, u32)> {
    let mut found = Vec::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut index = 0;
        // A list marker at the start of the line is not a figure.
        let first = chars.iter().position(|c| !c.is_whitespace()).unwrap_or(chars.len());
        let mut marker_end = first;
        while marker_end < chars.len() && chars[marker_end].is_ascii_digit() {
            marker_end += 1;
        }
        if marker_end > first && marker_end < chars.len() && matches!(chars[marker_end], '.' | ')') {
            let after = chars.get(marker_end + 1).copied();
            if after.is_none_or(char::is_whitespace) {
                index = marker_end + 1;
            }
        }
        while index < chars.len() {
            if !chars[index].is_ascii_digit() {
                index += 1;
                continue;
            }
            let start = index;
            let mut digits = String::new();
            let mut decimals = 0;
            let mut in_fraction = false;
            while index < chars.len() {
                let c = chars[index];
                let next_is_digit = chars.get(index + 1).is_some_and(char::is_ascii_digit);
                if c.is_ascii_digit() {
                    digits.push(c);
                    decimals += u32::from(in_fraction);
                } else if c == ',' && !in_fraction && next_is_digit {
                    // thousands separator
                } else if c == '.' && !in_fraction && next_is_digit {
                    digits.push('.');
                    in_fraction = true;
                } else {
                    break;
                }
                index += 1;
            }
            if let Ok(value) = digits.parse::<f64>() {
                let written: String = chars[start..index].iter().collect();
                found.push((written, value, decimals));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use agent_core::{StopCause, ToolCallRecord};
    use serde_json::json;

    use super::*;

    fn result(answer: &str, user: &str, tools: &[(&str, &str, bool)]) -> AgentRunResult {
        let mut messages = vec![Message::user(user)];
        let mut tool_calls = Vec::new();
        for (index, (name, content, is_error)) in tools.iter().enumerate() {
            messages.push(Message::Tool(agent_core::ToolResult {
                call_id: format!("c{index}"),
                name: (*name).to_owned(),
                content: (*content).to_owned(),
                is_error: *is_error,
            }));
            tool_calls.push(ToolCallRecord {
                id: format!("c{index}"),
                name: (*name).to_owned(),
                arguments: json!({"location": "Lisbon", "amount": 250}),
                result: (*content).to_owned(),
                is_error: *is_error,
                duration_ms: 0,
                iteration: 1,
                duplicate_of: None,
                cached: false,
                delegated_usage: None,
            });
        }
        messages.push(Message::assistant(answer));
        AgentRunResult {
            response: answer.to_owned(),
            stop_reason: StopCause::Completed,
            stop_detail: None,
            iterations: 1,
            tool_calls,
            model_calls: Vec::new(),
            usage: agent_core::Usage::default(),
            cost_usd: None,
            provider: "llama".into(),
            model: "test".into(),
            messages,
            compactions: Vec::new(),
            pending_approvals: Vec::new(),
            scene: None,
            grounding: None,
        }
    }

    #[test]
    fn numbers_are_read_with_separators_and_decimals_and_list_markers_skipped() {
        let found: Vec<(String, f64, u32)> = numbers("1. Paris: 1,234.5 and 6.94\n2) then 3 more, 7.");
        assert_eq!(
            found,
            [
                ("1,234.5".to_owned(), 1234.5, 1),
                ("6.94".to_owned(), 6.94, 2),
                ("3".to_owned(), 3.0, 0),
                ("7".to_owned(), 7.0, 0)
            ]
        );
    }

    #[test]
    fn every_figure_must_be_in_the_users_words_or_a_tool_result() {
        let weather = r#"{"summary": "Lisbon: 21.4 °C, sunny"}"#;
        let grounded = judge(
            &Expect::default(),
            &result("Lisbon has 21 °C, as you asked at 9.", "weather at 9?", &[("get_weather", weather, false)]),
            "",
        );
        assert!(grounded.right(), "{grounded:?}");
        let invented = judge(
            &Expect::default(),
            &result("Lisbon has 25 °C.", "weather?", &[("get_weather", weather, false)]),
            "",
        );
        assert_eq!(invented.invented, ["25"]);
        assert!(!invented.right());
        let from_the_prompt = judge(&Expect::default(), &result("Today is June 1.", "date?", &[]), "Today is 2026-06-01.");
        assert!(from_the_prompt.right(), "{from_the_prompt:?}");
        let derived = judge(&Expect::default(), &result("17 * 23 = 391", "17 * 23?", &[]), "");
        assert_eq!(derived.invented, ["391"], "the eval excuses no arithmetic");
    }

    #[test]
    fn calls_questions_and_answers_are_checked() {
        const WEATHER: &[Call] = &[Call {
            tool: "get_weather",
            args: &["lisbon|lisboa"],
            fails: false,
        }];
        let weather = r#"{"summary": "Lisbon: 21 °C"}"#;
        let call_expected = Expect {
            calls: WEATHER,
            answer_any: &["21"],
            ..Expect::default()
        };
        assert!(judge(&call_expected, &result("21 °C there.", "lisbon?", &[("get_weather", weather, false)]), "").right());
        let missing = judge(&call_expected, &result("Sunny.", "lisbon?", &[]), "");
        assert_eq!(missing.broken.len(), 2, "{missing:?}");
        let failed = judge(&call_expected, &result("Sorry.", "lisbon?", &[("get_weather", "unknown", true)]), "");
        assert!(!failed.right(), "a failed call is not the call expected");

        let ask = Expect {
            asks: true,
            ..Expect::default()
        };
        assert!(judge(&ask, &result("Where from?", "a flight please", &[]), "").right());
        let invented_call = judge(&ask, &result("Here: ...?", "a flight please", &[("get_flight_prices", "{}", false)]), "");
        assert_eq!(invented_call.broken, ["called instead of asking"]);

        let chat = Expect {
            no_call: true,
            ..Expect::default()
        };
        assert!(!judge(&chat, &result("Hi", "hi", &[("get_weather", weather, false)]), "").right());
        assert!(!judge(&chat, &result("  ", "hi", &[]), "").right(), "an empty answer is never right");
    }

    #[test]
    fn math_means_either_math_tool() {
        assert!(tool_matches("math", "calculator") && tool_matches("math", "arithmetic"));
        assert!(!tool_matches("math", "get_weather"));
    }
}
