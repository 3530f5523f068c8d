//! The `travel` provider through a real registry, with a fixed "today".

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::sync::Arc;

use agent_core::{ToolContext, ToolRegistry};
use agent_tools::ToolBox;
use agent_tools_travel::{Clock, NaiveDate, SystemClock, TravelTools};
use serde_json::{Value, json};

fn date(text: &str) -> NaiveDate {
    text.parse().unwrap()
}

fn registry_on(today: &str) -> ToolBox {
    let registry = ToolBox::new();
    registry
        .register(Arc::new(TravelTools::with_today(date(today)).tool_set()), true)
        .unwrap();
    registry
}

async fn call(registry: &ToolBox, tool: &str, arguments: Value) -> Result<Value, String> {
    let run = registry.execute(tool, &arguments, &ToolContext::new()).await;
    match run.outcome {
        Ok(output) => Ok(serde_json::from_str(&output.to_content()).unwrap()),
        Err(error) => Err(error.to_string()),
    }
}

fn number(value: &Value) -> f64 {
    value.as_f64().unwrap()
}

#[test]
fn provider_has_four_tools_with_clear_schemas() {
    let registry = registry_on("2030-06-01");
    assert_eq!(registry.provider_names(), ["travel"]);
    let definitions = registry.definitions();
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "get_weather",
            "get_flight_prices",
            "get_currency_exchange",
            "divide_by_secret_number"
        ]
    );
    let weather = &definitions[0].input_schema;
    // Nothing is required: what the user has not said is left out, and the
    // tool says what to ask.
    assert_eq!(weather["required"], serde_json::Value::Null);
    assert_eq!(weather["properties"]["units"]["enum"], json!(["celsius", "fahrenheit"]));
    assert_eq!(weather["properties"]["units"]["default"], json!("celsius"));
    assert_eq!(definitions[1].input_schema["required"], serde_json::Value::Null);
    assert!(definitions[2].description.contains("USD, EUR, GBP, JPY"));
    assert!(registry.invalid_schemas().is_empty());
}

#[test]
fn the_lookups_are_idempotent_and_the_failing_divider_is_not() {
    let registry = registry_on("2026-11-25");
    for tool in ["get_weather", "get_flight_prices", "get_currency_exchange"] {
        let policy = registry.cache_policy(tool).map(|policy| policy.ttl);
        assert_eq!(policy, Some(agent_tools_travel::RESULT_TTL), "{tool}");
    }
    assert!(registry.cache_policy("divide_by_secret_number").is_none());
}

#[tokio::test]
async fn weather_is_plausible_for_the_place_and_season() {
    let june = registry_on("2030-06-20");
    let tokyo = call(&june, "get_weather", json!({"location": "Tokyo"})).await.unwrap();
    assert_eq!(tokyo["location"], "Tokyo, Japan");
    assert_eq!(tokyo["date"], "2030-06-20");
    assert_eq!(tokyo["units"], "celsius");
    assert_eq!(tokyo["wind_speed_unit"], "km/h");
    let temperature = number(&tokyo["temperature"]);
    assert!((17.0..32.0).contains(&temperature), "{temperature}");
    let humidity = number(&tokyo["humidity_percent"]);
    assert!((10.0..=100.0).contains(&humidity));
    assert!(!tokyo["conditions"].as_str().unwrap().is_empty());
    assert!(["N", "NE", "E", "SE", "S", "SW", "W", "NW"].contains(&tokyo["wind_direction"].as_str().unwrap()));

    // Seasons: Sydney is warmer in January than in July, Stockholm the reverse.
    let january = registry_on("2030-01-20");
    let july = registry_on("2030-07-20");
    let temperature_at = |weather: Value| number(&weather["temperature"]);
    let sydney_january = temperature_at(
        call(&january, "get_weather", json!({"location": "Sydney"}))
            .await
            .unwrap(),
    );
    let sydney_july = temperature_at(call(&july, "get_weather", json!({"location": "Sydney"})).await.unwrap());
    assert!(sydney_january > sydney_july, "{sydney_january} vs {sydney_july}");
    let stockholm_january = temperature_at(
        call(&january, "get_weather", json!({"location": "Stockholm"}))
            .await
            .unwrap(),
    );
    let stockholm_july = temperature_at(call(&july, "get_weather", json!({"location": "ARN"})).await.unwrap());
    assert!(stockholm_january < 5.0 && stockholm_july > 12.0);
    // Deserts stay dry.
    for day in 1..=28 {
        let registry = registry_on(&format!("2030-02-{day:02}"));
        let dubai = call(&registry, "get_weather", json!({"location": "Dubai"}))
            .await
            .unwrap();
        let conditions = dubai["conditions"].as_str().unwrap().to_owned();
        assert!(!conditions.contains("snow"), "{conditions}");
    }
}

