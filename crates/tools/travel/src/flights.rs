//! `get_flight_prices`: economy fares in USD, scaled by the great-circle
//! distance, varied by airline, stops, how far ahead the date is and the
//! day of the week; stable for the same route and date.

use agent_core::ToolError;
use agent_tools::UserWords;
use chrono::{Datelike, NaiveDate, Weekday};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dates::parse_travel_date;
use crate::dice::Dice;
use crate::grounding::{check_date, check_place};
use crate::missing::{ask_user, given};
use crate::places::{Place, distance_km};

/// Arguments of `get_flight_prices`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlightArgs {
    /// Where the trip starts: a real city the user named, as a name or IATA code, e.g. "New York",
    /// "NYC" or "JFK". Leave it out if the user has not said it.
    #[serde(default)]
    pub origin: Option<String>,
    /// Where the trip goes: a real city the user named, as a name or IATA code, e.g. "Tokyo" or "HND".
    /// Leave it out if the user has not said it.
    #[serde(default)]
    pub destination: Option<String>,
    /// Departure date, today or later: YYYY-MM-DD (e.g. "2026-06-15") or as the user said it: "today",
    /// "tomorrow", "June 15", "15 June", "next Friday", "in 2 weeks", "next month". Leave it out if the
    /// user has not said when.
    #[serde(default)]
    pub date: Option<String>,
}

/// A place as resolved for the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Endpoint {
    /// What the model asked for.
    pub query: String,
    /// The resolved place: "New York, United States".
    pub city: String,
    /// The airport's IATA code.
    pub airport: String,
    /// When the query named a country: which city stands for it. Absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One flight on offer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flight {
    /// The airline.
    pub airline: String,
    /// The flight number, e.g. "AR 212".
    pub flight_number: String,
    /// Local departure time, `HH:MM`.
    pub departure_time: String,
    /// Total travel time, e.g. "7h 25m".
    pub duration: String,
    /// Total travel time in minutes.
    pub duration_minutes: u32,
    /// Number of stops; 0 is nonstop.
    pub stops: u32,
    /// Cabin class.
    pub cabin: String,
    /// One-way economy fare, whole US dollars.
    pub price_usd: u32,
}

/// What `get_flight_prices` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlightPrices {
    /// The cheapest offer in one sentence, first, so even a small model
    /// answers with the right figures: "Cheapest flight from New York to
    /// Paris on Tuesday 2027-06-15: $357 (Aurora Airways AR 212, 7h 25m,
    /// nonstop)".
    pub summary: String,
    /// Where the flights leave from.
    pub origin: Endpoint,
    /// Where they go.
    pub destination: Endpoint,
    /// The departure date, resolved: always `YYYY-MM-DD`.
    pub date: NaiveDate,
    /// The departure date's day of the week, e.g. "Friday".
    pub weekday: String,
    /// When the date was not given as `YYYY-MM-DD`: how it was read, e.g.
    /// "\"next Friday\" is Friday 2030-06-07". Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_note: Option<String>,
    /// Always "USD".
    pub currency: String,
    /// Great-circle distance, km.
    pub distance_km: u32,
    /// The offers, cheapest first.
    pub flights: Vec<Flight>,
    /// The lowest fare.
    pub cheapest_price_usd: u32,
}

const AIRLINES: &[(&str, &str)] = &[
    ("Aurora Airways", "AR"),
    ("Meridian Air", "MD"),
    ("Northwind Airlines", "NW"),
    ("Pacific Crest", "PC"),
    ("Atlas Connect", "AT"),
    ("BlueJet", "BJ"),
    ("Horizon Global", "HG"),
];

