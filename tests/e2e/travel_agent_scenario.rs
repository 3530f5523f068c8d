//! The travel tools under the real agent loop, with a scripted model.

use std::sync::Arc;

use agent_core::RunEnd;
use agent_runner::Agent;
use agent_testing::{ScriptedClient, response};
use agent_tools_travel::{NaiveDate, TravelTools};
use serde_json::{Value, json};

#[tokio::test]
async fn whats_the_weather_in_tokyo_makes_one_get_weather_call_recorded_with_its_result() {
    let registry = agent_tools::ToolBox::new();
    let today = NaiveDate::from_ymd_opt(2026, 6, 1).expect("date");
    registry
        .register(Arc::new(TravelTools::with_today(today).tool_set()), true)
        .expect("register");
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("get_weather", json!({"location": "Tokyo"}))]))
        .respond(response::text("It is mild in Tokyo today."));
    let agent = Agent::builder(Arc::new(client.clone()))
        .name("travel-assistant")
        .tools(Arc::new(registry))
        .build();
    let result = agent.run("What's the weather in Tokyo?").await.expect("run");

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.tool_calls.len(), 1);
    let call = &result.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert!(!call.is_error, "{}", call.result);
    let weather: Value = serde_json::from_str(&call.result).expect("structured JSON result");
    assert_eq!(
        weather["location"].as_str().map(|l| l.contains("Tokyo")),
        Some(true),
        "{weather}"
    );
    // The model saw the same result.
    let sent = &client.requests()[1].messages;
    assert!(
        sent.iter()
            .filter_map(agent_core::Message::as_tool_result)
            .any(|r| r.content == call.result)
    );
    // And every travel tool was offered to it.
    let offered: Vec<_> = client.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(
        offered,
        [
            "get_weather",
            "get_flight_prices",
            "get_currency_exchange",
            "divide_by_secret_number"
        ]
    );
}
