//! The rules a turn is judged by, and the eval's own figure judge.
//!
//! The figure judge is simple, strict and linear, and independent of the
//! runner's own check (`agent_runner`'s grounding), so the eval does not
//! grade the runner by its own measure. Figures are read from left to
//! right in one pass:
//!
//! - a date `2026-07-16` (year, month, day) and a time `14:30` are one
//!   figure each, and match the same date or time of the evidence;
//! - any other run of digits is a number, with `,` thousands separators
//!   (a comma followed by exactly three digits) and a decimal part; its
//!   sign, currency and unit are ignored (`$432`, `432 USD` and `-432` are
//!   all 432). It matches a number of the evidence with the same value
//!   (`1,000` = `1000` = `1000.0`), or one that rounds to it at the
//!   answer's decimals (`6.9` or `7` for `6.94`); a date or time of the
//!   evidence also gives its parts as numbers (`July 16` for `2026-07-16`).
//!
//! A list marker `1.` to `10.` or `1)` to `10)` that starts a line is not a
//! figure. Nothing else is excused: no arithmetic, no unit conversion, no
//! number in words.

use agent_core::AgentRunResult;

use super::{Call, Expect};

/// What an answer can say to ask the user, besides a question mark.
const ASKING: &[&str] = &[
    "please provide",
    "please specify",
    "please tell",
    "please let me know",
    "please confirm",
    "let me know",
    "could you tell",
    "could you provide",
    "could you specify",
    "can you tell",
    "can you provide",
    "i need to know",
    "i'll need",
    "i will need",
    "i need the",
    "i need a",
];

/// What an answer can say when it could not do what was asked.
const FAILURE: &[&str] = &[
    "can't",
    "cannot",
    "can not",
    "couldn't",
    "could not",
    "unable",
    "not able",
    "error",
    "fail",
    "sorry",
    "unfortunately",
    "not found",
    "unknown",
    "not recogni",
    "don't recogni",
    "doesn't exist",
    "does not exist",
    "isn't a real",
    "is not a real",
    "not a valid",
    "invalid",
    "not possible",
    "impossible",
    "undefined",
    "not defined",
    "no such",
    "don't have",
    "do not have",
    "not available",
    "not supported",
    "don't know",
    "do not know",
    "not a city",
    "fictional",
    "not real",
];

/// A figure as read from a text.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    /// A number: its value without sign, and how many decimals it was written with.
    Number {
        /// As written (digits, separators, decimal point).
        text: String,
        /// Its value, without sign.
        value: f64,
        /// Its decimals as written.
        decimals: u32,
    },
    /// A date written `YYYY-MM-DD`.
    Date {
        /// As written.
        text: String,
        /// Year, month, day.
        ymd: (u32, u32, u32),
    },
    /// A time written `H:MM` or `HH:MM`.
    Time {
        /// As written.
        text: String,
        /// Minutes since midnight.
        minutes: u32,
    },
}

impl Figure {
    /// The figure as written.
    pub fn text(&self) -> &str {
        match self {
            Self::Number { text, .. } | Self::Date { text, .. } | Self::Time { text, .. } => text,
        }
    }
}