#[tokio::test]
async fn fahrenheit_matches_celsius() {
    let registry = registry_on("2030-03-10");
    let celsius = call(
        &registry,
        "get_weather",
        json!({"location": "New York", "units": "celsius"}),
    )
    .await
    .unwrap();
    let fahrenheit = call(
        &registry,
        "get_weather",
        json!({"location": "NYC", "units": "fahrenheit"}),
    )
    .await
    .unwrap();
    let expected = number(&celsius["temperature"]) * 9.0 / 5.0 + 32.0;
    assert!((number(&fahrenheit["temperature"]) - expected).abs() <= 0.2);
    assert_eq!(fahrenheit["units"], "fahrenheit");
    assert_eq!(fahrenheit["wind_speed_unit"], "mph");
    assert_eq!(celsius["conditions"], fahrenheit["conditions"]);
    let error = call(&registry, "get_weather", json!({"location": "Oslo", "units": "kelvin"}))
        .await
        .unwrap_err();
    assert!(error.contains(r#"expected one of ["celsius","fahrenheit"]"#), "{error}");
}

#[tokio::test]
async fn weather_is_deterministic() {
    let first = registry_on("2030-06-01");
    let second = registry_on("2030-06-01");
    for location in ["Tokyo", "Paris", "Oslo", "Canberra", "Australia"] {
        let a = call(&first, "get_weather", json!({"location": location}))
            .await
            .unwrap();
        let b = call(&second, "get_weather", json!({"location": location}))
            .await
            .unwrap();
        assert_eq!(a, b);
    }
    // Every way of naming a city gives the same weather.
    let by_name = call(&first, "get_weather", json!({"location": "New York"}))
        .await
        .unwrap();
    for alias in ["NYC", "new york city", "JFK", "New York, NY"] {
        assert_eq!(
            call(&first, "get_weather", json!({"location": alias})).await.unwrap(),
            by_name
        );
    }
}

#[tokio::test]
async fn weather_values_are_pinned() {
    // The hash and formulas are part of the demo's contract: the same
    // question gives the same answer across releases and platforms.
    let registry = registry_on("2030-06-01");
    let tokyo = call(&registry, "get_weather", json!({"location": "Tokyo"}))
        .await
        .unwrap();
    assert_eq!(
        tokyo,
        json!({"summary": "Tokyo, Japan: 24.7 °C (feels like 24.7 °C), sunny",
               "location": "Tokyo, Japan", "date": "2030-06-01", "temperature": 24.7, "feels_like": 24.7,
               "units": "celsius", "conditions": "sunny", "humidity_percent": 65, "wind_speed": 17,
               "wind_speed_unit": "km/h", "wind_direction": "W"})
    );
    let flights = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "NYC", "destination": "LHR", "date": "2030-07-15"}),
    )
    .await
    .unwrap();
    assert_eq!(
        flights["flights"][0],
        json!({"airline": "Aurora Airways", "flight_number": "AR 267", "departure_time": "08:35",
               "duration": "9h 50m", "duration_minutes": 590, "stops": 1, "cabin": "economy", "price_usd": 489})
    );
}

