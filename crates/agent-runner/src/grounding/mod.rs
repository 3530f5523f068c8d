//! Figures in text, and whether the turn's evidence gave them: the checker
//! behind [`Grounding`](crate::Grounding). Deterministic, no I/O, linear in
//! the text.
//!
//! [`figures`] finds the factual figures of a text: numbers with or without
//! units and currencies, percentages, temperatures, dates and times.
//! [`Evidence`] holds the figures of what the user said, the system prompt
//! and the tool results; [`ungrounded`] lists the figures of an answer that
//! none of them gave. Matching is tolerant of formatting: `1,000` is
//! `1000`, `$432` is `432 USD` is a bare `432`, `6.9 °C` is a rounded
//! `6.94`, `2:30 pm` is `14:30`, `June 2` is `2026-06-02`.
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
    /// A bare number (`42`, `1,000`, `6.9`, `10km`).
    Number,
    /// An amount with a currency sign, code or word (`$432`, `12.50 EUR`).
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
    /// Digits written after the decimal point.
    pub decimals: u32,
}

/// All figures of `text`, in order.
pub fn figures(text: &str) -> Vec<Figure> {
    scan::scan(text)
}

/// The most decimals evidence is rounded to when matched.
const MAX_DECIMALS: u32 = 4;

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
    /// rounded to each of 0..=MAX_DECIMALS decimals: `(decimals, scaled)`.
    quantities: HashSet<(u32, i64)>,
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
        self.quantities.is_empty() && self.dates.is_empty() && self.times.is_empty()
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
            _ => self.insert_quantity(figure.value),
        }
    }

    fn insert_quantity(&mut self, value: f64) {
        for decimals in 0..=MAX_DECIMALS {
            if let Some(scaled) = scaled(value, decimals) {
                self.quantities.insert((decimals, scaled));
            }
        }
    }

    /// Whether the evidence gave `figure`: the same value, or one that
    /// rounds to it at the figure's decimals; for a quantity, also a count
    /// up to ten, or a sum, difference, product, quotient or percentage of
    /// two of the user's numbers.
    pub fn contains(&self, figure: &Figure) -> bool {
        match figure.kind {
            FigureKind::Date => self.dates.contains(&(figure.value as i64)),
            FigureKind::Time => self.times.contains(&(figure.value as i64)),
            kind => {
                let decimals = figure.decimals.min(MAX_DECIMALS);
                let is_count =
                    kind == FigureKind::Number && figure.decimals == 0 && (0.0..=MAX_COUNT).contains(&figure.value);
                is_count
                    || scaled(figure.value, decimals).is_some_and(|key| self.quantities.contains(&(decimals, key)))
                    || self.derived(figure.value, decimals)
            }
        }
    }

    /// Whether `value` (at `decimals`) is an operation on two user operands.
    fn derived(&self, value: f64, decimals: u32) -> bool {
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

/// `value` rounded to `decimals` decimals, as an integer of hundredths (etc.).
fn scaled(value: f64, decimals: u32) -> Option<i64> {
    let factor = 10f64.powi(i32::try_from(decimals).ok()?);
    let scaled = (value * factor).round();
    (scaled.is_finite() && scaled.abs() < 9.0e15).then_some(scaled as i64)
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
