//! Where "today" comes from: the system date by default, a fixed date in
//! tests and reproducible demos.

use std::fmt;

use chrono::NaiveDate;

/// A source of today's date. Dates before it are in the past for
/// `get_flight_prices`, and it sets the season for `get_weather`.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Today's date.
    fn today(&self) -> NaiveDate;
}

/// The system's local date.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn today(&self) -> NaiveDate {
        chrono::Local::now().date_naive()
    }
}

/// Always the same date.
///
/// ```
/// use agent_tools_travel::{Clock, FixedClock, NaiveDate};
///
/// let date = NaiveDate::from_ymd_opt(2030, 6, 15).unwrap();
/// assert_eq!(FixedClock(date).today(), date);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(pub NaiveDate);

impl Clock for FixedClock {
    fn today(&self) -> NaiveDate {
        self.0
    }
}
