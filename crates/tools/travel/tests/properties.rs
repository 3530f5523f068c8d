//! Properties of date and place parsing over arbitrary input: never a
//! panic, and what is accepted is consistent.

#![allow(clippy::unwrap_used)]

use agent_tools_travel::{FlightArgs, NaiveDate, TravelTools, Units, WeatherArgs};
use chrono::{Datelike, Days};
use proptest::prelude::*;

fn tools() -> TravelTools {
    TravelTools::with_today(NaiveDate::from_ymd_opt(2030, 6, 1).unwrap())
}

fn flight_on(date: &str) -> FlightArgs {
    FlightArgs {
        origin: Some("Paris".to_owned()),
        destination: Some("Rome".to_owned()),
        date: Some(date.to_owned()),
    }
}

/// Text shaped like dates and places, to reach deeper than random bytes.
fn date_like() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "June", "jun", "15", "15th", "of", "the", "next", "in", "3", "days", "weeks", "month", "Friday", "today",
        "tomorrow", "day", "after", "2031", ",", "-", "/", "31", "Feb", "29", "a", "this", "0", "99999",
    ]);
    prop::collection::vec(word, 0..6).prop_map(|words| words.join(" "))
}

proptest! {
    #[test]
    fn arbitrary_dates_never_panic(date in any::<String>()) {
        let _ = tools().flight_prices(&flight_on(&date));
    }

    #[test]
    fn date_like_text_never_panics_and_is_never_past(date in date_like()) {
        if let Ok(prices) = tools().flight_prices(&flight_on(&date)) {
            prop_assert!(prices.date >= tools().today(), "{date}: {}", prices.date);
        }
    }

    #[test]
    fn arbitrary_places_never_panic(place in any::<String>()) {
        let args = WeatherArgs { location: Some(place.clone()), units: Units::Celsius };
        let _ = tools().weather(&args);
        let _ = tools().flight_prices(&FlightArgs { origin: Some(place), destination: Some("Rome".to_owned()), date: Some("today".to_owned()) });
    }

    #[test]
    fn iso_dates_from_today_on_round_trip(ahead in 0u64..5000) {
        let date = tools().today().checked_add_days(Days::new(ahead)).unwrap();
        let prices = tools().flight_prices(&flight_on(&date.to_string())).unwrap();
        prop_assert_eq!(prices.date, date);
    }

    #[test]
    fn a_month_and_day_is_its_next_occurrence(ahead in 0u64..365) {
        let today = tools().today();
        let target = today.checked_add_days(Days::new(ahead)).unwrap();
        let spoken = target.format("%B %-d").to_string();
        let prices = tools().flight_prices(&flight_on(&spoken)).unwrap();
        prop_assert_eq!(prices.date, target, "{}", spoken);
        let reversed = target.format("%-d %b").to_string();
        prop_assert_eq!(tools().flight_prices(&flight_on(&reversed)).unwrap().date, target);
        prop_assert!(prices.date.year() - today.year() <= 1);
    }
}
