//! The demo checker (`agentry demo --check`): machine-checkable
//! expectations for each turn (tools called and not called, facts of their
//! arguments as the tools resolved them, facts the answer must contain, a
//! question back where information is missing) and a verdict per turn.
//!
//! The checks read the run's record, never the model's wording beyond the
//! facts, so they hold for any provider.

use std::fmt;

use agent_core::{RunEnd, ToolCallRecord};
use chrono::{Datelike, Months, NaiveDate};
use serde_json::Value;

use crate::assistant::DemoTurnReport;
use crate::turns::{LIMIT_TURN, TURNS};

/// One turn's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnVerdict {
    /// 1-based turn number.
    pub turn: usize,
    /// What the turn shows.
    pub shows: &'static str,
    /// What did not hold; empty when the turn passed.
    pub failures: Vec<String>,
}

impl TurnVerdict {
    /// Whether every expectation held.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// The verdicts of a whole demo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// One per turn, in order.
    pub verdicts: Vec<TurnVerdict>,
}

impl CheckReport {
    /// Turns that passed.
    pub fn passed(&self) -> usize {
        self.verdicts.iter().filter(|verdict| verdict.passed()).count()
    }
}

impl fmt::Display for CheckReport {
    /// A table of verdicts, then `passed: N/10`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "| turn | shows | verdict |")?;
        writeln!(f, "|---|---|---|")?;
        for verdict in &self.verdicts {
            let outcome = if verdict.passed() {
                "pass".to_owned()
            } else {
                format!("FAIL: {}", verdict.failures.join("; "))
            };
            writeln!(f, "| {} | {} | {outcome} |", verdict.turn, verdict.shows)?;
        }
        write!(f, "passed: {}/{}", self.passed(), self.verdicts.len())
    }
}

/// Checks every turn of a demo run on `today`.
pub fn check_demo(reports: &[DemoTurnReport], today: NaiveDate) -> CheckReport {
    let verdicts = TURNS
        .iter()
        .enumerate()
        .map(|(index, turn)| TurnVerdict {
            turn: index + 1,
            shows: turn.shows,
            failures: match reports.get(index) {
                Some(report) => check_turn(index, report, today),
                None => vec!["the turn did not run".to_owned()],
            },
        })
        .collect();
    CheckReport { verdicts }
}

/// What did not hold for turn `index` (0-based).
fn check_turn(index: usize, report: &DemoTurnReport, today: NaiveDate) -> Vec<String> {
    let mut turn = Turn::new(report);
    let next_june_15 = next_month_day(today, 6, 15);
    match index {
        0 => {
            turn.no_tools();
            turn.answer_mentions_any(&["weather", "flight", "currenc", "exchange", "travel"]);
        }
        1 => {
            let weather = turn.weather_in("Tokyo");
            turn.answer_has_temperature(weather.as_ref());
            turn.only_tools(&["get_weather"]);
        }
        2 | 4 => {
            turn.no_successful_calls();
            turn.asks_question();
        }
        3 => {
            let weather = turn.weather_in("New York");
            turn.answer_has_temperature(weather.as_ref());
            turn.only_tools(&["get_weather"]);
        }
        5 => {
            let flights = turn.flight("New York", "Paris", next_june_15);
            turn.answer_has_price(flights.as_ref());
            turn.only_tools(&["get_flight_prices"]);
        }
        6 => {
            let next_month = today.checked_add_months(Months::new(1));
            let weather = turn.weather_in("Tokyo");
            let flights = turn.flight("London", "Tokyo", next_month);
            turn.answer_has_temperature(weather.as_ref());
            turn.answer_has_price(flights.as_ref());
            turn.only_tools(&["get_weather", "get_flight_prices"]);
        }
        7 => {
            let weather = turn.weather_in("Paris");
            let flights = turn.flight("New York", "Paris", None);
            let exchange = turn.exchange("USD", "EUR", 1000.0);
            turn.answer_has_temperature(weather.as_ref());
            turn.answer_has_price(flights.as_ref());
            turn.answer_has_number(exchange.as_ref(), "converted_amount", "the euro amount");
            turn.only_tools(&["get_weather", "get_flight_prices", "get_currency_exchange"]);
        }
        LIMIT_TURN => {
            turn.stopped_by_the_limit();
            turn.only_tools(&["get_weather"]);
            turn.answer_is_prose();
            turn.answer_mentions_any(&[
                "australia",
                "belarus",
                "caribbean",
                "denmark",
                "egypt",
                "france",
                "greece",
                "hungary",
                "canberra",
                "minsk",
                "copenhagen",
                "cairo",
                "paris",
                "athens",
                "budapest",
            ]);
            turn.answer_repeats_no_temperature_for_all_places();
        }
        _ => {
            turn.divide_failed();
            turn.answer_mentions_any(&[
                "zero",
                "cannot",
                "can't",
                "can not",
                "not possible",
                "impossible",
                "undefined",
                "unable",
                "not able",
            ]);
        }
    }
    turn.failures
}

