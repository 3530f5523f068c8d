//! The figure scanner: one pass over the text, each character looked at a
//! bounded number of times, so it runs in linear time.
//!
//! A digit starts a candidate: an ISO date (`2026-06-02`, with an optional
//! `T14:30`), a time (`14:30`, `2:30 pm`), or a number (`1,234.5`, `-3`).
//! What surrounds it gives the kind: a currency sign or code before it, a
//! unit after it (`%`, `°C`, `degrees`, `USD`, `euros`, `am`), a month name
//! after it (`2 June`). A month name followed by a day is a date too
//! (`June 2nd, 2026`). Digits glued to letters (`gpt-4o`, `B737`, `3D`) and
//! version numbers (`1.2.3`) are not figures. Scripts written without
//! spaces (Chinese, Japanese, Korean, Thai) do not glue: `気温は18度`
//! has the figure `18`.
//!
//! Numbers and their units are read in [`numbers`], dates in [`dates`].

mod dates;
mod numbers;

use self::dates::month_of;
use super::{Figure, FigureKind};

/// All figures of `text`, in order.
pub(super) fn scan(text: &str) -> Vec<Figure> {
    let mut scanner = Scanner::new(text);
    scanner.run();
    scanner.figures
}

/// The scan of one text: its characters, their byte offsets, and the
/// figures found so far.
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
        self.at(index)
            .is_some_and(|c| (c.is_alphanumeric() && !is_unspaced_script(c)) || c == '_')
    }

    fn is_letter(&self, index: usize) -> bool {
        self.at(index).is_some_and(is_letter)
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
        while self.is_letter(index) {
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
                .is_some_and(|c| matches!(c, ' ' | '\u{a0}' | '\u{202f}' | '\u{2009}'))
        {
            index += 1;
        }
        index
    }

    fn push(&mut self, start: usize, end: usize, value: f64, kind: FigureKind, decimals: i32) {
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
            } else if is_letter(c) {
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
        (!self.is_word_char(end)).then_some((first == 'p', end))
    }
}

/// A letter of a word that a number can be glued to.
fn is_letter(c: char) -> bool {
    c.is_alphabetic() && !is_unspaced_script(c)
}

/// Whether `c` is of a script written without spaces between words, where
/// a number touching a letter is not glued to it.
fn is_unspaced_script(c: char) -> bool {
    matches!(c,
        '\u{0E00}'..='\u{0EFF}' // Thai, Lao
        | '\u{1100}'..='\u{11FF}' // Hangul Jamo
        | '\u{3040}'..='\u{30FF}' // Hiragana, Katakana
        | '\u{3400}'..='\u{4DBF}' // CJK Extension A
        | '\u{4E00}'..='\u{9FFF}' // CJK Unified Ideographs
        | '\u{AC00}'..='\u{D7AF}' // Hangul Syllables
        | '\u{F900}'..='\u{FAFF}' // CJK Compatibility Ideographs
        | '\u{FF66}'..='\u{FF9F}' // Halfwidth Katakana
    )
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
