//! Dates: ISO (`2026-06-02`), month first (`June 2`, `Jun 2nd, 2026`) and
//! day first (`2 June 2026`, `2nd of June`). A date is one figure: the
//! digits of its year, month and day are not numbers of their own.
//!
//! Slash dates (`06/02/2026`) are not read as dates: whether they are month
//! or day first is unknown. Their parts are read as numbers (`6`, `2`,
//! `2026`), which a date of the evidence supports (its year, month and day
//! count as numbers of the evidence).

use super::Scanner;
use crate::grounding::FigureKind;

/// The month of a month name or its three-letter abbreviation (`June`,
/// `jun`, `Sept`), any case; `may` only as `May` (the verb is lowercase).
pub(super) fn month_of(word: &str) -> Option<u32> {
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
    if word == "may" {
        return None;
    }
    if word.eq_ignore_ascii_case("sept") {
        return Some(9);
    }
    // Compared without allocating: this runs for every word of the text.
    MONTHS
        .iter()
        .position(|month| {
            month.eq_ignore_ascii_case(word)
                || (word.len() == 3 && month.get(..3).is_some_and(|prefix| prefix.eq_ignore_ascii_case(word)))
        })
        .and_then(|index| u32::try_from(index + 1).ok())
}

impl Scanner<'_> {
    /// `June 2`, `Jun 2nd, 2026`, `June 2 2026`: a date ending where it
    /// returns; `None` when no day follows.
    pub(super) fn month_first_date(&mut self, start: usize, month_end: usize, month: u32) -> Option<usize> {
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
    pub(super) fn ordinal_suffix_end(&self, index: usize) -> usize {
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

    /// `2026-06-02`, optionally followed by `T14:30`.
    pub(super) fn iso_date(&mut self, start: usize) -> Option<usize> {
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

    /// `2 June`, `2nd of June 2026`: a day (`value`, from `start` to
    /// `day_end`) followed by a month; where the date ends.
    pub(super) fn day_first_date(&mut self, start: usize, day_end: usize, value: f64) -> Option<usize> {
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
}