#[tokio::test]
async fn unknown_placeholder_and_empty_locations_are_refused() {
    let registry = registry_on("2030-06-01");
    let weather = |location: &str| call(&registry, "get_weather", json!({"location": location}));
    // No made-up weather for a place the tools do not know.
    let error = weather("  Springfield ").await.unwrap_err();
    assert!(
        error.starts_with("location \"Springfield\" is not a place these tools know."),
        "{error}"
    );
    assert!(error.contains("ask the user which city they mean"), "{error}");
    // A misspelling gets close matches.
    let error = weather("Pari").await.unwrap_err();
    assert!(error.contains("Did you mean Paris (France)?"), "{error}");
    // The placeholder a small model copied from the schema.
    let error = weather("Your favorite city name or IATA airport code")
        .await
        .unwrap_err();
    assert!(error.contains("looks like a placeholder, not a place"), "{error}");
    assert!(error.ends_with("for example: Which city do you mean?"), "{error}");
    let error = weather(" ").await.unwrap_err();
    assert!(error.starts_with("the user has not said which city"), "{error}");
}

#[tokio::test]
async fn what_the_user_has_not_said_is_asked_for_not_guessed() {
    let registry = registry_on("2030-06-01");
    let error = call(&registry, "get_weather", json!({})).await.unwrap_err();
    assert_eq!(
        error,
        "the user has not said which city. Do not guess and do not call the tool again yet: ask the user which \
         city in one short question."
    );
    let error = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "NYC", "destination": "Paris"}),
    )
    .await
    .unwrap_err();
    assert!(
        error.starts_with("the user has not said when the flight is."),
        "{error}"
    );
    let error = call(
        &registry,
        "get_flight_prices",
        json!({"destination": "Paris", "date": ""}),
    )
    .await
    .unwrap_err();
    assert!(
        error.starts_with("the user has not said where the flight leaves from and when the flight is."),
        "{error}"
    );
}

#[tokio::test]
async fn countries_stand_for_their_capital_and_regions_ask_for_a_city() {
    let registry = registry_on("2030-06-01");
    let weather = |location: &str| call(&registry, "get_weather", json!({"location": location}));
    // The demo's request: "Australia, Belarus, Caribbean, Denmark, Egypt, France, Greece and Hungary".
    for (country, city) in [
        ("Australia", "Canberra, Australia"),
        ("Belarus", "Minsk, Belarus"),
        ("Denmark", "Copenhagen, Denmark"),
        ("Egypt", "Cairo, Egypt"),
        ("France", "Paris, France"),
        ("Greece", "Athens, Greece"),
        ("Hungary", "Budapest, Hungary"),
    ] {
        let result = weather(country).await.unwrap();
        assert_eq!(result["location"], city, "{country}");
        let note = result["note"].as_str().unwrap();
        assert!(
            note.starts_with(&format!("{country} is a country; this is the weather in ")),
            "{note}"
        );
    }
    let australia = weather("Australia").await.unwrap();
    assert!(
        australia["note"]
            .as_str()
            .unwrap()
            .starts_with("Australia is a country; this is the weather in Canberra, its capital"),
        "{australia}"
    );
    // The same city by name has no note.
    assert!(weather("Canberra").await.unwrap().get("note").is_none());
    let error = weather("Caribbean").await.unwrap_err();
    assert!(
        error.starts_with("location \"Caribbean\" is a region, not a city"),
        "{error}"
    );
    assert!(
        error.contains("ask the user which city in the Caribbean they mean"),
        "{error}"
    );

    let flights = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "London", "destination": "Greece", "date": "2030-07-01"}),
    )
    .await
    .unwrap();
    assert_eq!(flights["destination"]["airport"], "ATH");
    assert!(
        flights["destination"]["note"]
            .as_str()
            .unwrap()
            .starts_with("Greece is a country; flights go to Athens, its capital"),
        "{flights}"
    );
    assert!(flights["origin"].get("note").is_none());
}

