//! [`TravelTools`]: the `travel` provider and its tools.

use std::sync::Arc;

use agent_core::{ToolContext, ToolError};
use agent_tools::{Json, ToolSet, TypedTool, UserWords};
use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clock::{Clock, FixedClock, SystemClock};
use crate::currency::{Exchange, ExchangeArgs, RATES, exchange};
use crate::flights::{FlightArgs, FlightPrices, flight_prices};
use crate::weather::{Weather, WeatherArgs, weather};

/// The provider's name, used to enable or disable it.
pub const PROVIDER_NAME: &str = "travel";

/// How long a result of the travel tools may be reused by a repeated call.
pub const RESULT_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// The secret divisor of `divide_by_secret_number`.
const SECRET_NUMBER: f64 = 0.0;

/// Arguments of `divide_by_secret_number`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DivideArgs {
    /// The number to divide, e.g. 42.
    pub number: f64,
}

/// What `divide_by_secret_number` would return if the secret were not 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quotient {
    /// The number divided.
    pub number: f64,
    /// The quotient.
    pub result: f64,
}

/// The travel-assistant demo tools, with the clock that says what "today"
/// is (the system date unless set).
///
/// ```
/// use agent_tools_travel::{NaiveDate, TravelTools};
///
/// let tools = TravelTools::with_today(NaiveDate::from_ymd_opt(2030, 6, 1).unwrap());
/// assert_eq!(tools.today().to_string(), "2030-06-01");
/// assert_eq!(tools.tool_set().len(), 4);
/// ```
#[derive(Debug, Clone)]
pub struct TravelTools {
    clock: Arc<dyn Clock>,
    check_user_named: bool,
}

impl Default for TravelTools {
    fn default() -> Self {
        Self::new()
    }
}

impl TravelTools {
    /// Tools that take today's date from the system clock.
    pub fn new() -> Self {
        Self::with_clock(SystemClock)
    }

    /// Tools for which today is always `today`: reproducible tests and demos.
    pub fn with_today(today: NaiveDate) -> Self {
        Self::with_clock(FixedClock(today))
    }

