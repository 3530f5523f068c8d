//! Strict ISO 8601 calendar dates (`YYYY-MM-DD`), never in the past.

use agent_core::ToolError;
use chrono::NaiveDate;

/// Parses a travel date written exactly as `YYYY-MM-DD`, on or after
/// `today`. Every error says the expected format and today's date, so the
/// model can work out the right value ("June 15" becomes `2026-06-15`).
pub(crate) fn parse_travel_date(input: &str, today: NaiveDate) -> Result<NaiveDate, ToolError> {
    let text = input.trim();
    let shaped = text.len() == 10
        && text.bytes().enumerate().all(|(index, byte)| match index {
            4 | 7 => byte == b'-',
            _ => byte.is_ascii_digit(),
        });
    if !shaped {
        return Err(ToolError::failed(format!(
            "date must be in ISO 8601 format YYYY-MM-DD (for example {example}), got {input:?}; \
             today is {today}, so write relative dates such as \"next Friday\" or \"June 15\" as a full date",
            example = today.checked_add_days(chrono::Days::new(30)).unwrap_or(today),
        )));
    }
    let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
        ToolError::failed(format!(
            "{text} is not a valid calendar date (check the month and the day); use YYYY-MM-DD, today is {today}"
        ))
    })?;
    if date < today {
        return Err(ToolError::failed(format!(
            "the date {date} is in the past; today is {today}. Give a date on or after today, in YYYY-MM-DD format"
        )));
    }
    Ok(date)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2030, 6, 1).unwrap()
    }

    #[test]
    fn accepts_today_and_later() {
        assert_eq!(parse_travel_date("2030-06-01", today()).unwrap(), today());
        assert_eq!(
            parse_travel_date(" 2031-02-28 ", today()).unwrap(),
            NaiveDate::from_ymd_opt(2031, 2, 28).unwrap()
        );
    }

    #[test]
    fn other_formats_are_refused_with_today_given() {
        for input in [
            "June 15",
            "2030-6-15",
            "15/06/2030",
            "2030/06/15",
            "20300615",
            "2030-06-15T10:00",
            "",
        ] {
            let message = parse_travel_date(input, today()).unwrap_err().to_string();
            assert!(
                message.starts_with("date must be in ISO 8601 format YYYY-MM-DD"),
                "{input}: {message}"
            );
            assert!(message.contains("today is 2030-06-01"), "{message}");
        }
    }

    #[test]
    fn impossible_and_past_dates_are_refused() {
        let message = parse_travel_date("2030-02-30", today()).unwrap_err().to_string();
        assert!(
            message.starts_with("2030-02-30 is not a valid calendar date"),
            "{message}"
        );
        let message = parse_travel_date("2030-05-31", today()).unwrap_err().to_string();
        assert_eq!(
            message,
            "the date 2030-05-31 is in the past; today is 2030-06-01. Give a date on or after today, in YYYY-MM-DD format"
        );
    }
}