#[tokio::test]
async fn invented_arguments_are_refused_before_the_tool_runs() {
    let registry = registry_on("2030-06-01");
    // Each call is valid apart from the invented argument. The message is
    // the schema validator's (the tool's own decoding words it
    // differently), and divide_by_secret_number, which always fails when
    // it runs, does not say "division by zero": no tool ran.
    let cases = [
        ("get_weather", json!({"location": "Tokyo", "airport": "HND"}), "airport"),
        (
            "get_flight_prices",
            json!({"origin": "NYC", "destination": "LHR", "date": "2030-07-01", "class": "business"}),
            "class",
        ),
        (
            "get_currency_exchange",
            json!({"from": "USD", "to": "EUR", "amount": 1, "date": "today"}),
            "date",
        ),
        ("divide_by_secret_number", json!({"number": 42, "secret": 7}), "secret"),
    ];
    agent_testing::assert_invented_arguments_refused(&registry, &cases).await;
}

#[tokio::test]
async fn flight_prices_scale_with_distance() {
    let registry = registry_on("2030-06-01");
    let flights = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "nyc", "destination": "London", "date": "2030-07-15"}),
    )
    .await
    .unwrap();
    assert_eq!(
        flights["origin"],
        json!({"query": "nyc", "city": "New York, United States", "airport": "JFK"})
    );
    assert_eq!(flights["destination"]["airport"], "LHR");
    assert_eq!(flights["date"], "2030-07-15");
    assert_eq!(flights["currency"], "USD");
    let distance = number(&flights["distance_km"]);
    assert!((5500.0..5650.0).contains(&distance), "{distance}");
    let offers = flights["flights"].as_array().unwrap();
    assert!((3..=5).contains(&offers.len()));
    let prices: Vec<f64> = offers.iter().map(|offer| number(&offer["price_usd"])).collect();
    assert!(prices.windows(2).all(|pair| pair[0] <= pair[1]), "{prices:?}");
    assert_eq!(number(&flights["cheapest_price_usd"]), prices[0]);
    let summary = flights["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!(
            "Cheapest flight from New York to London on Monday 2030-07-15: ${} (",
            prices[0]
        )),
        "{summary}"
    );
    assert!(
        prices.iter().all(|&price| (250.0..1200.0).contains(&price)),
        "{prices:?}"
    );
    for offer in offers {
        assert_eq!(offer["cabin"], "economy");
        let minutes = number(&offer["duration_minutes"]);
        assert!((380.0..800.0).contains(&minutes), "{offer}");
        assert!(offer["departure_time"].as_str().unwrap().len() == 5);
    }

    let short = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "New York", "destination": "BOS", "date": "2030-07-15"}),
    )
    .await
    .unwrap();
    let long = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "JFK", "destination": "Sydney", "date": "2030-07-15"}),
    )
    .await
    .unwrap();
    assert!(number(&short["cheapest_price_usd"]) < 200.0, "{short}");
    assert!(number(&long["cheapest_price_usd"]) > number(&flights["cheapest_price_usd"]));
}

#[tokio::test]
async fn flight_prices_are_deterministic_and_refuse_unknown_places() {
    let registry = registry_on("2030-06-01");
    let arguments = json!({"origin": "Oslo", "destination": "Canberra", "date": "2030-06-01"});
    let first = call(&registry, "get_flight_prices", arguments.clone()).await.unwrap();
    let second = call(&registry_on("2030-06-01"), "get_flight_prices", arguments)
        .await
        .unwrap();
    assert_eq!(first, second);
    assert_eq!(first["origin"]["airport"], "OSL");
    assert!(number(&first["cheapest_price_usd"]) > 0.0);
    let error = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "Springfield", "destination": "Shelbyville", "date": "2030-06-01"}),
    )
    .await
    .unwrap_err();
    assert!(
        error.starts_with("origin \"Springfield\" is not a place these tools know"),
        "{error}"
    );
    let error = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "NYC", "destination": "Londn", "date": "2030-06-01"}),
    )
    .await
    .unwrap_err();
    assert!(error.contains("Did you mean London (United Kingdom)?"), "{error}");
}