/// The next `month`/`day` on or after `today`.
fn next_month_day(today: NaiveDate, month: u32, day: u32) -> Option<NaiveDate> {
    let this_year = NaiveDate::from_ymd_opt(today.year(), month, day)?;
    if this_year >= today {
        Some(this_year)
    } else {
        NaiveDate::from_ymd_opt(today.year() + 1, month, day)
    }
}

/// One turn's record and the failures found so far.
struct Turn<'a> {
    report: &'a DemoTurnReport,
    answer: String,
    failures: Vec<String>,
}

impl<'a> Turn<'a> {
    fn new(report: &'a DemoTurnReport) -> Self {
        Self {
            report,
            answer: report.result.response.to_lowercase(),
            failures: Vec::new(),
        }
    }

    fn fail(&mut self, failure: String) {
        self.failures.push(failure);
    }

    /// Successful calls of `tool`, with their results as JSON.
    fn results(&self, tool: &str) -> Vec<(&'a ToolCallRecord, Value)> {
        self.report
            .result
            .tool_calls
            .iter()
            .filter(|call| call.name == tool && !call.is_error)
            .filter_map(|call| serde_json::from_str(&call.result).ok().map(|value| (call, value)))
            .collect()
    }

    fn no_tools(&mut self) {
        let called = self.report.tools_called();
        if !called.is_empty() {
            self.fail(format!("called {} but no tool was needed", called.join(", ")));
        }
    }

    fn no_successful_calls(&mut self) {
        let made_up: Vec<String> = self
            .report
            .result
            .tool_calls
            .iter()
            .filter(|call| !call.is_error)
            .map(|call| format!("{} {}", call.name, call.arguments))
            .collect();
        if !made_up.is_empty() {
            self.fail(format!(
                "information was missing, yet a tool ran: {}",
                made_up.join(", ")
            ));
        }
    }

    fn only_tools(&mut self, allowed: &[&str]) {
        let mut others: Vec<&str> = self
            .report
            .tools_called()
            .into_iter()
            .filter(|name| !allowed.contains(name))
            .collect();
        others.dedup();
        if !others.is_empty() {
            self.fail(format!("called {} too", others.join(", ")));
        }
    }

    /// A question, or a request to provide or tell something.
    fn asks_question(&mut self) {
        const REQUESTS: [&str; 5] = [
            "please provide",
            "please tell",
            "please specify",
            "let me know",
            "please give",
        ];
        if !self.answer.contains('?') && !REQUESTS.iter().any(|request| self.answer.contains(request)) {
            self.fail("asked no question for the missing information".to_owned());
        }
    }

    fn answer_mentions_any(&mut self, words: &[&str]) {
        if !words.iter().any(|word| self.answer.contains(word)) {
            self.fail(format!("the answer mentions none of: {}", words.join(", ")));
        }
    }

    /// The weather result for `city`, or a failure.
    fn weather_in(&mut self, city: &str) -> Option<Value> {
        let found = self
            .results("get_weather")
            .into_iter()
            .map(|(_, value)| value)
            .find(|value| place_is(&value["location"], city));
        if found.is_none() {
            self.fail(format!("no successful get_weather for {city}"));
        }
        found
    }

    /// The flight result from `origin` to `destination` (on `date` when
    /// given), or a failure.
    fn flight(&mut self, origin: &str, destination: &str, date: Option<NaiveDate>) -> Option<Value> {
        let routes: Vec<Value> = self
            .results("get_flight_prices")
            .into_iter()
            .map(|(_, value)| value)
            .filter(|value| {
                place_is(&value["origin"]["city"], origin) && place_is(&value["destination"]["city"], destination)
            })
            .collect();
        let Some(route) = routes.first() else {
            self.fail(format!(
                "no successful get_flight_prices from {origin} to {destination}"
            ));
            return None;
        };
        if let Some(date) = date {
            let wanted = date.to_string();
            let found = routes.iter().find(|value| value["date"] == wanted.as_str()).cloned();
            if found.is_none() {
                self.fail(format!(
                    "flights from {origin} to {destination} on {}, not {wanted}",
                    route["date"].as_str().unwrap_or("?")
                ));
            }
            return found;
        }
        Some(route.clone())
    }

