//! Numbers and what they measure: thousands groups (`1,234`, `1 234`),
//! decimals, a sign, a scale (`1.2 million`, `12k`), a currency before or
//! after (`$432`, `USD 432`, `432 USD`, `12.50 €`, `30 euros`), a unit
//! after (`%`, `percent`, `°C`, `degrees`, `10km`), or am/pm (`9am`), or a
//! month (`2 June`, which makes a date).

use super::{Scanner, is_letter, to_24h};
use crate::grounding::FigureKind;

/// Currency signs written before an amount.
const CURRENCY_SIGNS: [char; 6] = ['$', '€', '£', '¥', '₹', '₩'];

/// ISO currency codes, written before or after an amount.
const CURRENCY_CODES: [&str; 26] = [
    "USD", "EUR", "GBP", "JPY", "AUD", "CAD", "CHF", "CNY", "SEK", "NOK", "DKK", "INR", "NZD", "MXN", "BRL", "ZAR",
    "SGD", "HKD", "KRW", "PLN", "CZK", "HUF", "TRY", "THB", "ISK", "AED",
];

/// Currency words written after an amount (lowercase).
const CURRENCY_WORDS: [&str; 12] = [
    "dollar", "dollars", "euro", "euros", "pound", "pounds", "yen", "franc", "francs", "krona", "kronor", "rupees",
];

/// Units glued to a number that keep it a figure (lowercase): `10km`.
const GLUED_UNITS: [&str; 21] = [
    "km", "kg", "g", "m", "cm", "mm", "h", "hr", "hrs", "min", "mins", "s", "sec", "mi", "ml", "l", "mph", "kmh", "kw",
    "kwh", "x",
];

/// The power of ten of a scale glued to a number: `12k`, `12K`, `1.2M`
/// (not `m`: metres), `3bn`.
fn glued_scale(letters: &str) -> Option<i32> {
    match letters {
        "k" | "K" => Some(3),
        "M" => Some(6),
        "bn" | "Bn" => Some(9),
        _ => None,
    }
}

/// The power of ten of a scale word written after a number: `1.2 million`.
fn scale_word(word: &str) -> Option<i32> {
    const WORDS: [(&str, i32); 8] = [
        ("thousand", 3),
        ("million", 6),
        ("millions", 6),
        ("billion", 9),
        ("billions", 9),
        ("bn", 9),
        ("trillion", 12),
        ("trillions", 12),
    ];
    WORDS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(word))
        .map(|(_, power)| *power)
}

/// A space between groups of thousands: `1 000`, `1\u{a0}000`, `1\u{202f}000`.
fn is_group_space(c: char) -> bool {
    matches!(c, ' ' | '\u{a0}' | '\u{202f}' | '\u{2009}')
}

/// A number as written: its value, its decimals, and where it ends.
struct Number {
    /// Its digits without separators (`1234.5`), for scaling it exactly.
    digits: String,
    value: f64,
    decimals: usize,
    end: usize,
}

impl Number {
    /// The number of `digits`; `Err(end)` when it is too large for an `f64`.
    fn parse(digits: String, decimals: usize, end: usize) -> Result<Self, usize> {
        match digits.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Self {
                digits,
                value,
                decimals,
                end,
            }),
            _ => Err(end),
        }
    }

    /// Its value times `10^power`, as exact as the digits allow; `None`
    /// when that is too large for an `f64`.
    fn scaled(&self, power: i32) -> Option<f64> {
        format!("{}e{power}", self.digits)
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite())
    }
}