#[tokio::test]
async fn flight_dates_accept_what_users_say_and_never_the_past() {
    // 2030-06-01 is a Saturday.
    let registry = registry_on("2030-06-01");
    let flight = |date: &str| json!({"origin": "Paris", "destination": "Rome", "date": date});
    for (said, iso, weekday) in [
        ("June 15", "2030-06-15", "Saturday"),
        ("15 June", "2030-06-15", "Saturday"),
        ("tomorrow", "2030-06-02", "Sunday"),
        ("next Friday", "2030-06-07", "Friday"),
        ("in 2 weeks", "2030-06-15", "Saturday"),
        ("next month", "2030-07-01", "Monday"),
        ("May 3", "2031-05-03", "Saturday"),
    ] {
        let result = call(&registry, "get_flight_prices", flight(said)).await.unwrap();
        assert_eq!(result["date"], iso, "{said}");
        assert_eq!(result["weekday"], weekday, "{said}");
        assert_eq!(result["date_note"], format!("{said:?} is {weekday} {iso}"), "{said}");
    }
    let iso = call(&registry, "get_flight_prices", flight("2030-06-01"))
        .await
        .unwrap();
    assert_eq!((iso["date"].as_str(), iso.get("date_note")), (Some("2030-06-01"), None));
    // A relative date gives the same offers as the ISO date it stands for.
    let relative = call(&registry, "get_flight_prices", flight("June 15")).await.unwrap();
    let absolute = call(&registry, "get_flight_prices", flight("2030-06-15"))
        .await
        .unwrap();
    assert_eq!(relative["flights"], absolute["flights"]);

    let error = call(&registry, "get_flight_prices", flight("2030-05-31"))
        .await
        .unwrap_err();
    assert!(
        error.starts_with("the date 2030-05-31 is in the past; today is 2030-06-01"),
        "{error}"
    );
    let error = call(&registry, "get_flight_prices", flight("15/06/2030"))
        .await
        .unwrap_err();
    assert!(error.contains("ambiguous") && error.contains("YYYY-MM-DD"), "{error}");
    let error = call(&registry, "get_flight_prices", flight("sometime soon"))
        .await
        .unwrap_err();
    assert!(
        error.starts_with("could not read the date \"sometime soon\""),
        "{error}"
    );
    assert!(
        error.contains("today is Saturday, 2030-06-01") && error.contains("next Monday"),
        "{error}"
    );
    let error = call(&registry, "get_flight_prices", flight("2030-13-01"))
        .await
        .unwrap_err();
    assert!(error.contains("not a valid calendar date"), "{error}");
    let error = call(
        &registry,
        "get_flight_prices",
        json!({"origin": "NYC", "destination": "new york", "date": "2030-06-02"}),
    )
    .await
    .unwrap_err();
    assert!(error.starts_with("origin and destination are both New York"), "{error}");
}

#[tokio::test]
async fn currency_exchange_converts_at_fixed_rates() {
    let registry = registry_on("2030-06-01");
    let result = call(
        &registry,
        "get_currency_exchange",
        json!({"from": "USD", "to": "EUR", "amount": 100}),
    )
    .await
    .unwrap();
    assert_eq!(
        result,
        json!({"summary": "100 USD = 92.00 EUR (rate 0.92)", "from": "USD", "to": "EUR", "amount": 100.0,
               "rate": 0.92, "converted_amount": 92.0, "rate_source": "fixed demo rates"})
    );
    let result = call(
        &registry,
        "get_currency_exchange",
        json!({"from": " jpy ", "to": "gbp", "amount": 10_000}),
    )
    .await
    .unwrap();
    assert_eq!(result["from"], "JPY");
    assert_eq!(result["rate"], 0.005_215);
    assert_eq!(result["converted_amount"], 52.15);
    let same = call(
        &registry,
        "get_currency_exchange",
        json!({"from": "CHF", "to": "CHF", "amount": 12.345}),
    )
    .await
    .unwrap();
    assert_eq!(
        (same["rate"].clone(), same["converted_amount"].clone()),
        (json!(1.0), json!(12.35))
    );
}

