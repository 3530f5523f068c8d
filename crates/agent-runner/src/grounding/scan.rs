//! The figure scanner: one pass over the text, each character looked at a
//! bounded number of times, so it runs in linear time.
//!
//! A digit starts a candidate: an ISO date (`2026-06-02`, with an optional
//! `T14:30`), a time (`14:30`, `2:30 pm`), or a number (`1,234.5`, `-3`).
//! What surrounds it gives the kind: a currency sign or code before it, a
//! unit after it (`%`, `°C`, `degrees`, `USD`, `euros`, `am`), a month name
//! after it (`2 June`). A month name followed by a day is a date too
//! (`June 2nd, 2026`). Digits glued to letters (`gpt-4o`, `B737`, `3D`) and
//! version numbers (`1.2.3`) are not figures.

use super::{Figure, FigureKind};

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
const GLUED_UNITS: [&str; 22] = [
    "km", "kg", "g", "m", "cm", "mm", "h", "hr", "hrs", "min", "mins", "s", "sec", "mi", "ml", "l", "mph", "kmh", "kw",
    "kwh", "x", "k",
];

/// The month of a month name or its abbreviation (`June`, `jun`, `Sept`).
fn month_of(word: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let word = word.to_lowercase();
    if word == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|month| *month == word || (word.len() == 3 && month.starts_with(&word)))
        .and_then(|index| u32::try_from(index + 1).ok())
}

/// All figures of `text`, in order.
pub(super) fn scan(text: &str) -> Vec<Figure> {
    let mut scanner = Scanner::new(text);
    scanner.run();
    scanner.figures
}

/// A number as written: its value, its decimals, and where it ends.
struct Number {
    value: f64,
    decimals: u32,
    end: usize,
}