/// Flight offers for a route and date; with `said`, places and dates the
/// user never mentioned are refused.
pub(crate) fn flight_prices(
    args: &FlightArgs,
    today: NaiveDate,
    said: Option<&UserWords>,
) -> Result<FlightPrices, ToolError> {
    let mut missing = Vec::new();
    let origin = given(args.origin.as_deref(), "where the flight leaves from", &mut missing);
    let destination = given(args.destination.as_deref(), "where the flight goes", &mut missing);
    let spoken_date = given(args.date.as_deref(), "when the flight is", &mut missing);
    let (Some(origin_query), Some(destination_query), Some(spoken_date)) = (origin, destination, spoken_date) else {
        return Err(ask_user(&missing));
    };
    let origin = Place::resolve(origin_query, "origin")?;
    check_place(said, origin_query, &origin, "origin")?;
    let destination = Place::resolve(destination_query, "destination")?;
    check_place(said, destination_query, &destination, "destination")?;
    check_date(said, spoken_date)?;
    let date = parse_travel_date(spoken_date, today)?;
    if origin.city == destination.city {
        return Err(ToolError::failed(format!(
            "origin and destination are both {} ({}); choose two different places",
            origin.display_name(),
            origin.airport()
        )));
    }
    let distance = distance_km(&origin, &destination);
    let mut dice = Dice::new(&["flights", origin.key(), destination.key(), &date.to_string()]);

    let days_ahead = (date - today).num_days();
    let lead_time = match days_ahead {
        0..=6 => 1.35,
        7..=20 => 1.15,
        21..=120 => 1.0,
        _ => 0.95,
    };
    let weekday = match date.weekday() {
        Weekday::Fri | Weekday::Sun => 1.08,
        _ => 1.0,
    };
    let base = (45.0 + 0.075 * distance) * lead_time * weekday;

    let count = dice.between(3, 5);
    let mut flights: Vec<Flight> = (0..count)
        .map(|_| {
            let &(airline, code) = dice.pick(AIRLINES);
            let stops = if distance < 1500.0 {
                0
            } else if distance < 6000.0 {
                dice.between(0, 1)
            } else {
                dice.between(0, 2).min(1)
            };
            let hours = distance / 820.0 + 0.6 + f64::from(stops) * dice.range(1.2, 3.5);
            let minutes = (hours * 60.0 / 5.0).round() as u32 * 5;
            let departure = dice.between(6 * 12, 22 * 12) * 5;
            let stop_factor = if stops == 0 { 1.12 } else { 0.88 };
            let price = base * stop_factor * dice.range(0.85, 1.3);
            Flight {
                airline: airline.to_owned(),
                flight_number: format!("{code} {}", dice.between(100, 1999)),
                departure_time: format!("{:02}:{:02}", departure / 60, departure % 60),
                duration: format!("{}h {:02}m", minutes / 60, minutes % 60),
                duration_minutes: minutes,
                stops,
                cabin: "economy".to_owned(),
                price_usd: price.round().max(39.0) as u32,
            }
        })
        .collect();
    flights.sort_by(|a, b| {
        a.price_usd
            .cmp(&b.price_usd)
            .then(a.departure_time.cmp(&b.departure_time))
    });
    let cheapest = flights.first().map_or(0, |flight| flight.price_usd);
    let weekday = date.format("%A").to_string();
    let spoken = spoken_date;
    let date_note = (spoken != date.to_string()).then(|| format!("{spoken:?} is {weekday} {date}"));
    let summary = match flights.first() {
        Some(flight) => format!(
            "Cheapest flight from {} to {} on {weekday} {date}: ${} ({} {}, {}, {})",
            origin.city.name,
            destination.city.name,
            flight.price_usd,
            flight.airline,
            flight.flight_number,
            flight.duration,
            match flight.stops {
                0 => "nonstop".to_owned(),
                1 => "1 stop".to_owned(),
                stops => format!("{stops} stops"),
            }
        ),
        None => format!(
            "No flights from {} to {} on {date}",
            origin.city.name, destination.city.name
        ),
    };
    Ok(FlightPrices {
        summary,
        origin: endpoint(origin_query, &origin, "flights leave from"),
        destination: endpoint(destination_query, &destination, "flights go to"),
        date,
        weekday,
        date_note,
        currency: "USD".to_owned(),
        distance_km: distance.round() as u32,
        flights,
        cheapest_price_usd: cheapest,
    })
}

fn endpoint(query: &str, place: &Place, doing: &str) -> Endpoint {
    Endpoint {
        query: query.trim().to_owned(),
        city: place.display_name(),
        airport: place.airport().to_owned(),
        note: place.note(doing),
    }
}
