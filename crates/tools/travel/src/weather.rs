//! `get_weather`: plausible current weather from a city's rough climate,
//! the season of today's date, and a stable hash of the place and date.

use agent_core::ToolError;
use agent_tools::UserWords;
use chrono::{Datelike, NaiveDate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dice::Dice;
use crate::grounding::check_place;
use crate::missing::{ask_user, given};
use crate::places::Place;

/// Temperature units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Units {
    /// Degrees Celsius; wind in km/h.
    #[default]
    Celsius,
    /// Degrees Fahrenheit; wind in mph.
    Fahrenheit,
}

/// The schema of [`Units`] as a plain `enum` of strings.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum UnitsSchema {
    Celsius,
    Fahrenheit,
}

impl JsonSchema for Units {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Units".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        UnitsSchema::json_schema(generator)
    }
}

/// Arguments of `get_weather`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeatherArgs {
    /// One real city the user named, as a name or an IATA code, e.g. "Tokyo", "New York",
    /// "Paris, France" or "LHR". A country gives its capital. Never a placeholder: if the user has not
    /// said which city, leave it out (or ask them instead of calling the tool).
    #[serde(default)]
    pub location: Option<String>,
    /// "celsius" (the default) or "fahrenheit". Also sets the wind speed unit (km/h or mph).
    #[serde(default)]
    pub units: Units,
}

/// What `get_weather` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Weather {
    /// The weather in one sentence, first, so even a small model answers
    /// with the right figures: "Tokyo, Japan: 12.3 °C (feels like 11.0 °C),
    /// mostly cloudy".
    pub summary: String,
    /// The place, resolved: "Tokyo, Japan".
    pub location: String,
    /// The date the weather is for (today).
    pub date: NaiveDate,
    /// Air temperature, one decimal.
    pub temperature: f64,
    /// Apparent temperature, one decimal.
    pub feels_like: f64,
    /// `celsius` or `fahrenheit`.
    pub units: Units,
    /// Sky and precipitation, e.g. "partly cloudy", "light rain".
    pub conditions: String,
    /// Relative humidity, %.
    pub humidity_percent: u32,
    /// Wind speed in `wind_speed_unit`.
    pub wind_speed: u32,
    /// `km/h` or `mph`.
    pub wind_speed_unit: String,
    /// Where the wind comes from: N, NE, E, ...
    pub wind_direction: String,
    /// When `location` named a country: which city the weather is for,
    /// e.g. "Australia is a country; this is the weather in Canberra, its
    /// capital. ...". Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The weather for a place on a date; with `said`, a place the user never
/// named is refused.
pub(crate) fn weather(args: &WeatherArgs, today: NaiveDate, said: Option<&UserWords>) -> Result<Weather, ToolError> {
    let mut missing = Vec::new();
    let Some(location) = given(args.location.as_deref(), "which city", &mut missing) else {
        return Err(ask_user(&missing));
    };
    let place = Place::resolve(location, "location")?;
    check_place(said, location, &place, "location")?;
    let (mean, swing, humidity, wetness, southern) = place.climate();
    let date_key = today.to_string();
    let mut dice = Dice::new(&["weather", place.key(), &date_key]);

    // Warmest around 20 July in the north and 20 January in the south.
    let warmest_day = if southern { 20.0 } else { 201.0 };
    let day = f64::from(today.ordinal());
    let season = (2.0 * std::f64::consts::PI * (day - warmest_day) / 365.25).cos();
    let celsius = mean + swing * season + dice.range(-3.0, 3.0);

    let rain_chance = wetness * 0.6;
    let roll = dice.unit();
    let conditions = if roll < rain_chance {
        let wet = if celsius < 1.0 {
            ["light snow", "snow", "sleet"]
        } else if celsius > 24.0 && wetness > 0.3 {
            ["light rain", "rain showers", "thunderstorms"]
        } else {
            ["light rain", "rain", "drizzle"]
        };
        *dice.pick(&wet)
    } else {
        *dice.pick(&[
            "sunny",
            "clear",
            "partly cloudy",
            "partly cloudy",
            "mostly cloudy",
            "overcast",
        ])
    };
    let wet = roll < rain_chance;
    let humidity = (humidity + dice.range(-10.0, 10.0) + if wet { 15.0 } else { 0.0 }).clamp(10.0, 100.0);
    let wind_kmh = dice.range(3.0, 28.0);
    let direction = *dice.pick(&["N", "NE", "E", "SE", "S", "SW", "W", "NW"]);

    // Humid heat feels hotter; wind chill makes cold feel colder.
    let feels_like = if celsius >= 26.0 {
        celsius + (humidity - 40.0).max(0.0) * 0.08
    } else if celsius <= 10.0 {
        celsius - wind_kmh * 0.12
    } else {
        celsius
    };

    let (temperature, feels_like, wind_speed, wind_unit) = match args.units {
        Units::Celsius => (celsius, feels_like, wind_kmh, "km/h"),
        Units::Fahrenheit => (
            to_fahrenheit(celsius),
            to_fahrenheit(feels_like),
            wind_kmh / 1.609_344,
            "mph",
        ),
    };
    let degrees = match args.units {
        Units::Celsius => "°C",
        Units::Fahrenheit => "°F",
    };
    Ok(Weather {
        summary: format!(
            "{}: {:.1} {degrees} (feels like {:.1} {degrees}), {conditions}",
            place.display_name(),
            one_decimal(temperature),
            one_decimal(feels_like)
        ),
        location: place.display_name(),
        date: today,
        temperature: one_decimal(temperature),
        feels_like: one_decimal(feels_like),
        units: args.units,
        conditions: conditions.to_owned(),
        humidity_percent: humidity.round() as u32,
        wind_speed: wind_speed.round() as u32,
        wind_speed_unit: wind_unit.to_owned(),
        wind_direction: direction.to_owned(),
        note: place.note("this is the weather in"),
    })
}

fn to_fahrenheit(celsius: f64) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

fn one_decimal(value: f64) -> f64 {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded == 0.0 { 0.0 } else { rounded }
}