/// The number of ASCII digits at the start of `chars`.
fn digit_run(chars: &[char]) -> usize {
    chars.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The value of a run of ASCII digits (saturating; long runs are not dates
/// or times anyway).
fn digits_value(chars: &[char]) -> u32 {
    chars.iter().fold(0u32, |value, c| {
        value.saturating_mul(10).saturating_add(c.to_digit(10).unwrap_or(0))
    })
}

/// A date `YYYY-MM-DD` at the start of `chars` (not followed by a digit):
/// its length and value.
fn date_at(chars: &[char]) -> Option<(usize, (u32, u32, u32))> {
    let year = digit_run(chars);
    if year != 4 || chars.get(4) != Some(&'-') {
        return None;
    }
    let month = digit_run(&chars[5..]);
    if !(1..=2).contains(&month) || chars.get(5 + month) != Some(&'-') {
        return None;
    }
    let day_start = 6 + month;
    let day = digit_run(&chars[day_start..]);
    if !(1..=2).contains(&day) {
        return None;
    }
    let (m, d) = (
        digits_value(&chars[5..5 + month]),
        digits_value(&chars[day_start..day_start + day]),
    );
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| (day_start + day, (digits_value(&chars[..4]), m, d)))
}

/// A time `H:MM` or `HH:MM` at the start of `chars` (not followed by a
/// digit): its length and minutes since midnight.
fn time_at(chars: &[char]) -> Option<(usize, u32)> {
    let hours = digit_run(chars);
    if !(1..=2).contains(&hours) || chars.get(hours) != Some(&':') {
        return None;
    }
    let minutes = digit_run(&chars[hours + 1..]);
    if minutes != 2 {
        return None;
    }
    let (h, m) = (
        digits_value(&chars[..hours]),
        digits_value(&chars[hours + 1..hours + 3]),
    );
    (h <= 24 && m < 60).then_some((hours + 3, h * 60 + m))
}

/// A number at the start of `chars`: its length, value and decimals.
fn number_at(chars: &[char]) -> (usize, f64, u32) {
    let mut end = digit_run(chars);
    let mut digits: String = chars[..end].iter().collect();
    // Thousands separators: a comma followed by exactly three digits.
    while chars.get(end) == Some(&',') && digit_run(&chars[end + 1..]) == 3 {
        digits.extend(&chars[end + 1..end + 4]);
        end += 4;
    }
    let mut decimals = 0;
    if chars.get(end) == Some(&'.') {
        let fraction = digit_run(&chars[end + 1..]);
        if fraction > 0 {
            digits.push('.');
            digits.extend(&chars[end + 1..end + 1 + fraction]);
            decimals = u32::try_from(fraction).unwrap_or(u32::MAX);
            end += 1 + fraction;
        }
    }
    (end, digits.parse::<f64>().unwrap_or(f64::NAN), decimals)
}

/// Whether the line `chars` starts with a list marker (`1.`, `10)`), and
/// where the text after it starts.
fn list_marker(chars: &[char]) -> Option<usize> {
    let start = chars.iter().position(|c| !c.is_whitespace())?;
    let digits = digit_run(&chars[start..]);
    if digits == 0 || digits > 2 {
        return None;
    }
    let value = digits_value(&chars[start..start + digits]);
    let after = start + digits;
    let marked = matches!(chars.get(after), Some('.' | ')')) && chars.get(after + 1).is_none_or(|c| c.is_whitespace());
    ((1..=10).contains(&value) && marked).then_some(after + 1)
}

/// The figures of `text`, left to right, in one pass.
pub fn figures(text: &str) -> Vec<Figure> {
    let mut found = Vec::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut index = list_marker(&chars).unwrap_or(0);
        while index < chars.len() {
            if !chars[index].is_ascii_digit() {
                index += 1;
                continue;
            }
            let rest = &chars[index..];
            let (length, figure) = if let Some((length, ymd)) = date_at(rest) {
                (
                    length,
                    Figure::Date {
                        text: String::new(),
                        ymd,
                    },
                )
            } else if let Some((length, minutes)) = time_at(rest) {
                (
                    length,
                    Figure::Time {
                        text: String::new(),
                        minutes,
                    },
                )
            } else {
                let (length, value, decimals) = number_at(rest);
                (
                    length,
                    Figure::Number {
                        text: String::new(),
                        value,
                        decimals,
                    },
                )
            };
            let written: String = rest[..length].iter().collect();
            found.push(match figure {
                Figure::Date { ymd, .. } => Figure::Date { text: written, ymd },
                Figure::Time { minutes, .. } => Figure::Time { text: written, minutes },
                Figure::Number { value, decimals, .. } => Figure::Number {
                    text: written,
                    value,
                    decimals,
                },
            });
            index += length.max(1);
        }
    }
    found
}