impl Scanner<'_> {
    /// The digits at `start` as a number: thousands groups (`1,234,567`,
    /// `1 234 567`) and decimals (`6.94`); `Err` for a version (`1.2.3`),
    /// with where the version ends.
    fn read_number(&self, start: usize) -> Result<Number, usize> {
        let mut end = self.digits_end(start);
        let mut digits: String = self.slice(start, end).to_owned();
        if end - start <= 3 {
            while self.at(end) == Some(',') && self.digits_end(end + 1) == end + 4 {
                digits.push_str(self.slice(end + 1, end + 4));
                end += 4;
            }
        }
        if end - start <= 3 {
            while self.at(end).is_some_and(is_group_space)
                && self.digits_end(end + 1) == end + 4
                && self.ends_space_group(end + 4)
            {
                digits.push_str(self.slice(end + 1, end + 4));
                end += 4;
            }
        }
        let mut decimals = 0;
        if self.at(end) == Some('.') && self.is_digit(end + 1) {
            let fraction_end = self.digits_end(end + 1);
            if let Some(version_end) = self.version_end(fraction_end) {
                return Err(version_end);
            }
            digits.push('.');
            digits.push_str(self.slice(end + 1, fraction_end));
            decimals = fraction_end - end - 1;
            end = fraction_end;
        }
        Number::parse(digits, decimals, end)
    }

    /// `.5`: the fraction at `start` without its leading zero.
    fn read_fraction(&self, start: usize) -> Result<Number, usize> {
        let end = self.digits_end(start);
        if let Some(version_end) = self.version_end(end) {
            return Err(version_end);
        }
        Number::parse(format!("0.{}", self.slice(start, end)), end - start, end)
    }

    /// Where a version (`1.2.3`) whose second part ends at `index` ends;
    /// `None` when no third part follows.
    fn version_end(&self, index: usize) -> Option<usize> {
        if self.at(index) != Some('.') || !self.is_digit(index + 1) {
            return None;
        }
        let mut end = index;
        while self.at(end) == Some('.') && self.is_digit(end + 1) {
            end = self.digits_end(end + 1);
        }
        Some(end)
    }

    /// Whether a group of three digits after a space ends at `index`, so
    /// that the space was a thousands separator: not glued to a word, a
    /// range, a time or a slash (`3 100m`, `2 100-200`, `1 230:00`).
    fn ends_space_group(&self, index: usize) -> bool {
        !self.is_word_char(index) && !matches!(self.at(index), Some(':' | '-' | '/' | '–'))
    }

    /// Whether the digit at `start` follows a point that starts the number
    /// (`.5`, ` .25`), not a sentence's end or a range (`3..5`).
    fn is_bare_point(&self, start: usize) -> bool {
        start > 0
            && self.at(start - 1) == Some('.')
            && (start == 1
                || self
                    .at(start - 2)
                    .is_some_and(|c| c.is_whitespace() || matches!(c, '(' | '[' | '"' | '\'' | '=' | ':')))
    }

    /// Whether a minus sign is written just before `index` (`-3`, `−3`),
    /// not the dash of a range (`10-12`) or of a word (`gpt-4`).
    fn is_minus_before(&self, index: usize) -> bool {
        index > 0 && matches!(self.at(index - 1), Some('-' | '−')) && !(index > 1 && self.is_word_char(index - 2))
    }

    /// A number and what it measures.
    pub(super) fn number(&mut self, start: usize) -> usize {
        let bare_point = self.is_bare_point(start);
        let read = if bare_point {
            self.read_fraction(start)
        } else {
            self.read_number(start)
        };
        let number = match read {
            Ok(number) => number,
            Err(end) => return end,
        };
        let mut figure_start = if bare_point { start - 1 } else { start };
        let mut negative = self.is_minus_before(figure_start);
        if negative {
            figure_start -= 1;
        }
        let mut kind = FigureKind::Number;
        if let Some(prefix_start) = self.currency_before(figure_start) {
            kind = FigureKind::Money;
            figure_start = prefix_start;
            // `-$5`.
            if !negative && self.is_minus_before(figure_start) {
                negative = true;
                figure_start -= 1;
            }
        }
        let sign = if negative { -1.0 } else { 1.0 };
        let value = sign * number.value;
        let decimals = i32::try_from(number.decimals).unwrap_or(i32::MAX);
        let integer = number.decimals == 0;
        let mut end = number.end;
        let mut scale = 0;

        // Letters glued to the number.
        let glued_end = self.letters_end(end);
        if glued_end > end {
            if self.is_word_char(glued_end) {
                return self.skip_glued(self.word_end(glued_end));
            }
            let raw = self.slice(end, glued_end);
            let glued = raw.to_lowercase();
            // `£1.2m`: with a currency, `m` is millions, not metres.
            let money_millions = (kind == FigureKind::Money && raw == "m").then_some(6);
            if let Some(power) = glued_scale(raw).or(money_millions) {
                scale = power;
                end = glued_end;
            } else {
                match glued.as_str() {
                    "am" | "pm" if integer && (1..=12).contains(&(value as i64)) => {
                        let minutes = f64::from(to_24h(value as u32, glued == "pm") * 60);
                        self.push(figure_start, glued_end, minutes, FigureKind::Time, 0);
                    }
                    "st" | "nd" | "rd" | "th" if integer => {
                        if let Some(date_end) = self.day_first_date(figure_start, glued_end, value) {
                            return date_end;
                        }
                        self.push(figure_start, glued_end, value, FigureKind::Number, 0);
                    }
                    "c" | "f" => self.push(figure_start, glued_end, value, FigureKind::Temperature, decimals),
                    unit if GLUED_UNITS.contains(&unit) => self.push(figure_start, glued_end, value, kind, decimals),
                    _ if CURRENCY_CODES.contains(&raw) => {
                        self.push(figure_start, glued_end, value, FigureKind::Money, decimals);
                    }
                    _ => return self.skip_glued(glued_end),
                }
                return glued_end;
            }
        }

        // A scale word after one space: `1.2 million`.
        if scale == 0 {
            let word_start = self.skip_spaces(end, 1);
            let word_end = self.letters_end(word_start);
            if word_start > end
                && !self.is_word_char(word_end)
                && let Some(power) = scale_word(self.slice(word_start, word_end))
            {
                scale = power;
                end = word_end;
            }
        }
        let (value, decimals) = if scale > 0 {
            let Some(scaled) = number.scaled(scale) else {
                return end;
            };
            (sign * scaled, decimals.saturating_sub(scale))
        } else {
            (value, decimals)
        };
        let plain_integer = integer && scale == 0;

        // A unit after at most one space.
        let after = self.skip_spaces(end, 1);
        match self.at(after) {
            Some('%') => {
                kind = FigureKind::Percent;
                end = after + 1;
            }
            Some('°') => {
                kind = FigureKind::Temperature;
                end = after + 1;
                let scale = self.skip_spaces(end, 1);
                if self.at(scale).is_some_and(|c| matches!(c, 'C' | 'F' | 'c' | 'f')) && !self.is_word_char(scale + 1) {
                    end = scale + 1;
                }
            }
            // `12.50 €`, but not the sign of the next amount (`3 $5 bills`).
            Some(c) if CURRENCY_SIGNS.contains(&c) && !self.is_digit(self.skip_spaces(after + 1, 1)) => {
                kind = FigureKind::Money;
                end = after + 1;
            }
            Some(c) if is_letter(c) => {
                let word_end = self.letters_end(after);
                let word = self.slice(after, word_end);
                let lower = word.to_lowercase();
                if plain_integer
                    && (1..=12).contains(&(value as i64))
                    && let Some((pm, meridiem_end)) = self.meridiem(end)
                {
                    let minutes = f64::from(to_24h(value as u32, pm) * 60);
                    self.push(figure_start, meridiem_end, minutes, FigureKind::Time, 0);
                    return meridiem_end;
                }
                if plain_integer && let Some(date_end) = self.day_first_date(figure_start, end, value) {
                    return date_end;
                }
                if lower == "percent" {
                    kind = FigureKind::Percent;
                    end = word_end;
                } else if lower == "per"
                    && self
                        .slice(word_end, self.chars.len().min(word_end + 4))
                        .eq_ignore_ascii_case(" cent")
                {
                    kind = FigureKind::Percent;
                    end = word_end + 4;
                } else if lower == "degrees" || lower == "degree" {
                    kind = FigureKind::Temperature;
                    end = word_end;
                    let scale_start = self.skip_spaces(end, 1);
                    let scale_end = self.letters_end(scale_start);
                    if matches!(
                        self.slice(scale_start, scale_end).to_lowercase().as_str(),
                        "celsius" | "fahrenheit" | "c" | "f"
                    ) {
                        end = scale_end;
                    }
                } else if CURRENCY_CODES.contains(&word) || CURRENCY_WORDS.contains(&lower.as_str()) {
                    kind = FigureKind::Money;
                    end = word_end;
                }
            }
            _ => {}
        }
        self.push(figure_start, end, value, kind, decimals);
        end
    }

    /// Where a currency written before the figure at `start` begins: a
    /// sign (`$432`, `US$ 5`) or a code and a space (`USD 432`).
    fn currency_before(&self, start: usize) -> Option<usize> {
        if start == 0 {
            return None;
        }
        let mut at = start;
        if start >= 2 && matches!(self.at(start - 1), Some(' ' | '\u{a0}')) {
            at = start - 1;
        }
        let before = self.at(at - 1)?;
        if CURRENCY_SIGNS.contains(&before) {
            let mut sign_start = at - 1;
            // `US$`, `A$`, `C$`.
            while sign_start > 0
                && self.at(sign_start - 1).is_some_and(|c| c.is_ascii_uppercase())
                && at - sign_start < 3
            {
                sign_start -= 1;
            }
            if sign_start > 0 && self.is_word_char(sign_start - 1) {
                return None;
            }
            return Some(sign_start);
        }
        if at >= 3 {
            let code_start = at - 3;
            let code = self.slice(code_start, at);
            let standalone = code_start == 0 || !self.is_word_char(code_start - 1);
            if standalone && CURRENCY_CODES.contains(&code) {
                return Some(code_start);
            }
        }
        None
    }
}