    /// The exchange result for `amount` `from` → `to`, or a failure.
    fn exchange(&mut self, from: &str, to: &str, amount: f64) -> Option<Value> {
        let found = self
            .results("get_currency_exchange")
            .into_iter()
            .map(|(_, value)| value)
            .find(|value| {
                value["from"] == from
                    && value["to"] == to
                    && value["amount"].as_f64().is_some_and(|a| (a - amount).abs() < 0.005)
            });
        if found.is_none() {
            self.fail(format!(
                "no successful get_currency_exchange of {amount} {from} to {to}"
            ));
        }
        found
    }

    fn answer_has_temperature(&mut self, weather: Option<&Value>) {
        self.answer_has_number(weather, "temperature", "the temperature");
    }

    fn answer_has_price(&mut self, flights: Option<&Value>) {
        self.answer_has_number(flights, "cheapest_price_usd", "the cheapest price");
    }

    /// The answer gives `field` of `result` (as written, rounded, or with
    /// thousands separators).
    fn answer_has_number(&mut self, result: Option<&Value>, field: &str, what: &str) {
        let Some(number) = result.and_then(|value| value[field].as_f64()) else {
            return;
        };
        if !mentions_number(&self.answer, number) {
            self.fail(format!("the answer does not give {what} ({number})"));
        }
    }

    fn stopped_by_the_limit(&mut self) {
        let cause = self.report.result.stop_reason;
        if !matches!(cause, RunEnd::MaxIterations | RunEnd::LoopDetected) {
            self.fail(format!("ended {}, not at the iteration limit", cause.as_str()));
        }
    }

    fn answer_is_prose(&mut self) {
        let answer = self.answer.trim_start();
        if answer.is_empty() {
            self.fail("no answer".to_owned());
        } else if answer.starts_with('{') || answer.starts_with("```") || answer.contains("\"name\"") {
            self.fail("the answer is a raw tool call".to_owned());
        }
    }

    /// Temperatures the answer gives that no tool returned (as the
    /// temperature or the feels-like one), counted per place asked for: one
    /// made-up figure repeated for every country is the failure this
    /// catches.
    fn answer_repeats_no_temperature_for_all_places(&mut self) {
        let fetched: Vec<f64> = self
            .results("get_weather")
            .iter()
            .flat_map(|(_, value)| [value["temperature"].as_f64(), value["feels_like"].as_f64()])
            .flatten()
            .collect();
        let figures = temperatures_in(&self.answer);
        let invented = figures
            .iter()
            .filter(|figure| !fetched.iter().any(|t| (t - **figure).abs() < 0.51))
            .count();
        if invented > 0 {
            self.fail(format!("the answer gives {invented} temperature(s) no tool returned"));
        }
    }

    /// The division was tried with 17 and failed, or the conversation
    /// already holds the tool's failure, so the model may answer from it.
    fn divide_failed(&mut self) {
        let tried =
            self.report.result.tool_calls.iter().any(|call| {
                call.name == "divide_by_secret_number" && call.is_error && call.arguments["number"] == 17.0
            });
        let known = self.report.result.messages.iter().any(|message| {
            message
                .as_tool_result()
                .is_some_and(|result| result.name == "divide_by_secret_number" && result.is_error)
        });
        if !tried && !known {
            self.fail("divide_by_secret_number was not tried with 17".to_owned());
        }
    }
}

/// Whether a resolved place (`"Tokyo, Japan"`) is `city`.
fn place_is(value: &Value, city: &str) -> bool {
    value.as_str().is_some_and(|place| {
        place
            .split(',')
            .next()
            .is_some_and(|name| name.trim().eq_ignore_ascii_case(city))
    })
}