/// Whether `known` (a figure of the evidence, or an expected one) is the
/// number `value` written with `decimals` decimals: equal, or rounded.
fn number_matches(known: f64, value: f64, decimals: u32) -> bool {
    let tolerance = 1e-9 * known.abs().max(1.0);
    if (known - value).abs() <= tolerance {
        return true;
    }
    let factor = 10f64.powi(i32::try_from(decimals.min(9)).unwrap_or(9));
    ((known * factor).round() - value * factor).abs() <= tolerance * factor
}

/// The figures a turn's answer may use: those of the system prompt, the
/// user's messages so far and the conversation's tool results.
#[derive(Debug, Default)]
pub struct Evidence {
    numbers: Vec<f64>,
    dates: Vec<(u32, u32, u32)>,
    times: Vec<u32>,
}

impl Evidence {
    /// The evidence of these texts.
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut evidence = Self::default();
        for text in texts {
            for figure in figures(text) {
                match figure {
                    Figure::Number { value, .. } => evidence.numbers.push(value),
                    Figure::Date { ymd: (y, m, d), .. } => {
                        evidence.dates.push((y, m, d));
                        evidence.numbers.extend([f64::from(y), f64::from(m), f64::from(d)]);
                    }
                    Figure::Time { minutes, .. } => {
                        evidence.times.push(minutes);
                        evidence
                            .numbers
                            .extend([f64::from(minutes / 60), f64::from(minutes % 60)]);
                    }
                }
            }
        }
        evidence
    }

    /// Whether `figure` is in the evidence.
    pub fn grounds(&self, figure: &Figure) -> bool {
        match figure {
            Figure::Number { value, decimals, .. } => self
                .numbers
                .iter()
                .any(|known| number_matches(*known, *value, *decimals)),
            Figure::Date { ymd, .. } => self.dates.contains(ymd),
            Figure::Time { minutes, .. } => self.times.contains(minutes),
        }
    }

    /// The figures of `answer` found in no evidence, as written.
    pub fn ungrounded(&self, answer: &str) -> Vec<String> {
        figures(answer)
            .into_iter()
            .filter(|figure| !self.grounds(figure))
            .map(|figure| figure.text().to_owned())
            .collect()
    }
}

/// The verdict on one turn.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// The rules broken, in words.
    pub broken: Vec<String>,
    /// The answer's figures found in no evidence, as written.
    pub ungrounded: Vec<String>,
}

impl Verdict {
    /// Whether the turn is right: no rule broken, no ungrounded figure.
    pub fn right(&self) -> bool {
        self.broken.is_empty() && self.ungrounded.is_empty()
    }

    /// The problems, for the turn's line (empty when right).
    pub fn describe(&self) -> String {
        let mut parts = self.broken.clone();
        if !self.ungrounded.is_empty() {
            parts.push(format!("ungrounded: {}", self.ungrounded.join(", ")));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" [{}]", parts.join("; "))
        }
    }
}

/// Lower case, with typographic apostrophes made plain.
fn normalised(text: &str) -> String {
    text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'")
}

/// Whether `text` contains one of the `|`-separated `alternatives`: a
/// number by value (see [`number_matches`]; either may be the other
/// rounded), other text as a substring, case-insensitive.
fn contains_any(text: &str, alternatives: &str) -> bool {
    let lower = normalised(text);
    let text_figures = figures(text);
    alternatives.split('|').any(|alternative| {
        let expected: Vec<Figure> = figures(alternative);
        match expected.as_slice() {
            [
                Figure::Number {
                    text: written,
                    value,
                    decimals: expected_decimals,
                },
            ] if written.len() == alternative.trim().len() => text_figures.iter().any(|figure| match figure {
                Figure::Number {
                    value: found, decimals, ..
                } => number_matches(*value, *found, *decimals) || number_matches(*found, *value, *expected_decimals),
                _ => false,
            }),
            _ => lower.contains(&normalised(alternative)),
        }
    })
}

/// Whether a call of `tool` with these arguments and result matches `call`.
fn call_matches(call: &Call, name: &str, arguments: &str, result: &str) -> bool {
    let searched = format!("{arguments} {result}");
    call.tool.split('|').any(|tool| tool == name)
        && call
            .args_contain
            .iter()
            .all(|alternatives| contains_any(&searched, alternatives))
}