    /// Tools with a custom clock.
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        Self {
            clock: Arc::new(clock),
            check_user_named: true,
        }
    }

    /// Whether the tools refuse a city, a flight date or an amount to
    /// convert the user never mentioned in the conversation (default on): a
    /// small model fills a missing city, date or amount with a made-up one
    /// (often its tool's example), and the refusal tells it to
    /// ask the user instead. Needs the conversation in the
    /// [`ToolContext`](agent_core::ToolContext), which the runner provides.
    #[must_use]
    pub fn checking_user_named(mut self, on: bool) -> Self {
        self.check_user_named = on;
        self
    }

    /// Today's date by this clock.
    pub fn today(&self) -> NaiveDate {
        self.clock.today()
    }

    /// `get_weather`: today's weather at a place.
    pub fn weather(&self, args: &WeatherArgs) -> Result<Weather, ToolError> {
        weather(args, self.today(), None)
    }

    /// `get_flight_prices`: one-way economy offers, cheapest first.
    pub fn flight_prices(&self, args: &FlightArgs) -> Result<FlightPrices, ToolError> {
        flight_prices(args, self.today(), None)
    }

    /// `get_currency_exchange`: converts an amount at fixed demo rates.
    pub fn exchange(&self, args: &ExchangeArgs) -> Result<Exchange, ToolError> {
        exchange(args, None)
    }

    /// `divide_by_secret_number`: always fails, because the secret is 0.
    /// It exists to show how a tool error reaches the model.
    pub fn divide_by_secret_number(&self, args: &DivideArgs) -> Result<Quotient, ToolError> {
        if SECRET_NUMBER == 0.0 {
            return Err(ToolError::failed(format!(
                "division by zero: the secret number is 0, so {} cannot be divided by it, and this tool can \
                 never succeed (do not retry it)",
                args.number
            )));
        }
        Ok(Quotient {
            number: args.number,
            result: args.number / SECRET_NUMBER,
        })
    }

    /// The `travel` provider: `get_weather`, `get_flight_prices`,
    /// `get_currency_exchange` and `divide_by_secret_number`. The first
    /// three are declared idempotent for [`RESULT_TTL`]: the demo data is a
    /// function of the arguments and the day. (A cache shared between runs
    /// would also skip the check against what the user said, which only
    /// refuses; the runner's default per-run cache does not.)
    pub fn tool_set(&self) -> ToolSet {
        let codes: Vec<&str> = RATES.iter().map(|(code, _, _)| *code).collect();
        ToolSet::new(
            PROVIDER_NAME,
            "Travel assistant: current weather, flight prices and currency exchange (simulated demo data).",
        )
        .tool(
            self.tool(
                "get_weather",
                "Gets the current weather for one city: temperature, feels-like temperature, conditions, \
                 humidity and wind. location must be a real city the user named, by name or IATA airport code, \
                 e.g. \"Tokyo\", \"New York\", \"Paris, France\" or \"LHR\"; a country gives its capital. \
                 If the user has not said which city, do not call this tool: ask them. One call per city. \
                 Example: {\"location\": \"Tokyo\", \"units\": \"celsius\"}."
                    .to_owned(),
                |tools, args: WeatherArgs, context| weather(&args, tools.today(), tools.said(context).as_ref()),
            ),
        )
        .tool(
            self.tool(
                "get_flight_prices",
                "Finds one-way economy flights between two cities on a date, with prices in USD, \
                 cheapest first, plus the distance. Cities are real cities the user named, by name or IATA \
                 code (\"New York\", \"NYC\", \"JFK\"). The date may be YYYY-MM-DD or what the user said: \
                 \"today\", \"tomorrow\", \"June 15\", \"next Friday\", \"in 2 weeks\", \"next month\"; the \
                 result gives it as YYYY-MM-DD. If the user has not said a city or the date, ask them instead of \
                 calling. Example: {\"origin\": \"NYC\", \"destination\": \"London\", \"date\": \"June 15\"}."
                    .to_owned(),
                |tools, args: FlightArgs, context| flight_prices(&args, tools.today(), tools.said(context).as_ref()),
            ),
        )
        .tool(self.tool(
            "get_currency_exchange",
            format!(
                "Converts an amount of money from one currency to another and returns the exchange \
                 rate and the converted amount rounded to 2 decimals. Currencies are ISO 4217 codes: \
                 {}. Example: {{\"from\": \"USD\", \"to\": \"EUR\", \"amount\": 100}}.",
                codes.join(", ")
            ),
            |tools, args: ExchangeArgs, context| exchange(&args, tools.said(context).as_ref()),
        ))
        .tool(
            self.tool(
                "divide_by_secret_number",
                "Divides the given number by a secret number known only to this tool and returns the \
             quotient. Only for a request to divide by the secret number: it converts no currency \
             and does no other arithmetic. Example: {\"number\": 42}."
                    .to_owned(),
                |tools, args: DivideArgs, _| tools.divide_by_secret_number(&args),
            ),
        )
        .cache_results("get_weather", RESULT_TTL)
        .cache_results("get_flight_prices", RESULT_TTL)
        .cache_results("get_currency_exchange", RESULT_TTL)
    }

    /// What the user said, when these tools check arguments against it
    /// (see [`checking_user_named`](Self::checking_user_named)).
    fn said(&self, context: &ToolContext) -> Option<UserWords> {
        if self.check_user_named {
            UserWords::of(context)
        } else {
            None
        }
    }

    /// A typed tool running `run` synchronously on a clone of these tools.
    fn tool<A, T, F>(&self, name: &str, description: String, run: F) -> TypedTool
    where
        A: serde::de::DeserializeOwned + JsonSchema + Send + 'static,
        T: Serialize + Send + 'static,
        F: Fn(&Self, A, &ToolContext) -> Result<T, ToolError> + Send + Sync + 'static,
    {
        let tools = self.clone();
        TypedTool::new(name, description, move |args: A, context: ToolContext| {
            let outcome = run(&tools, args, &context).map(Json);
            async move { outcome }
        })
    }
}
