//! Travel dates as people say them, resolved against today: ISO
//! `2026-06-15`, "today", "tomorrow", "the day after tomorrow", "June 15",
//! "15 June", "June 15th, 2027", "Friday", "next Monday", "in 3 days",
//! "in 2 weeks", "next week", "next month". Never in the past. Parsing
//! looks at a bounded prefix of the input only, so it is linear and never
//! panics.

use agent_core::ToolError;
use chrono::{Datelike, Days, Months, NaiveDate, Weekday};

/// Longer input is not a date.
const MAX_INPUT_CHARS: usize = 60;

/// How many years ahead a month and day without a year may land (Feb 29
/// can be up to eight years away).
const MAX_YEARS_AHEAD: i32 = 8;

/// The forms accepted, for error messages.
const FORMS: &str = "\"today\", \"tomorrow\", \"the day after tomorrow\", \"June 15\", \
                     \"15 June\", \"June 15, 2027\", \"Friday\", \"next Monday\", \"in 3 days\", \"in 2 weeks\", \
                     \"next week\", \"next month\"";

/// Months: name, abbreviation, number.
const MONTHS: [(&str, &str, u32); 12] = [
    ("January", "jan", 1),
    ("February", "feb", 2),
    ("March", "mar", 3),
    ("April", "apr", 4),
    ("May", "may", 5),
    ("June", "jun", 6),
    ("July", "jul", 7),
    ("August", "aug", 8),
    ("September", "sep", 9),
    ("October", "oct", 10),
    ("November", "nov", 11),
    ("December", "dec", 12),
];

const WEEKDAYS: [(&str, Weekday); 7] = [
    ("Monday", Weekday::Mon),
    ("Tuesday", Weekday::Tue),
    ("Wednesday", Weekday::Wed),
    ("Thursday", Weekday::Thu),
    ("Friday", Weekday::Fri),
    ("Saturday", Weekday::Sat),
    ("Sunday", Weekday::Sun),
];

/// Parses a travel date on or after `today`. Errors say what went wrong,
/// today's date and the accepted forms, so the model can fix the call or
/// ask the user.
pub(crate) fn parse_travel_date(input: &str, today: NaiveDate) -> Result<NaiveDate, ToolError> {
    let text = input.trim();
    if text.is_empty() {
        return Err(unreadable(text, today));
    }
    if text.chars().nth(MAX_INPUT_CHARS).is_some() {
        return Err(unreadable(text, today));
    }
    if text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'/' | b'.'))
        && text.bytes().any(|b| b.is_ascii_digit())
    {
        return numeric(text, today);
    }
    let lower = text.to_lowercase().replace(',', " ");
    let words: Vec<&str> = lower
        .split_whitespace()
        .map(|word| word.trim_end_matches(['.', '!', '?']))
        .filter(|word| !word.is_empty())
        .collect();
    let words = match words.as_slice() {
        ["on", rest @ ..] => rest,
        all => all,
    };
    if let Some(date) = relative(words, today)? {
        return Ok(date);
    }
    if let Some(date) = weekday_date(words, today) {
        return Ok(date);
    }
    if let Some(date) = month_day(words, today)? {
        return Ok(date);
    }
    Err(unreadable(text, today))
}

/// `YYYY-MM-DD` (also with `/` or unpadded month and day); any other
/// all-numeric form is ambiguous.
fn numeric(text: &str, today: NaiveDate) -> Result<NaiveDate, ToolError> {
    let parts: Vec<&str> = text.split(['-', '/', '.']).collect();
    if let [year, month, day] = parts.as_slice()
        && year.len() == 4
        && (1..=2).contains(&month.len())
        && (1..=2).contains(&day.len())
        && let (Ok(year), Ok(month), Ok(day)) = (year.parse::<i32>(), month.parse::<u32>(), day.parse::<u32>())
    {
        let date = NaiveDate::from_ymd_opt(year, month, day).ok_or_else(|| {
            ToolError::failed(format!(
                "{text} is not a valid calendar date (check the month and the day); use YYYY-MM-DD, today is {today}"
            ))
        })?;
        return not_past(date, today);
    }
    Err(ToolError::failed(format!(
        "the date {text:?} is ambiguous or not in YYYY-MM-DD form (is 05/06 the 5th of June or May 6th?); \
         write it as YYYY-MM-DD, e.g. {example}, or as \"June 15\". Today is {today}",
        example = example(today),
    )))
}