/// The numbers written in `text` (`12`, `-3.5`, `1,234.50`).
fn numbers_in(text: &str) -> Vec<f64> {
    let mut numbers = Vec::new();
    let mut current = String::new();
    let bytes: Vec<char> = text.chars().collect();
    for (index, ch) in bytes.iter().enumerate() {
        let digit_follows = bytes.get(index + 1).is_some_and(char::is_ascii_digit);
        let joins = (*ch == '.' || *ch == ',') && !current.is_empty() && digit_follows;
        let sign = *ch == '-' && current.is_empty() && digit_follows;
        if ch.is_ascii_digit() || joins || sign {
            current.push(*ch);
        } else if !current.is_empty() {
            numbers.extend(current.replace(',', "").parse::<f64>().ok());
            current.clear();
        }
    }
    numbers.extend(current.replace(',', "").parse::<f64>().ok());
    numbers
}

/// Whether `text` gives `number`: to one decimal, or rounded to a whole.
fn mentions_number(text: &str, number: f64) -> bool {
    numbers_in(text)
        .iter()
        .any(|n| (n - number).abs() < 0.051 || (n - number.round()).abs() < 0.001)
}

/// The numbers in `text` written as temperatures: followed by `°`,
/// "degree(s)", "celsius" or "fahrenheit".
fn temperatures_in(text: &str) -> Vec<f64> {
    const UNITS: [&str; 4] = ["°", "degree", "celsius", "fahrenheit"];
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let digits_end = rest[start..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .map_or(rest.len(), |end| start + end);
        let number = rest[start..digits_end].trim_end_matches(['.', ',']);
        let after = rest[digits_end..].trim_start();
        if UNITS.iter().any(|unit| after.starts_with(unit)) {
            let negative = rest[..start].ends_with('-');
            if let Ok(value) = number.replace(',', "").parse::<f64>() {
                found.push(if negative { -value } else { value });
            }
        }
        rest = &rest[digits_end..];
    }
    found
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use agent_core::{AgentRunResult, RunEnd};
    use serde_json::json;

    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 22).unwrap_or_default()
    }

    fn call(name: &str, arguments: Value, result: &Value, is_error: bool) -> ToolCallRecord {
        ToolCallRecord {
            id: format!("call_{name}"),
            name: name.to_owned(),
            arguments,
            result: result.to_string(),
            is_error,
            duration_ms: 0,
            iteration: 1,
            duplicate_of: None,
            cached: false,
            delegated_usage: None,
        }
    }

    fn report(index: usize, response: &str, calls: Vec<ToolCallRecord>, stop: RunEnd) -> DemoTurnReport {
        DemoTurnReport {
            prompt: TURNS[index].prompt,
            result: AgentRunResult {
                response: response.to_owned(),
                stop_reason: stop,
                stop_detail: None,
                iterations: 1,
                tool_calls: calls,
                model_calls: Vec::new(),
                usage: agent_core::Usage::default(),
                cost_usd: None,
                provider: "scripted".to_owned(),
                model: "scripted".to_owned(),
                messages: Vec::new(),
                compactions: Vec::new(),
                pending_approvals: Vec::new(),
                scene: None,
                grounding: None,
                guardrail: None,
            },
            elapsed: Duration::ZERO,
        }
    }

    fn weather(city: &str, temperature: f64) -> ToolCallRecord {
        call(
            "get_weather",
            json!({"location": city}),
            &json!({"location": format!("{city}, Somewhere"), "temperature": temperature}),
            false,
        )
    }

    #[test]
    fn a_weather_turn_needs_the_city_and_the_temperature() {
        let good = report(
            1,
            "Tokyo: 12°C, cloudy.",
            vec![weather("Tokyo", 12.3)],
            RunEnd::Completed,
        );
        assert_eq!(check_turn(1, &good, today()), Vec::<String>::new());
        let wrong_city = report(1, "12 degrees.", vec![weather("Osaka", 12.3)], RunEnd::Completed);
        assert_eq!(
            check_turn(1, &wrong_city, today()),
            ["no successful get_weather for Tokyo"]
        );
        let made_up = report(1, "It is 30 degrees.", vec![weather("Tokyo", 12.3)], RunEnd::Completed);
        assert_eq!(
            check_turn(1, &made_up, today()),
            ["the answer does not give the temperature (12.3)"]
        );
    }

    #[test]
    fn a_missing_city_needs_a_question_and_no_tool_result() {
        let asked = report(2, "Which city is your favorite?", vec![], RunEnd::Completed);
        assert!(check_turn(2, &asked, today()).is_empty());
        let placeholder = report(
            2,
            "It is 13 degrees there.",
            vec![weather("Your favorite city name", 13.7)],
            RunEnd::Completed,
        );
        let failures = check_turn(2, &placeholder, today());
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].starts_with("information was missing, yet a tool ran: get_weather"));
        // A tool error (the tool refused the placeholder) is fine.
        let refused = call("get_weather", json!({"location": "?"}), &json!("unknown place"), true);
        let refused = report(2, "Which city?", vec![refused], RunEnd::Completed);
        assert!(check_turn(2, &refused, today()).is_empty());
    }

    #[test]
    fn june_15_means_the_next_june_15() {
        let flights = |date: &str| {
            call(
                "get_flight_prices",
                json!({"origin": "NYC", "destination": "Paris", "date": date}),
                &json!({"origin": {"city": "New York, United States"}, "destination": {"city": "Paris, France"},
                       "date": date, "cheapest_price_usd": 512}),
                false,
            )
        };
        let good = report(5, "From $512.", vec![flights("2027-06-15")], RunEnd::Completed);
        assert!(check_turn(5, &good, today()).is_empty());
        let today_instead = report(5, "From $512.", vec![flights("2026-11-22")], RunEnd::Completed);
        assert_eq!(
            check_turn(5, &today_instead, today()),
            ["flights from New York to Paris on 2026-11-22, not 2027-06-15"]
        );
    }

    #[test]
    fn the_limit_turn_must_stop_at_the_limit_and_invent_no_temperatures() {
        let calls = vec![weather("Canberra", 21.4), weather("Minsk", -2.0)];
        let good = report(
            LIMIT_TURN,
            "Canberra 21 °C, Minsk -2 °C; I ran out of steps for the others.",
            calls.clone(),
            RunEnd::MaxIterations,
        );
        assert!(check_turn(LIMIT_TURN, &good, today()).is_empty());
        // A tool's summary quoted whole: its feels-like figure is the tool's too.
        let paris = call(
            "get_weather",
            json!({"location": "Paris"}),
            &json!({"location": "Paris, France", "temperature": 8.4, "feels_like": 7.0}),
            false,
        );
        let quoted = report(
            LIMIT_TURN,
            "Paris, France: 8.4 °C (feels like 7.0 °C), mostly cloudy",
            vec![paris],
            RunEnd::MaxIterations,
        );
        assert!(check_turn(LIMIT_TURN, &quoted, today()).is_empty());
        let invented = report(
            LIMIT_TURN,
            "- Australia: 10 degrees\n- Belarus: 10 degrees",
            calls.clone(),
            RunEnd::MaxIterations,
        );
        assert_eq!(
            check_turn(LIMIT_TURN, &invented, today()),
            ["the answer gives 2 temperature(s) no tool returned"]
        );
        let fragment = report(
            LIMIT_TURN,
            "{\"name\": \"get_weather\", \"arguments\": {\"loc",
            calls,
            RunEnd::Completed,
        );
        let failures = check_turn(LIMIT_TURN, &fragment, today());
        assert!(
            failures.contains(&"ended completed, not at the iteration limit".to_owned()),
            "{failures:?}"
        );
        assert!(
            failures.contains(&"the answer is a raw tool call".to_owned()),
            "{failures:?}"
        );
    }

    #[test]
    fn the_report_prints_a_table_and_the_score() {
        let reports: Vec<DemoTurnReport> = (0..TURNS.len())
            .map(|index| report(index, "I help with weather and flights.", vec![], RunEnd::Completed))
            .collect();
        let checked = check_demo(&reports, today());
        assert_eq!(checked.passed(), 1);
        let table = checked.to_string();
        assert!(table.starts_with("| turn | shows | verdict |\n|---|---|---|\n| 1 | an answer without tools | pass |"));
        assert!(table.ends_with("passed: 1/10"), "{table}");
        assert!(
            table.contains("| 3 | a question for missing information | FAIL: asked no question"),
            "{table}"
        );
    }

    #[test]
    fn numbers_are_read_with_separators_signs_and_decimals() {
        assert_eq!(numbers_in("from $1,234.50 to -3 and 7."), [1234.5, -3.0, 7.0]);
        assert!(mentions_number("about 12 degrees", 12.3));
        assert!(mentions_number("12.3°C", 12.3));
        assert!(!mentions_number("13 degrees", 12.3));
        assert!(mentions_number("€ 921.30", 921.3));
        assert_eq!(
            temperatures_in("8 countries: Minsk -2 °C, Cairo 21.5 degrees, Oslo 3°; humidity 80%"),
            [-2.0, 21.5, 3.0]
        );
    }
}
