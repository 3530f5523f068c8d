//! Figures in text, and whether the turn's evidence gave them: the checker
//! behind [`Grounding`](crate::Grounding). Deterministic, no I/O, linear in
//! the text.
//!
//! [`figures`] finds the factual figures of a text: numbers with or without
//! units and currencies, percentages, temperatures, dates and times.
//! [`Evidence`] holds the figures of what the user said, the system prompt
//! and the tool results; [`ungrounded`] lists the figures of an answer that
//! none of them gave. Matching is tolerant of formatting: `1,000` is
//! `1000` is `1 000`, `$432` is `432 USD` is a bare `432`, `6.9 °C` is a
//! rounded `6.94`, `$1.2 million` is a rounded `1,234,567`, `2:30 pm` (and
//! a bare `2:30`) is `14:30`, `June 2` is `2026-06-02`. Counts up to ten,
//! identifiers (`gpt-4o`, `B737`) and versions (`1.2.3`) are never
//! ungrounded; a sum, difference, product or quotient of two of the user's
//! numbers is grounded (the first [`MAX_USER_OPERANDS`] of them).
//!
//! ```
//! use agent_runner::grounding::{Evidence, ungrounded};
//!
//! let mut evidence = Evidence::new();
//! evidence.add_user("How warm is Paris, and what is 12 * 3?");
//! evidence.add(r#"{"city": "Paris", "temperature_c": 18.44}"#);
//! let invented = ungrounded("Paris has 18.4 °C, 12 * 3 is 36, and Rome has 24 °C.", &evidence);
//! let texts: Vec<&str> = invented.iter().map(|figure| figure.text.as_str()).collect();
//! assert_eq!(texts, ["24 °C"]);
//! ```

mod scan;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// What a figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// A bare number (`42`, `1,000`, `6.9`, `10km`, `1.5 billion`).
    Number,
    /// An amount with a currency sign, code or word (`$432`, `12.50 EUR`,
    /// `12.50 €`, `30 euros`); matched by value, whatever the currency.
    Money,
    /// A percentage (`12%`, `12 percent`).
    Percent,
    /// A temperature (`6.9 °C`, `44°F`, `22 degrees`).
    Temperature,
    /// A date (`2026-06-02`, `June 2`, `2 June 2026`); its value is
    /// `year * 10000 + month * 100 + day`, the year 0 when not written.
    Date,
    /// A time of day (`14:30`, `2:30 pm`); its value is minutes since midnight.
    Time,
}

/// One figure found in a text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The figure as written, with its currency and unit (`$1,234.50`).
    pub text: String,
    /// Its value (see [`FigureKind`] for dates and times).
    pub value: f64,
    /// What it measures.
    pub kind: FigureKind,
    /// Byte offset of its start in the text.
    pub start: usize,
    /// Byte offset of its end in the text.
    pub end: usize,
    /// The precision it is written to: digits after the decimal point
    /// (`6.94`: 2); negative for a scale word (`1.2 million`: -5, it is
    /// precise to 10^5; `12k`: -3).
    pub decimals: i32,
}

/// All figures of `text`, in order.
pub fn figures(text: &str) -> Vec<Figure> {
    scan::scan(text)
}

/// The most decimals evidence is rounded to when matched.
const MAX_DECIMALS: i32 = 4;

/// The coarsest precision evidence is rounded to when matched: a figure
/// with a scale word (`1.2 trillion` is precise to 10^11).
const MIN_DECIMALS: i32 = -12;

/// The user's numbers that count as operands of a figure the model derived
/// (`17 * 23 = 391`): the first ones only, so the check stays bounded.
pub const MAX_USER_OPERANDS: usize = 16;

/// Bare numbers up to this one are counts and ordinals (`3 cities`,
/// `step 2`, `1.` of a list): never ungrounded.
const MAX_COUNT: f64 = 10.0;