#[tokio::test]
async fn currency_errors_list_what_is_valid() {
    let registry = registry_on("2030-06-01");
    let error = call(
        &registry,
        "get_currency_exchange",
        json!({"from": "USD", "to": "Euros", "amount": 5}),
    )
    .await
    .unwrap_err();
    assert!(error.starts_with("unknown currency code \"Euros\" for `to`; use one of the ISO 4217 codes USD, EUR"));
    let error = call(
        &registry,
        "get_currency_exchange",
        json!({"from": "USD", "to": "EUR", "amount": -5}),
    )
    .await
    .unwrap_err();
    assert!(error.starts_with("amount must be zero or a positive number"), "{error}");
}

#[tokio::test]
async fn the_secret_number_is_zero() {
    let registry = registry_on("2030-06-01");
    for number in [42.0, 0.0, -1.5] {
        let error = call(&registry, "divide_by_secret_number", json!({"number": number}))
            .await
            .unwrap_err();
        assert!(error.starts_with("division by zero: the secret number is 0"), "{error}");
    }
}

#[test]
fn default_clock_is_the_system_date() {
    let before = chrono::Local::now().date_naive();
    let today = TravelTools::new().today();
    let after = chrono::Local::now().date_naive();
    assert!(before <= today && today <= after);
    let system = SystemClock.today();
    assert!(before <= system && system <= chrono::Local::now().date_naive());
}

async fn execute(registry: &ToolBox, tool: &str, arguments: Value, context: &ToolContext) -> Result<(), String> {
    registry
        .execute(tool, &arguments, context)
        .await
        .outcome
        .map(drop)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn places_and_dates_the_user_never_mentioned_are_refused() {
    let context =
        ToolContext::new().with_user_text("What's the weather in my favorite city? And a flight from NYC to Paris?");
    let run = |registry, tool, arguments| execute(registry, tool, arguments, &context);
    let registry = registry_on("2030-06-01");
    let error = run(&registry, "get_weather", json!({"location": "Tokyo"}))
        .await
        .unwrap_err();
    assert!(
        error.starts_with("the user has not named \"Tokyo\" (the location)"),
        "{error}"
    );
    assert!(run(&registry, "get_weather", json!({"location": "JFK"})).await.is_ok());
    let flight = json!({"origin": "New York", "destination": "Paris", "date": "June 15"});
    let error = run(&registry, "get_flight_prices", flight.clone()).await.unwrap_err();
    assert!(error.starts_with("the user has not said when the flight is"), "{error}");
    let exchange = json!({"from": "USD", "to": "EUR", "amount": 100});
    let error = run(&registry, "get_currency_exchange", exchange.clone())
        .await
        .unwrap_err();
    assert!(
        error.starts_with("the user has not said how much to convert"),
        "{error}"
    );

    // Switched off, the same calls run.
    let unchecked = ToolBox::new();
    unchecked
        .register(
            Arc::new(
                TravelTools::with_today(date("2030-06-01"))
                    .checking_user_named(false)
                    .tool_set(),
            ),
            true,
        )
        .unwrap();
    assert!(
        run(&unchecked, "get_weather", json!({"location": "Tokyo"}))
            .await
            .is_ok()
    );
    assert!(run(&unchecked, "get_flight_prices", flight).await.is_ok());
    assert!(run(&unchecked, "get_currency_exchange", exchange).await.is_ok());
}
