//! # agent-tools-travel
//!
//! The travel-assistant demo tools, in the provider `travel`:
//!
//! - `get_weather(location, units = celsius | fahrenheit)`: today's weather
//!   from a rough climate table of major cities and the season.
//! - `get_flight_prices(origin, destination, date)`: one-way economy fares
//!   in USD, scaled by the great-circle distance. The date is `YYYY-MM-DD`
//!   or as people say it ("tomorrow", "June 15", "next Friday", "in 2
//!   weeks", "next month"), read against today, never in the past; the
//!   result gives it as `YYYY-MM-DD` with its weekday.
//! - `get_currency_exchange(from, to, amount)`: ~20 ISO 4217 currencies at
//!   fixed demo rates; the amount is rounded to 2 decimals.
//! - `divide_by_secret_number(number)`: always fails (the secret is 0), to
//!   show how a tool error reaches the model.
//!
//! Places resolve against a gazetteer of about 80 major cities, by name,
//! alias or IATA code (`"New York"`, `"NYC"`, `"JFK"`, `"Tokyo, Japan"`),
//! ignoring case and accents. A country stands for its capital (or main
//! city), and the result says so in a `note`. Anything else is a tool
//! error written for the model: a region ("Caribbean") asks for a specific
//! city, a placeholder ("Your favorite city name or IATA airport code")
//! says it is not a place, and an unknown name lists up to three close
//! matches ("Tokio": Tokyo); each tells the model to ask the user rather
//! than guess. Every argument struct refuses fields it does not declare.
//!
//! The data is simulated but deterministic: it is derived from the inputs
//! (and, for weather, today's date) with a stable FNV-1a hash, so tests and
//! demos repeat on every platform and Rust version. "Today" comes from a
//! [`Clock`]: the system date by default, fixed with
//! [`TravelTools::with_today`].
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{ToolContext, ToolRegistry};
//! use agent_tools::ToolBox;
//! use agent_tools_travel::{NaiveDate, TravelTools};
//! use serde_json::{Value, json};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let today = NaiveDate::from_ymd_opt(2030, 6, 1).unwrap();
//! let registry = ToolBox::new();
//! registry.register(Arc::new(TravelTools::with_today(today).tool_set()), true)?;
//!
//! let context = ToolContext::new();
//! let run = registry.execute("get_weather", &json!({"location": "Tokyo"}), &context).await;
//! let weather: Value = serde_json::from_str(&run.outcome?.to_content())?;
//! assert_eq!(weather["location"], "Tokyo, Japan");
//! assert_eq!(weather["units"], "celsius");
//!
//! let run = registry
//!     .execute("get_currency_exchange", &json!({"from": "usd", "to": "EUR", "amount": 100}), &context)
//!     .await;
//! let exchange: Value = serde_json::from_str(&run.outcome?.to_content())?;
//! assert_eq!(exchange["converted_amount"], 92.0);
//!
//! let run = registry
//!     .execute("get_flight_prices", &json!({"origin": "NYC", "destination": "Tokyo", "date": "June 15"}), &context)
//!     .await;
//! let flights: Value = serde_json::from_str(&run.outcome?.to_content())?;
//! assert_eq!(flights["date"], "2030-06-15");
//!
//! let run = registry.execute("get_weather", &json!({"location": "Tokio"}), &context).await;
//! let error = run.outcome.unwrap_err().to_string();
//! assert!(error.contains("Did you mean Tokyo (Japan)?") && error.contains("ask the user"), "{error}");
//! # Ok(())
//! # }
//! ```

mod clock;
mod countries;
mod currency;
mod dates;
mod dice;
mod flights;
mod grounding;
mod missing;
mod names;
mod places;
mod tools;
mod weather;

pub use chrono::NaiveDate;
pub use clock::{Clock, FixedClock, SystemClock};
pub use currency::{Exchange, ExchangeArgs};
pub use flights::{Endpoint, Flight, FlightArgs, FlightPrices};
pub use tools::{DivideArgs, PROVIDER_NAME, Quotient, RESULT_TTL, TravelTools};
pub use weather::{Units, Weather, WeatherArgs};