/// The figures a turn's evidence gave.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Quantities (numbers, money, percentages, temperatures) by value,
    /// rounded to each of 0..=MAX_DECIMALS decimals, and for large ones to
    /// tens, hundreds, ... down to [`MIN_DECIMALS`]: `(decimals, scaled)`.
    quantities: HashSet<(i32, i64)>,
    /// Quantities by their exact bits, for those too large to scale
    /// (a 20-digit identifier the answer repeats).
    exact: HashSet<u64>,
    /// Quantities from 2^53 up, whose `f64`s no longer tell every digit
    /// apart, by their digits ([`long_key`]).
    long: HashSet<String>,
    /// Dates as `year * 10000 + month * 100 + day`, and with the year 0.
    dates: HashSet<i64>,
    /// Times in minutes since midnight.
    times: HashSet<i64>,
    /// The first [`MAX_USER_OPERANDS`] numbers the user wrote.
    operands: Vec<f64>,
}

impl Evidence {
    /// Evidence with nothing in it.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no figure was added.
    pub fn is_empty(&self) -> bool {
        self.quantities.is_empty()
            && self.exact.is_empty()
            && self.long.is_empty()
            && self.dates.is_empty()
            && self.times.is_empty()
    }

    /// Adds the figures of a system prompt or a tool result.
    pub fn add(&mut self, text: &str) {
        for figure in figures(text) {
            self.insert(&figure);
        }
    }

    /// Adds the figures of a user message: evidence, and the operands of a
    /// figure the model may derive from them.
    pub fn add_user(&mut self, text: &str) {
        for figure in figures(text) {
            self.insert(&figure);
            let is_quantity = !matches!(figure.kind, FigureKind::Date | FigureKind::Time);
            if is_quantity && self.operands.len() < MAX_USER_OPERANDS {
                self.operands.push(figure.value);
            }
        }
    }

    fn insert(&mut self, figure: &Figure) {
        match figure.kind {
            FigureKind::Date => {
                let value = figure.value as i64;
                let (year, month_day) = (value / 10_000, value % 10_000);
                self.dates.insert(value);
                self.dates.insert(month_day);
                // The parts of a date may be written alone: "in 2026", "the 2nd".
                for part in [year, month_day / 100, month_day % 100] {
                    if part > 0 {
                        self.insert_quantity(part as f64);
                    }
                }
            }
            FigureKind::Time => {
                let minutes = figure.value as i64;
                self.times.insert(minutes);
                self.insert_quantity((minutes / 60) as f64);
            }
            _ => {
                if is_long(figure.value) {
                    self.long.insert(long_key(figure));
                }
                self.insert_quantity(figure.value);
                // `5 120` may be two numbers of a table rather than 5120.
                if has_space_groups(&figure.text, char::is_whitespace) {
                    for part in figure.text.split(char::is_whitespace) {
                        let digits: String = part.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
                        if let Ok(value) = digits.parse::<f64>() {
                            self.insert_quantity(value);
                        }
                    }
                }
            }
        }
    }

    fn insert_quantity(&mut self, value: f64) {
        self.exact.insert(bits(value));
        for decimals in MIN_DECIMALS..=MAX_DECIMALS {
            // Rounded to thousands only when it has thousands.
            if decimals < 0 && value.abs() < 10f64.powi(-decimals) {
                continue;
            }
            if let Some(scaled) = scaled(value, decimals) {
                self.quantities.insert((decimals, scaled));
            }
        }
    }

    /// Whether the evidence gave `figure`: the same value, or one that
    /// rounds to it at the figure's decimals; for a quantity, also a count
    /// up to ten, or a sum, difference, product, quotient or percentage of
    /// two of the user's numbers. A date without a year matches the date in
    /// any year; a date with one also matches its day and month given with
    /// the year given apart (`June 2` and `2026`). A time without am/pm
    /// (`2:30`) matches either half of the day (`14:30`).
    pub fn contains(&self, figure: &Figure) -> bool {
        match figure.kind {
            FigureKind::Date => {
                let value = figure.value as i64;
                let (year, month_day) = (value / 10_000, value % 10_000);
                self.dates.contains(&value)
                    || (year > 0 && self.dates.contains(&month_day) && self.quantities.contains(&(0, year)))
            }
            FigureKind::Time => {
                let minutes = figure.value as i64;
                let without_meridiem = !figure.text.contains(|c: char| c.is_ascii_alphabetic());
                let twelve_hour = (60..13 * 60).contains(&minutes);
                self.times.contains(&minutes)
                    || (without_meridiem && twelve_hour && self.times.contains(&((minutes + 12 * 60) % (24 * 60))))
            }
            kind => {
                if is_long(figure.value) {
                    return self.long.contains(&long_key(figure));
                }
                let decimals = figure.decimals.clamp(MIN_DECIMALS, MAX_DECIMALS);
                let is_count = kind == FigureKind::Number
                    && figure.value.fract() == 0.0
                    && (0.0..=MAX_COUNT).contains(&figure.value);
                is_count
                    || self.exact.contains(&bits(figure.value))
                    || scaled(figure.value, decimals).is_some_and(|key| self.quantities.contains(&(decimals, key)))
                    || self.derived(figure.value, decimals)
                    || self.parts_grounded(figure)
            }
        }
    }