/// Judges one turn's `result` against `expect`, and its answer's figures
/// against `evidence`.
pub fn judge(expect: &Expect, result: &AgentRunResult, evidence: &Evidence) -> Verdict {
    let mut broken = Vec::new();
    let answer = result.response.trim();
    if answer.is_empty() {
        broken.push("empty answer".to_owned());
    }
    let succeeded: Vec<(String, &str, &str)> = result
        .tool_calls
        .iter()
        .filter(|call| !call.is_error)
        .map(|call| (call.arguments.to_string(), call.name.as_str(), call.result.as_str()))
        .collect();
    for call in expect.calls {
        if !succeeded
            .iter()
            .any(|(arguments, name, output)| call_matches(call, name, arguments, output))
        {
            broken.push(format!("no successful {}({})", call.tool, call.args_contain.join(", ")));
        }
    }
    if expect.only_these {
        for (arguments, name, output) in &succeeded {
            if !expect
                .calls
                .iter()
                .any(|call| call_matches(call, name, arguments, output))
            {
                broken.push(format!("unexpected call {name}({arguments})"));
            }
        }
    }
    if expect.no_call && !result.tool_calls.is_empty() {
        broken.push("called a tool".to_owned());
    }
    if expect.asks {
        if !succeeded.is_empty() {
            broken.push("called instead of asking".to_owned());
        }
        let lower = normalised(answer);
        if !answer.contains('?') && !ASKING.iter().any(|phrase| lower.contains(phrase)) {
            broken.push("asked nothing".to_owned());
        }
    }
    for alternatives in expect.answer_contains {
        if !contains_any(answer, alternatives) {
            broken.push(format!("answer lacks {alternatives}"));
        }
    }
    if expect.mentions_failure {
        let lower = normalised(answer);
        if !FAILURE.iter().any(|word| lower.contains(word)) {
            broken.push("the failure is not said".to_owned());
        }
    }
    Verdict {
        broken,
        ungrounded: evidence.ungrounded(answer),
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{Message, RunEnd, ToolCallRecord, Usage};
    use serde_json::{Value, json};

    use super::*;

    /// A run that made `calls` (name, arguments, result, failed) and answered `answer`.
    fn run(answer: &str, calls: &[(&str, Value, &str, bool)]) -> AgentRunResult {
        let tool_calls = calls
            .iter()
            .enumerate()
            .map(|(index, (name, arguments, result, is_error))| ToolCallRecord {
                id: format!("call_{index}"),
                name: (*name).to_owned(),
                arguments: arguments.clone(),
                result: (*result).to_owned(),
                is_error: *is_error,
                duration_ms: 1,
                iteration: 1,
                duplicate_of: None,
                cached: false,
                delegated_usage: None,
            })
            .collect();
        AgentRunResult {
            response: answer.to_owned(),
            stop_reason: RunEnd::Completed,
            stop_detail: None,
            iterations: 1,
            tool_calls,
            model_calls: Vec::new(),
            usage: Usage::default(),
            cost_usd: None,
            provider: "llama".into(),
            model: "test".into(),
            messages: vec![Message::user("hi"), Message::assistant(answer)],
            compactions: Vec::new(),
            pending_approvals: Vec::new(),
            scene: None,
            grounding: None,
            guardrail: None,
        }
    }

    fn written(text: &str) -> Vec<String> {
        figures(text).iter().map(|figure| figure.text().to_owned()).collect()
    }

    #[test]
    fn figures_are_read_as_written() {
        assert_eq!(
            written("1. Lisbon: 1,234.5 and 6.94 °C\n2) at 14:30 on 2026-07-16, $432 or -3\n  10. done"),
            ["1,234.5", "6.94", "14:30", "2026-07-16", "432", "3"]
        );
        assert_eq!(written("11. not a marker, 1.5 is not either"), ["11", "1.5"]);
        assert_eq!(written("1,2 and 1,0000 and 7."), ["1", "2", "1", "0000", "7"]);
        assert_eq!(
            figures("2,472,426.47 KRW"),
            [Figure::Number {
                text: "2,472,426.47".into(),
                value: 2_472_426.47,
                decimals: 2
            }]
        );
        assert_eq!(
            figures("2026-13-01")
                .iter()
                .filter(|f| matches!(f, Figure::Date { .. }))
                .count(),
            0,
            "not a date"
        );
        assert!(figures("no figures here").is_empty());
    }

    #[test]
    fn the_figure_judge_table() {
        let evidence = Evidence::new([
            "Today is Wednesday, July 15, 2026 (2026-07-15).",
            "how much is 1,000 dollars in euros, leaving tomorrow",
            r#"{"summary": "Oslo, Norway: 6.94 °C (feels like 4.1 °C)", "converted_amount": 920.0}"#,
            r#"{"date": "2026-07-16", "flights": [{"departure_time": "07:45", "price_usd": 432}]}"#,
        ]);
        let table: &[(&str, &[&str])] = &[
            ("Sure, let me check.", &[]),
            ("1000 dollars is 920 euros.", &[]),
            ("1,000 USD = 920.00 EUR", &[]),
            ("$432 or 432 USD, cheapest fare", &[]),
            ("It's 6.9 °C in Oslo, feels like 4 °C.", &[]),
            ("It's 7 degrees.", &[]),
            ("It's 6.94 °C", &[]),
            ("It's 6.95 °C", &["6.95"]),
            ("It's 6.8 °C", &["6.8"]),
            ("It's 25 °C and sunny.", &["25"]),
            ("You leave on 2026-07-16, July 16, at 07:45.", &[]),
            ("You leave on 2026-07-17.", &["2026-07-17"]),
            ("Departure 08:15.", &["08:15"]),
            ("Today is July 15, 2026.", &[]),
            ("1,000 USD is about 921 EUR", &["921"]),
            ("1. Oslo\n2. Bergen\n3) Tromso", &[]),
            ("Options: 1. Oslo, 2. Bergen", &["1", "2"]),
            ("12. Oslo", &["12"]),
            ("That's 1,500 dollars.", &["1,500"]),
            ("That's 0.92 per dollar.", &["0.92"]),
        ];
        for (answer, ungrounded) in table {
            assert_eq!(evidence.ungrounded(answer), *ungrounded, "{answer}");
        }
    }

    #[test]
    fn expected_figures_tolerate_formatting() {
        assert!(contains_any("It costs $1,234.00.", "1234"));
        assert!(contains_any("It costs 1234 USD.", "1,234"));
        assert!(contains_any("about 87.3 euros", "87.34"));
        assert!(!contains_any("about 87.4 euros", "87.34"));
        assert!(
            contains_any(r#"{"result": 171.428571428571}"#, "171.43"),
            "a more precise figure"
        );
        assert!(contains_any("Vienna is sunny", "wien|vienna"));
        assert!(!contains_any("Vienna is sunny", "oslo"));
        assert!(contains_any("the date 2026-07-16", "2026-07-16"));
    }

    #[test]
    fn calls_must_succeed_with_their_arguments_or_results() {
        const WEATHER: Call = Call {
            tool: "get_weather",
            args_contain: &["vienna|wien"],
        };
        const FLIGHT: Call = Call {
            tool: "get_flight_prices",
            args_contain: &["vienna", "amsterdam", "2026-07-17"],
        };
        let expect = Expect {
            calls: &[WEATHER, FLIGHT],
            ..Expect::ANY
        };
        let weather = r#"{"summary": "Vienna, Austria: 24.1 °C"}"#;
        let flights = r#"{"date": "2026-07-17", "cheapest_price_usd": 212}"#;
        let both = run(
            "24.1 °C in Vienna; flights from 212 USD.",
            &[
                ("get_weather", json!({"location": "Wien"}), weather, false),
                (
                    "get_flight_prices",
                    json!({"origin": "Vienna", "destination": "Amsterdam", "date": "the day after tomorrow"}),
                    flights,
                    false,
                ),
            ],
        );
        let evidence = Evidence::new([weather, flights]);
        assert!(
            judge(&expect, &both, &evidence).right(),
            "the date resolved in the result counts"
        );

        let failed = run(
            "24.1 °C in Vienna.",
            &[
                ("get_weather", json!({"location": "Vienna"}), weather, false),
                ("get_flight_prices", json!({"origin": "Vienna"}), "missing date", true),
            ],
        );
        let verdict = judge(&expect, &failed, &evidence);
        assert_eq!(
            verdict.broken,
            ["no successful get_flight_prices(vienna, amsterdam, 2026-07-17)"]
        );

        let only = Expect {
            calls: &[WEATHER],
            only_these: true,
            ..Expect::ANY
        };
        let verdict = judge(&only, &both, &evidence);
        assert_eq!(verdict.broken.len(), 1, "{verdict:?}");
        assert!(verdict.broken[0].starts_with("unexpected call get_flight_prices"));

        let math = Expect {
            calls: &[Call {
                tool: "calculator|arithmetic",
                args_contain: &["75"],
            }],
            answer_contains: &["75"],
            ..Expect::ANY
        };
        let by_arithmetic = run(
            "It is 75.",
            &[(
                "arithmetic",
                json!({"operation": "divide", "a": 1875, "b": 25}),
                r#"{"result": 75}"#,
                false,
            )],
        );
        assert!(judge(&math, &by_arithmetic, &Evidence::new([r#"{"result": 75}"#])).right());
    }

    #[test]
    fn no_call_asking_and_failure_are_checked() {
        let chat = Expect {
            no_call: true,
            ..Expect::ANY
        };
        let evidence = Evidence::new(["what's up"]);
        assert!(judge(&chat, &run("Not much! How can I help?", &[]), &evidence).right());
        let refused = run(
            "Hi!",
            &[("get_weather", json!({"location": "x"}), "unknown place", true)],
        );
        assert_eq!(judge(&chat, &refused, &evidence).broken, ["called a tool"]);
        assert_eq!(judge(&chat, &run("   ", &[]), &evidence).broken, ["empty answer"]);
        let invented = judge(&chat, &run("I'm great, it's 21 °C here!", &[]), &evidence);
        assert_eq!(invented.ungrounded, ["21"]);
        assert!(!invented.right(), "an ungrounded turn is never right");

        let ask = Expect {
            asks: true,
            ..Expect::ANY
        };
        assert!(judge(&ask, &run("Which day do you want to fly?", &[]), &evidence).right());
        assert!(judge(&ask, &run("Please provide the travel date.", &[]), &evidence).right());
        let refused_guess = run(
            "When do you want to fly?",
            &[(
                "get_flight_prices",
                json!({"date": "2026-07-15"}),
                "the user has not said when",
                true,
            )],
        );
        assert!(
            judge(&ask, &refused_guess, &evidence).right(),
            "a refused guess is allowed"
        );
        let guessed = run(
            "Here are flights. Anything else?",
            &[("get_flight_prices", json!({"date": "2026-07-15"}), "{}", false)],
        );
        assert_eq!(judge(&ask, &guessed, &evidence).broken, ["called instead of asking"]);
        assert_eq!(
            judge(&ask, &run("Flights are cheap.", &[]), &evidence).broken,
            ["asked nothing"]
        );

        let failure = Expect {
            mentions_failure: true,
            ..Expect::ANY
        };
        assert!(
            judge(
                &failure,
                &run("Sorry, I couldn\u{2019}t find that city.", &[]),
                &evidence
            )
            .right()
        );
        assert!(judge(&failure, &run("That place is not recognized.", &[]), &evidence).right());
        assert_eq!(
            judge(&failure, &run("It's sunny there.", &[]), &evidence).broken,
            ["the failure is not said"]
        );

        let contains = Expect {
            answer_contains: &["vienna", "212|213"],
            ..Expect::ANY
        };
        let evidence = Evidence::new(["212"]);
        assert!(judge(&contains, &run("Vienna: 212 USD", &[]), &evidence).right());
        assert_eq!(
            judge(&contains, &run("Vienna it is", &[]), &evidence).broken,
            ["answer lacks 212|213"]
        );
    }
}