/// "today", "tomorrow", "the day after tomorrow", "next week|month|year",
/// "in N days|weeks|months".
fn relative(words: &[&str], today: NaiveDate) -> Result<Option<NaiveDate>, ToolError> {
    let days = |n: u64| today.checked_add_days(Days::new(n));
    let months = |n: u32| today.checked_add_months(Months::new(n));
    let date = match words {
        ["today" | "tonight"] => Some(today),
        ["tomorrow"] => days(1),
        ["the", "day", "after", "tomorrow"] | ["day", "after", "tomorrow"] => days(2),
        ["next", "week"] => days(7),
        ["next", "month"] => months(1),
        ["next", "year"] => months(12),
        ["in", count, unit] => {
            let Some(count) = number(count) else {
                return Ok(None);
            };
            match *unit {
                "day" | "days" => days(u64::from(count)),
                "week" | "weeks" => days(u64::from(count) * 7),
                "month" | "months" => months(count),
                _ => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    date.map(Some)
        .ok_or_else(|| ToolError::failed(format!("the date is too far in the future; today is {today}")))
}

/// "Friday", "next Friday", "this Friday", "coming Friday": the next such
/// day after today ("this Friday" on a Friday is today).
fn weekday_date(words: &[&str], today: NaiveDate) -> Option<NaiveDate> {
    let (name, include_today) = match words {
        [name] | ["next" | "coming", name] => (*name, false),
        ["this", name] => (*name, true),
        _ => return None,
    };
    let target = weekday(name)?;
    let mut ahead = u64::from(target.days_since(today.weekday()));
    if ahead == 0 && !include_today {
        ahead = 7;
    }
    today.checked_add_days(Days::new(ahead))
}

/// "June 15", "Jun 15th", "15 June", "15th of June", "June the 15th",
/// "June 15, 2027", "Friday, June 15": without a year, the next such day
/// on or after today; with one, that day, which must not be past.
fn month_day(words: &[&str], today: NaiveDate) -> Result<Option<NaiveDate>, ToolError> {
    let mut words: Vec<&str> = words.iter().copied().filter(|w| !matches!(*w, "the" | "of")).collect();
    let stated_weekday = words.first().and_then(|first| weekday(first));
    if stated_weekday.is_some() {
        words.remove(0);
    }
    let (month, day, year) = match words.as_slice() {
        [first, second, rest @ ..] if rest.len() <= 1 => {
            let year = match rest {
                [] => None,
                [year] if year.len() == 4 => match year.parse::<i32>() {
                    Ok(year) => Some(year),
                    Err(_) => return Ok(None),
                },
                _ => return Ok(None),
            };
            match (month(first), day_number(second), month(second), day_number(first)) {
                (Some(month), Some(day), _, _) | (_, _, Some(month), Some(day)) => (month, day, year),
                _ => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    let (month, month_name) = month;
    let spoken = format!("{month_name} {day}");
    if NaiveDate::from_ymd_opt(2000, month, day).is_none() {
        return Err(ToolError::failed(format!(
            "{spoken} is not a valid calendar date (check the day of the month); today is {today}"
        )));
    }
    let date = match year {
        Some(year) => {
            let date = NaiveDate::from_ymd_opt(year, month, day).ok_or_else(|| {
                ToolError::failed(format!(
                    "{spoken}, {year} is not a valid calendar date; today is {today}"
                ))
            })?;
            not_past(date, today)?
        }
        None => (0..=MAX_YEARS_AHEAD)
            .filter_map(|ahead| NaiveDate::from_ymd_opt(today.year() + ahead, month, day))
            .find(|date| *date >= today)
            .ok_or_else(|| ToolError::failed(format!("{spoken} could not be placed after today ({today})")))?,
    };
    if let Some(stated) = stated_weekday
        && stated != date.weekday()
    {
        return Err(ToolError::failed(format!(
            "{date} is a {}, not a {}; ask the user which date they mean",
            weekday_name(date.weekday()),
            weekday_name(stated)
        )));
    }
    Ok(Some(date))
}

fn not_past(date: NaiveDate, today: NaiveDate) -> Result<NaiveDate, ToolError> {
    if date < today {
        // A model that turns "June 15" into a date often picks this year's.
        let next = (1..=MAX_YEARS_AHEAD)
            .filter_map(|years| date.with_year(date.year() + years))
            .find(|next| *next >= today);
        let hint = match next {
            Some(next) => format!(
                "If the user said only the month and day, they mean the next one, {next}: call again with \
                 {next}. Otherwise tell the user the date has passed and ask for another."
            ),
            None => "Tell the user the date has passed and ask for another.".to_owned(),
        };
        return Err(ToolError::failed(format!(
            "the date {date} is in the past; today is {today}. {hint}"
        )));
    }
    Ok(date)
}

fn unreadable(text: &str, today: NaiveDate) -> ToolError {
    let quoted: String = text.chars().take(MAX_INPUT_CHARS).collect();
    ToolError::failed(format!(
        "could not read the date {quoted:?}; today is {weekday}, {today}. Write it as YYYY-MM-DD (e.g. {example}) \
         or as one of: {FORMS}. If the user has not said when, ask them",
        weekday = weekday_name(today.weekday()),
        example = example(today),
    ))
}

/// A plausible example date: a month from today.
fn example(today: NaiveDate) -> NaiveDate {
    today.checked_add_days(Days::new(30)).unwrap_or(today)
}

/// A month (number and name) by full name, three-letter abbreviation or
/// "sept"; `word` is in lower case.
fn month(word: &str) -> Option<(u32, &'static str)> {
    let word = if word == "sept" { "sep" } else { word };
    MONTHS
        .iter()
        .find(|(full, short, _)| word == *short || full.eq_ignore_ascii_case(word))
        .map(|&(full, _, number)| (number, full))
}

/// A weekday by full name or the usual abbreviations.
fn weekday(word: &str) -> Option<Weekday> {
    let short = match word {
        "tues" | "tue" => "tuesday",
        "weds" | "wed" => "wednesday",
        "thur" | "thurs" | "thu" => "thursday",
        "mon" => "monday",
        "fri" => "friday",
        "sat" => "saturday",
        "sun" => "sunday",
        other => other,
    };
    WEEKDAYS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(short))
        .map(|&(_, day)| day)
}

fn weekday_name(day: Weekday) -> &'static str {
    WEEKDAYS
        .iter()
        .find(|(_, candidate)| *candidate == day)
        .map_or("day", |(name, _)| name)
}

/// A day of the month: "15", "15th", "1st", "2nd", "3rd".
fn day_number(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|day| (1..=31).contains(day))
}

/// A count: digits (up to 4) or a word from "a"/"one" to "twelve".
fn number(word: &str) -> Option<u32> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    ];
    if matches!(word, "a" | "an") {
        return Some(1);
    }
    if let Some(index) = WORDS.iter().position(|w| *w == word) {
        return u32::try_from(index + 1).ok();
    }
    if word.is_empty() || word.len() > 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A Saturday.
    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2030, 6, 1).unwrap()
    }

    fn date(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    fn parsed(input: &str) -> NaiveDate {
        parse_travel_date(input, today()).unwrap_or_else(|error| panic!("{input}: {error}"))
    }

    fn refused(input: &str) -> String {
        parse_travel_date(input, today()).unwrap_err().to_string()
    }

    #[test]
    fn iso_dates_from_today_on() {
        assert_eq!(parsed("2030-06-01"), today());
        assert_eq!(parsed(" 2031-02-28 "), date("2031-02-28"));
        assert_eq!(parsed("2030-6-15"), date("2030-06-15"));
        assert_eq!(parsed("2030/06/15"), date("2030-06-15"));
    }

    #[test]
    fn relative_days_weeks_and_months() {
        assert_eq!(parsed("today"), today());
        assert_eq!(parsed("Tomorrow"), date("2030-06-02"));
        assert_eq!(parsed("the day after tomorrow"), date("2030-06-03"));
        assert_eq!(parsed("day after tomorrow"), date("2030-06-03"));
        assert_eq!(parsed("in 3 days"), date("2030-06-04"));
        assert_eq!(parsed("in a day"), date("2030-06-02"));
        assert_eq!(parsed("in 2 weeks"), date("2030-06-15"));
        assert_eq!(parsed("in two weeks"), date("2030-06-15"));
        assert_eq!(parsed("in 1 month"), date("2030-07-01"));
        assert_eq!(parsed("next week"), date("2030-06-08"));
        assert_eq!(parsed("next month"), date("2030-07-01"));
        assert_eq!(parsed("next year"), date("2031-06-01"));
        // Next month keeps the day, clamped to the month's last day.
        let january_31 = date("2031-01-31");
        assert_eq!(parse_travel_date("next month", january_31).unwrap(), date("2031-02-28"));
    }

    #[test]
    fn weekdays_are_the_next_such_day_after_today() {
        // Today is Saturday 2030-06-01.
        assert_eq!(parsed("Monday"), date("2030-06-03"));
        assert_eq!(parsed("next Monday"), date("2030-06-03"));
        assert_eq!(parsed("on Friday"), date("2030-06-07"));
        assert_eq!(parsed("fri"), date("2030-06-07"));
        assert_eq!(parsed("Saturday"), date("2030-06-08"));
        assert_eq!(parsed("next saturday"), date("2030-06-08"));
        assert_eq!(parsed("this Saturday"), today());
    }

    #[test]
    fn month_and_day_in_either_order() {
        for input in [
            "June 15",
            "15 June",
            "Jun 15",
            "june 15th",
            "15th of June",
            "June the 15th",
            "on June 15",
            "Jun. 15",
            "Saturday, June 15",
        ] {
            assert_eq!(parsed(input), date("2030-06-15"), "{input}");
        }
        assert_eq!(parsed("June 15, 2031"), date("2031-06-15"));
        assert_eq!(parsed("15 June 2031"), date("2031-06-15"));
        assert_eq!(parsed("June 1"), today());
        assert_eq!(parsed("Sept 3"), date("2030-09-03"));
    }

    #[test]
    fn a_month_and_day_already_past_this_year_is_next_year() {
        assert_eq!(parsed("May 31"), date("2031-05-31"));
        assert_eq!(parsed("January 2"), date("2031-01-02"));
        let november = date("2030-11-20");
        assert_eq!(parse_travel_date("June 15", november).unwrap(), date("2031-06-15"));
        // February 29 is the next leap day.
        assert_eq!(parsed("Feb 29"), date("2032-02-29"));
    }

    #[test]
    fn past_and_impossible_dates_are_refused() {
        assert_eq!(
            refused("2030-05-31"),
            "the date 2030-05-31 is in the past; today is 2030-06-01. If the user said only the month and \
             day, they mean the next one, 2031-05-31: call again with 2031-05-31. Otherwise tell the user the \
             date has passed and ask for another."
        );
        assert!(refused("May 31, 2030").starts_with("the date 2030-05-31 is in the past"));
        assert!(refused("2030-02-30").starts_with("2030-02-30 is not a valid calendar date"));
        assert!(refused("2030-13-01").contains("not a valid calendar date"));
        assert!(refused("June 31").starts_with("June 31 is not a valid calendar date"));
        assert!(refused("Feb 29, 2031").contains("not a valid calendar date"));
        assert!(refused("Friday, June 15").starts_with("2030-06-15 is a Saturday, not a Friday"));
    }

    #[test]
    fn ambiguous_numeric_dates_are_refused_with_the_iso_hint() {
        for input in ["15/06/2031", "06/15/2031", "15.06.2031", "20310615", "15-06-2031"] {
            let message = refused(input);
            assert!(
                message.contains("is ambiguous or not in YYYY-MM-DD form"),
                "{input}: {message}"
            );
            assert!(message.contains("Today is 2030-06-01"), "{message}");
        }
    }

    #[test]
    fn unreadable_dates_list_the_accepted_forms() {
        for input in [
            "",
            "soon",
            "mid June",
            "2030-06-15T10:00",
            "in 3 fortnights",
            "June",
            "the 15th",
        ] {
            let message = refused(input);
            assert!(message.starts_with("could not read the date"), "{input}: {message}");
            assert!(message.contains("today is Saturday, 2030-06-01"), "{message}");
            assert!(
                message.contains("YYYY-MM-DD") && message.contains("next Monday"),
                "{message}"
            );
        }
        let long = "June 15 ".repeat(1000);
        assert!(refused(&long).len() < 600);
        let message = parse_travel_date("tomorrow", NaiveDate::MAX).unwrap_err().to_string();
        assert!(message.starts_with("the date is too far in the future"), "{message}");
    }
}