    /// Whether a figure grouped by plain spaces (`5 120`) is grounded as
    /// separate numbers: a plain space may as well separate two numbers of
    /// a list (`day 3 150 km`). Thin and non-breaking spaces only group.
    fn parts_grounded(&self, figure: &Figure) -> bool {
        has_space_groups(&figure.text, |c| c == ' ')
            && figure
                .text
                .split(' ')
                .filter(|part| part.contains(|c: char| c.is_ascii_digit()))
                .all(|part| {
                    let digits: String = part.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
                    let decimals = digits.split_once('.').map_or(0, |(_, fraction)| fraction.len());
                    digits.parse::<f64>().is_ok_and(|value| {
                        self.contains(&Figure {
                            text: digits.clone(),
                            value,
                            kind: FigureKind::Number,
                            start: 0,
                            end: digits.len(),
                            decimals: i32::try_from(decimals).unwrap_or(MAX_DECIMALS),
                        })
                    })
                })
    }

    /// Whether `value` (at `decimals`) is an operation on two user operands.
    fn derived(&self, value: f64, decimals: i32) -> bool {
        let Some(target) = scaled(value, decimals) else {
            return false;
        };
        let matches = |candidate: f64| scaled(candidate, decimals) == Some(target);
        self.operands.iter().enumerate().any(|(i, &a)| {
            self.operands.iter().skip(i + 1).any(|&b| {
                matches(a + b)
                    || matches(a - b)
                    || matches(b - a)
                    || matches(a * b)
                    || (b != 0.0 && matches(a / b))
                    || (a != 0.0 && matches(b / a))
                    || matches(a * b / 100.0)
            })
        })
    }
}

/// `value` rounded to `decimals` decimals, as an integer of hundredths
/// (etc.; of thousands for -3).
fn scaled(value: f64, decimals: i32) -> Option<i64> {
    let factor = 10f64.powi(decimals);
    let scaled = (value * factor).round();
    (scaled.is_finite() && scaled.abs() < 9.0e15).then_some(scaled as i64)
}

/// Whether a `space` separates digits in `text` (`5 120`).
fn has_space_groups(text: &str, space: impl Fn(char) -> bool) -> bool {
    let mut previous = [' ', ' '];
    text.chars().any(|c| {
        let groups = previous[0].is_ascii_digit() && space(previous[1]) && c.is_ascii_digit();
        previous = [previous[1], c];
        groups
    })
}

/// Whether `value` is too large for an `f64` to hold every integer near
/// it (2^53 and up).
fn is_long(value: f64) -> bool {
    value.abs() >= 9_007_199_254_740_992.0
}

/// The digits of a long figure as written, with its sign: the key of
/// [`Evidence::long`].
fn long_key(figure: &Figure) -> String {
    let sign = if figure.value < 0.0 { "-" } else { "" };
    let digits: String = figure
        .text
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    format!("{sign}{digits}")
}

/// The bits of `value`, one zero for `0` and `-0`.
fn bits(value: f64) -> u64 {
    if value == 0.0 { 0 } else { value.to_bits() }
}

/// The figures of `answer` that no evidence gave (empty: it is grounded).
pub fn ungrounded(answer: &str, evidence: &Evidence) -> Vec<Figure> {
    figures(answer)
        .into_iter()
        .filter(|figure| !evidence.contains(figure))
        .collect()
}

#[cfg(test)]
mod tests;