struct Scanner<'a> {
    text: &'a str,
    chars: Vec<char>,
    /// Byte offset of each character, and the text's length last.
    offsets: Vec<usize>,
    figures: Vec<Figure>,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        let mut chars = Vec::with_capacity(text.len());
        let mut offsets = Vec::with_capacity(text.len() + 1);
        for (offset, c) in text.char_indices() {
            chars.push(c);
            offsets.push(offset);
        }
        offsets.push(text.len());
        Self {
            text,
            chars,
            offsets,
            figures: Vec::new(),
        }
    }

    fn at(&self, index: usize) -> Option<char> {
        self.chars.get(index).copied()
    }

    fn is_digit(&self, index: usize) -> bool {
        self.at(index).is_some_and(|c| c.is_ascii_digit())
    }

    fn is_word_char(&self, index: usize) -> bool {
        self.at(index).is_some_and(|c| c.is_alphanumeric() || c == '_')
    }

    /// The end of the run of digits starting at `index`.
    fn digits_end(&self, mut index: usize) -> usize {
        while self.is_digit(index) {
            index += 1;
        }
        index
    }

    /// The end of the run of word characters starting at `index`.
    fn word_end(&self, mut index: usize) -> usize {
        while self.is_word_char(index) {
            index += 1;
        }
        index
    }

    /// The end of the run of letters starting at `index`.
    fn letters_end(&self, mut index: usize) -> usize {
        while self.at(index).is_some_and(char::is_alphabetic) {
            index += 1;
        }
        index
    }

    fn slice(&self, start: usize, end: usize) -> &'a str {
        &self.text[self.offsets[start]..self.offsets[end]]
    }

    /// The index after the spaces (at most `max`) starting at `index`.
    fn skip_spaces(&self, mut index: usize, max: usize) -> usize {
        let limit = index + max;
        while index < limit
            && self
                .at(index)
                .is_some_and(|c| c == ' ' || c == '\u{a0}' || c == '\u{202f}')
        {
            index += 1;
        }
        index
    }

    fn push(&mut self, start: usize, end: usize, value: f64, kind: FigureKind, decimals: u32) {
        self.figures.push(Figure {
            text: self.slice(start, end).to_owned(),
            value,
            kind,
            start: self.offsets[start],
            end: self.offsets[end],
            decimals,
        });
    }

    fn run(&mut self) {
        let mut index = 0;
        while index < self.chars.len() {
            let c = self.chars[index];
            index = if c.is_ascii_digit() {
                self.at_digit(index)
            } else if c.is_alphabetic() {
                self.at_word(index)
            } else {
                index + 1
            };
        }
    }

    /// A word: a month name followed by a day is a date; any other word
    /// (digits glued to it included) is skipped whole.
    fn at_word(&mut self, start: usize) -> usize {
        let letters = self.letters_end(start);
        let end = self.word_end(start);
        if letters == end
            && let Some(month) = month_of(self.slice(start, end))
            && let Some(date_end) = self.month_first_date(start, end, month)
        {
            return date_end;
        }
        self.skip_glued(end)
    }

    /// Skips what is glued to a skipped word: `.5` of `qwen2.5`, `-4o` of `gpt-4o`.
    fn skip_glued(&self, mut index: usize) -> usize {
        while matches!(self.at(index), Some('.' | '-')) && self.is_word_char(index + 1) {
            index = self.word_end(index + 1);
        }
        index
    }

    /// `June 2`, `Jun 2nd, 2026`, `June 2 2026`: a date ending where it
    /// returns; `None` when no day follows.
    fn month_first_date(&mut self, start: usize, month_end: usize, month: u32) -> Option<usize> {
        let mut index = month_end;
        if self.at(index) == Some('.') {
            index += 1;
        }
        let day_start = self.skip_spaces(index, 2);
        if day_start == index {
            return None;
        }
        let day_end = self.digits_end(day_start);
        if day_end == day_start || day_end - day_start > 2 {
            return None;
        }
        let day: u32 = self.slice(day_start, day_end).parse().ok()?;
        let mut end = self.ordinal_suffix_end(day_end);
        if !(1..=31).contains(&day) || self.is_word_char(end) {
            return None;
        }
        let year = self.year_after(end);
        if let Some((year, year_end)) = year {
            end = year_end;
            self.push_date(start, end, Some(year), month, day);
        } else {
            self.push_date(start, end, None, month, day);
        }
        Some(end)
    }

    /// After `st`/`nd`/`rd`/`th` glued at `index`, or `index`.
    fn ordinal_suffix_end(&self, index: usize) -> usize {
        let end = self.letters_end(index);
        if end - index == 2
            && matches!(
                self.slice(index, end).to_lowercase().as_str(),
                "st" | "nd" | "rd" | "th"
            )
        {
            end
        } else {
            index
        }
    }

    /// `, 2026` or ` 2026` after a day: the year and where it ends.
    fn year_after(&self, index: usize) -> Option<(i32, usize)> {
        let mut at = index;
        if self.at(at) == Some(',') {
            at += 1;
        }
        let year_start = self.skip_spaces(at, 2);
        if year_start == at && at == index {
            return None;
        }
        let year_end = self.digits_end(year_start);
        if year_end - year_start != 4 || self.is_word_char(year_end) {
            return None;
        }
        Some((self.slice(year_start, year_end).parse().ok()?, year_end))
    }

    fn push_date(&mut self, start: usize, end: usize, year: Option<i32>, month: u32, day: u32) {
        let value = f64::from(year.unwrap_or(0)) * 10_000.0 + f64::from(month * 100 + day);
        self.push(start, end, value, FigureKind::Date, 0);
    }

    /// A digit that starts a run: a date, a time or a number, or digits
    /// glued to something that is not a figure.
    fn at_digit(&mut self, start: usize) -> usize {
        // Glued to a word or a version before it: `B737`, `v1.2`.
        if start > 0
            && (self.is_word_char(start - 1)
                || (self.at(start - 1) == Some('.') && self.is_word_char_before_dot(start - 1)))
        {
            return self.skip_glued(self.word_end(start));
        }
        if let Some(end) = self.iso_date(start) {
            return end;
        }
        if let Some(end) = self.time(start, start) {
            return end;
        }
        self.number(start)
    }

    fn is_word_char_before_dot(&self, dot: usize) -> bool {
        dot > 0 && self.is_word_char(dot - 1)
    }

    /// `2026-06-02`, optionally followed by `T14:30`.
    fn iso_date(&mut self, start: usize) -> Option<usize> {
        let year_end = self.digits_end(start);
        if year_end - start != 4 || self.at(year_end) != Some('-') {
            return None;
        }
        let month_end = self.digits_end(year_end + 1);
        if month_end - (year_end + 1) != 2 || self.at(month_end) != Some('-') {
            return None;
        }
        let day_end = self.digits_end(month_end + 1);
        if day_end - (month_end + 1) != 2 {
            return None;
        }
        let year: i32 = self.slice(start, year_end).parse().ok()?;
        let month: u32 = self.slice(year_end + 1, month_end).parse().ok()?;
        let day: u32 = self.slice(month_end + 1, day_end).parse().ok()?;
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        self.push_date(start, day_end, Some(year), month, day);
        if self.at(day_end) == Some('T')
            && self.is_digit(day_end + 1)
            && let Some(end) = self.time(day_end + 1, day_end + 1)
        {
            return Some(end);
        }
        Some(day_end)
    }

    /// `14:30`, `14:30:05`, `2:30 pm`: minutes since midnight.
    fn time(&mut self, start: usize, figure_start: usize) -> Option<usize> {
        let hours_end = self.digits_end(start);
        if hours_end - start > 2 || self.at(hours_end) != Some(':') {
            return None;
        }
        let minutes_end = self.digits_end(hours_end + 1);
        if minutes_end - (hours_end + 1) != 2 {
            return None;
        }
        let mut end = minutes_end;
        if self.at(end) == Some(':') && self.digits_end(end + 1) == end + 3 {
            end += 3;
        }
        if self.is_digit(end) {
            return None;
        }
        let hours: u32 = self.slice(start, hours_end).parse().ok()?;
        let minutes: u32 = self.slice(hours_end + 1, minutes_end).parse().ok()?;
        if hours > 24 || minutes > 59 {
            return None;
        }
        let (hours, end) = match self.meridiem(end) {
            Some((pm, meridiem_end)) if (1..=12).contains(&hours) => (to_24h(hours, pm), meridiem_end),
            _ => (hours, end),
        };
        self.push(figure_start, end, f64::from(hours * 60 + minutes), FigureKind::Time, 0);
        Some(end)
    }

    /// `am`/`pm`/`a.m.`/`p.m.` at `index` (after at most one space):
    /// whether it is pm, and where it ends.
    fn meridiem(&self, index: usize) -> Option<(bool, usize)> {
        let at = self.skip_spaces(index, 1);
        let first = self.at(at)?.to_ascii_lowercase();
        if first != 'a' && first != 'p' {
            return None;
        }
        let end = if self.at(at + 1).is_some_and(|c| c.eq_ignore_ascii_case(&'m')) {
            at + 2
        } else if self.at(at + 1) == Some('.')
            && self.at(at + 2).is_some_and(|c| c.eq_ignore_ascii_case(&'m'))
            && self.at(at + 3) == Some('.')
        {
            at + 4
        } else {
            return None;
        };
        (!self.at(end).is_some_and(char::is_alphanumeric)).then_some((first == 'p', end))
    }

    /// The digits at `start` as a number: thousands groups (`1,234,567`)
    /// and decimals (`6.94`); `None` for a version (`1.2.3`), with where
    /// the version ends.
    fn read_number(&self, start: usize) -> Result<Number, usize> {
        let mut end = self.digits_end(start);
        let mut digits: String = self.slice(start, end).to_owned();
        if end - start <= 3 {
            while self.at(end) == Some(',') && self.digits_end(end + 1) == end + 4 {
                digits.push_str(self.slice(end + 1, end + 4));
                end += 4;
            }
        }
        let mut decimals = 0;
        if self.at(end) == Some('.') && self.is_digit(end + 1) {
            let fraction_end = self.digits_end(end + 1);
            if self.at(fraction_end) == Some('.') && self.is_digit(fraction_end + 1) {
                let mut version_end = fraction_end;
                while self.at(version_end) == Some('.') && self.is_digit(version_end + 1) {
                    version_end = self.digits_end(version_end + 1);
                }
                return Err(version_end);
            }
            digits.push('.');
            digits.push_str(self.slice(end + 1, fraction_end));
            decimals = u32::try_from(fraction_end - end - 1).unwrap_or(u32::MAX);
            end = fraction_end;
        }
        match digits.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Number { value, decimals, end }),
            _ => Err(end),
        }
    }

    /// A number and what it measures.
    fn number(&mut self, start: usize) -> usize {
        let number = match self.read_number(start) {
            Ok(number) => number,
            Err(end) => return end,
        };
        let (mut figure_start, mut value) = (start, number.value);
        // A sign: `-3`, `−3`, but not the dash of a range (`10-12`) or a word (`gpt-4`).
        if start > 0 && matches!(self.at(start - 1), Some('-' | '−')) && !(start > 1 && self.is_word_char(start - 2))
        {
            figure_start = start - 1;
            value = -value;
        }
        let mut kind = FigureKind::Number;
        if let Some(prefix_start) = self.currency_before(figure_start) {
            kind = FigureKind::Money;
            figure_start = prefix_start;
        }
        let integer = number.decimals == 0;
        let mut end = number.end;

        // Letters glued to the number.
        let glued_end = self.letters_end(end);
        if glued_end > end {
            let glued = self.slice(end, glued_end).to_lowercase();
            if self.is_word_char(glued_end) {
                return self.skip_glued(self.word_end(glued_end));
            }
            match glued.as_str() {
                "am" | "pm" if integer && (1..=12).contains(&(value as i64)) => {
                    let minutes = f64::from(to_24h(value as u32, glued == "pm") * 60);
                    self.push(figure_start, glued_end, minutes, FigureKind::Time, 0);
                    return glued_end;
                }
                "st" | "nd" | "rd" | "th" if integer => {
                    if let Some(date_end) = self.day_first_date(figure_start, glued_end, value) {
                        return date_end;
                    }
                    self.push(figure_start, glued_end, value, FigureKind::Number, 0);
                    return glued_end;
                }
                "c" | "f" => {
                    self.push(figure_start, glued_end, value, FigureKind::Temperature, number.decimals);
                    return glued_end;
                }
                unit if GLUED_UNITS.contains(&unit) => {
                    let value = if unit == "k" { value * 1000.0 } else { value };
                    self.push(figure_start, glued_end, value, kind, number.decimals);
                    return glued_end;
                }
                _ if CURRENCY_CODES.contains(&self.slice(end, glued_end)) => {
                    self.push(figure_start, glued_end, value, FigureKind::Money, number.decimals);
                    return glued_end;
                }
                _ => return self.skip_glued(glued_end),
            }
        }

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
            Some(c) if c.is_alphabetic() => {
                let word_end = self.letters_end(after);
                let word = self.slice(after, word_end);
                let lower = word.to_lowercase();
                if integer
                    && (1..=12).contains(&(value as i64))
                    && let Some((pm, meridiem_end)) = self.meridiem(end)
                {
                    let minutes = f64::from(to_24h(value as u32, pm) * 60);
                    self.push(figure_start, meridiem_end, minutes, FigureKind::Time, 0);
                    return meridiem_end;
                }
                if integer && let Some(date_end) = self.day_first_date(figure_start, end, value) {
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
        self.push(figure_start, end, value, kind, number.decimals);
        end
    }

    /// `2 June`, `2nd of June 2026`: a day (`value`, from `start` to
    /// `day_end`) followed by a month; where the date ends.
    fn day_first_date(&mut self, start: usize, day_end: usize, value: f64) -> Option<usize> {
        if !(1.0..=31.0).contains(&value) {
            return None;
        }
        let mut month_start = self.skip_spaces(day_end, 1);
        if month_start == day_end {
            return None;
        }
        let of_end = self.letters_end(month_start);
        if self.slice(month_start, of_end).eq_ignore_ascii_case("of") {
            month_start = self.skip_spaces(of_end, 1);
        }
        let month_end = self.letters_end(month_start);
        if month_end == month_start || self.is_digit(month_end) {
            return None;
        }
        let month = month_of(self.slice(month_start, month_end))?;
        let mut end = month_end;
        if self.at(end) == Some('.') {
            end += 1;
        }
        let day = value as u32;
        let (year, end) = self
            .year_after(end)
            .map_or((None, month_end), |(year, year_end)| (Some(year), year_end));
        self.push_date(start, end, year, month, day);
        Some(end)
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

/// The hour of `hours` o'clock am or pm on a 24-hour clock.
fn to_24h(hours: u32, pm: bool) -> u32 {
    match (hours, pm) {
        (12, false) => 0,
        (12, true) => 12,
        (hours, true) => hours + 12,
        (hours, false) => hours,
    }
}
